#include "collector/profile/environment_facts.h"

#include <mutex>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"
#include "ringfile/format.h"

namespace ringprof {
namespace collector {
namespace {

// Printable ASCII, at most `limit` bytes; anything else becomes '?'.
std::string Printable(absl::string_view text, size_t limit) {
  std::string out(text.substr(0, limit));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

struct Registry {
  std::mutex mu;
  std::set<std::tuple<std::string, uint16_t, std::string>> seen;
  std::vector<std::string> lines;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

Counter& FactCounter(uint16_t kind) {
  const ringfile::EnvironmentFactDescription& what =
      ringfile::DescribeEnvironmentFact(kind);
  const std::string name =
      kind <= ringfile::kMaxEnvironmentFactKind
          ? what.name
          : absl::StrCat("kind_", kind);  // a newer emitter's
  return Metrics::Get().GetCounter(
      absl::StrCat("ringprof_environment_facts_total{fact=\"", name, "\"}"),
      "Processes whose emitter recorded this environment fact (ring "
      "EnvironmentFact records: libc, no_dl_find_object, no_libgcc, ...).");
}

}  // namespace

void ReportEnvironmentFact(absl::string_view service, uint32_t pid,
                           uint16_t kind, absl::string_view detail) {
  FactCounter(kind).Add(1);
  const std::string safe_service = Printable(service, 64);
  const std::string safe_detail =
      Printable(detail, ringfile::kMaxEnvironmentFactDetailSize);
  const ringfile::EnvironmentFactDescription& what =
      ringfile::DescribeEnvironmentFact(kind);
  std::string line = absl::StrCat(safe_service, ": ",
                                  kind <= ringfile::kMaxEnvironmentFactKind
                                      ? std::string(what.meaning)
                                      : absl::StrCat("environment fact ", kind),
                                  safe_detail.empty() ? "" : ": ", safe_detail);
  Registry& registry = GetRegistry();
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    if (registry.seen.size() >= kMaxKeptFacts) return;
    if (!registry.seen.emplace(safe_service, kind, safe_detail).second) return;
    registry.lines.push_back(line);
  }
  LogInfo(absl::StrCat("service ", line, " (pid ", pid, ")"));
}

std::vector<std::string> EnvironmentFactLines() {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  return registry.lines;
}

}  // namespace collector
}  // namespace ringprof
