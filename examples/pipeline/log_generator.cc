#include "examples/pipeline/log_generator.h"

#include <cstdio>

namespace ringprof {
namespace examples {
namespace {

constexpr const char* kMethods[] = {"GET",  "GET", "GET",
                                    "POST", "PUT", "DELETE"};
constexpr const char* kPaths[] = {
    "/",
    "/index.html",
    "/api/v1/orders",
    "/api/v1/orders/{id}",
    "/api/v1/users/{id}/cart",
    "/static/app.js",
    "/static/style.css",
    "/search",
    "/healthz",
    "/metrics",
    "/login",
};
constexpr const char* kAgents[] = {
    "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) Safari/605.1.15",
    "curl/7.88.1",
    "Go-http-client/1.1",
    "kube-probe/1.28",
};
constexpr int kStatuses[] = {200, 200, 200, 200, 201, 204, 301,
                             304, 400, 404, 429, 500, 503};

template <typename T, size_t N>
constexpr int CountOf(const T (&)[N]) {
  return static_cast<int>(N);
}

}  // namespace

int LogGenerator::Uniform(int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng_);
}

std::string LogGenerator::GenerateLogBlock(size_t min_bytes) {
  std::string block;
  block.reserve(min_bytes + 256);
  char line[512];
  while (block.size() < min_bytes) {
    clock_seconds_ += Uniform(0, 2);
    std::string path = kPaths[Uniform(0, CountOf(kPaths) - 1)];
    const size_t id = path.find("{id}");
    if (id != std::string::npos) {
      path.replace(id, 4, std::to_string(Uniform(1, 50000)));
    }
    const int n = std::snprintf(
        line, sizeof(line),
        "10.%d.%d.%d - - [%lld] \"%s %s HTTP/1.1\" %d %d \"-\" \"%s\" "
        "rt=%d.%03d\n",
        Uniform(0, 3), Uniform(0, 255), Uniform(1, 254),
        static_cast<long long>(clock_seconds_),
        kMethods[Uniform(0, CountOf(kMethods) - 1)], path.c_str(),
        kStatuses[Uniform(0, CountOf(kStatuses) - 1)], Uniform(0, 65535),
        kAgents[Uniform(0, CountOf(kAgents) - 1)], Uniform(0, 2),
        Uniform(0, 999));
    block.append(line, static_cast<size_t>(n));
  }
  return block;
}

}  // namespace examples
}  // namespace ringprof
