// server: a multi-threaded request-processing service with its own load.
//
// Client threads generate JSON order requests (RequestGenerator) and hand
// them, in batches, to a bounded queue; worker threads take each request
// through ParseJsonRequest -> PriceOrder -> RenderResponse and account the
// bytes. Runs for --seconds, then drains and prints a one-line summary.
// Exit status 0, or 1 if any request failed to parse (they never should).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "examples/common/bounded_queue.h"
#include "examples/common/flags.h"
#include "examples/server/order.h"
#include "examples/server/request_generator.h"

namespace ringprof {
namespace examples {
namespace {

using Clock = std::chrono::steady_clock;
using Batch = std::vector<std::string>;

struct WorkerTotals {
  uint64_t requests = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t parse_errors = 0;
  uint64_t checksum = 0;  // FNV-1a over every response, order-independent sum
};

uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (const unsigned char c : text) {
    hash = (hash ^ c) * 1099511628211ull;
  }
  return hash;
}

void RunClient(uint64_t seed, int batch_size, Clock::time_point deadline,
               BoundedQueue<Batch>* queue) {
  RequestGenerator generator(seed);
  while (Clock::now() < deadline) {
    Batch batch;
    batch.reserve(batch_size);
    for (int i = 0; i < batch_size; ++i) {
      batch.push_back(generator.GenerateRequestBody());
    }
    if (!queue->Push(std::move(batch))) return;
  }
}

void RunWorker(BoundedQueue<Batch>* queue, WorkerTotals* totals) {
  while (std::optional<Batch> batch = queue->Pop()) {
    for (const std::string& body : *batch) {
      ++totals->requests;
      totals->bytes_in += body.size();
      OrderRequest request;
      std::string error;
      if (!ParseJsonRequest(body, &request, &error)) {
        if (totals->parse_errors++ == 0) {
          std::fprintf(stderr, "server: bad request: %s\n", error.c_str());
        }
        continue;
      }
      const std::string response = RenderResponse(PriceOrder(request));
      totals->bytes_out += response.size();
      totals->checksum += Fnv1a(response);
    }
  }
}

int Main(int argc, char** argv) {
  int seconds = 10;
  int workers = 4;
  int clients = 2;
  int batch_size = 16;
  int exit_code = 0;
  if (!ParseIntFlags(
          argc, argv,
          "A request-processing server with an in-process load generator.",
          {{"seconds", &seconds, 0, 86400, "how long to generate load"},
           {"workers", &workers, 1, 256, "request-handling threads"},
           {"clients", &clients, 1, 256, "load-generating threads"},
           {"batch", &batch_size, 1, 4096, "requests per queue hand-off"}},
          &exit_code)) {
    return exit_code;
  }

  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::seconds(seconds);
  BoundedQueue<Batch> queue(static_cast<size_t>(workers) * 4);
  std::vector<WorkerTotals> totals(workers);
  std::vector<std::thread> worker_threads;
  for (int i = 0; i < workers; ++i) {
    worker_threads.emplace_back(RunWorker, &queue, &totals[i]);
  }
  std::vector<std::thread> client_threads;
  for (int i = 0; i < clients; ++i) {
    client_threads.emplace_back(RunClient, 0x5eed0000u + i, batch_size,
                                deadline, &queue);
  }
  for (std::thread& t : client_threads) t.join();
  queue.Close();
  for (std::thread& t : worker_threads) t.join();

  WorkerTotals sum;
  for (const WorkerTotals& t : totals) {
    sum.requests += t.requests;
    sum.bytes_in += t.bytes_in;
    sum.bytes_out += t.bytes_out;
    sum.parse_errors += t.parse_errors;
    sum.checksum += t.checksum;
  }
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "server: %llu requests in %.1f s (%.0f req/s) with %d workers, "
      "%.1f MB in, %.1f MB out, %llu parse errors, checksum %016llx\n",
      static_cast<unsigned long long>(sum.requests), elapsed,
      elapsed > 0 ? sum.requests / elapsed : 0.0, workers, sum.bytes_in / 1e6,
      sum.bytes_out / 1e6, static_cast<unsigned long long>(sum.parse_errors),
      static_cast<unsigned long long>(sum.checksum));
  return sum.parse_errors == 0 ? 0 : 1;
}

}  // namespace
}  // namespace examples
}  // namespace ringprof

int main(int argc, char** argv) { return ringprof::examples::Main(argc, argv); }
