// pipeline: a log-processing pipeline — generate, tokenize, compress, verify.
//
// One producer thread generates blocks of access-log text (GenerateLogBlock)
// into a bounded queue; worker threads take each block through
// TokenizeBlock (dictionary of token counts), CompressBlock (LZ77) and
// DecompressBlock (round-trip check). Runs for --seconds, then drains and
// prints a summary with the compression ratio and the most common tokens.
// Exit status 0, or 1 if any block failed to round-trip (it never should).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "examples/common/bounded_queue.h"
#include "examples/common/flags.h"
#include "examples/pipeline/log_generator.h"
#include "examples/pipeline/lz_codec.h"
#include "examples/pipeline/tokenizer.h"

namespace ringprof {
namespace examples {
namespace {

using Clock = std::chrono::steady_clock;

struct WorkerTotals {
  uint64_t blocks = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_compressed = 0;
  uint64_t round_trip_failures = 0;
  TokenStats tokens;
};

void RunProducer(size_t block_bytes, Clock::time_point deadline,
                 BoundedQueue<std::string>* queue) {
  LogGenerator generator(0x10c5eed);
  while (Clock::now() < deadline) {
    if (!queue->Push(generator.GenerateLogBlock(block_bytes))) break;
  }
  queue->Close();
}

void RunWorker(BoundedQueue<std::string>* queue, WorkerTotals* totals) {
  std::string round_trip;
  while (std::optional<std::string> block = queue->Pop()) {
    MergeTokenStats(TokenizeBlock(*block), &totals->tokens);
    const std::vector<uint8_t> compressed = CompressBlock(*block);
    if (!DecompressBlock(compressed, &round_trip) || round_trip != *block) {
      ++totals->round_trip_failures;
    }
    ++totals->blocks;
    totals->bytes_in += block->size();
    totals->bytes_compressed += compressed.size();
  }
}

int Main(int argc, char** argv) {
  int seconds = 10;
  int workers = 3;
  int block_kib = 64;
  int exit_code = 0;
  if (!ParseIntFlags(
          argc, argv,
          "A log pipeline: generate, tokenize, LZ-compress and verify blocks.",
          {{"seconds", &seconds, 0, 86400, "how long to feed the pipeline"},
           {"workers", &workers, 1, 256, "tokenize+compress threads"},
           {"block_kib", &block_kib, 1, 16384, "block size in KiB"}},
          &exit_code)) {
    return exit_code;
  }

  const Clock::time_point start = Clock::now();
  BoundedQueue<std::string> queue(static_cast<size_t>(workers) * 2);
  std::vector<WorkerTotals> totals(workers);
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back(RunWorker, &queue, &totals[i]);
  }
  threads.emplace_back(RunProducer, static_cast<size_t>(block_kib) * 1024,
                       start + std::chrono::seconds(seconds), &queue);
  for (std::thread& t : threads) t.join();

  WorkerTotals sum;
  for (const WorkerTotals& t : totals) {
    sum.blocks += t.blocks;
    sum.bytes_in += t.bytes_in;
    sum.bytes_compressed += t.bytes_compressed;
    sum.round_trip_failures += t.round_trip_failures;
    MergeTokenStats(t.tokens, &sum.tokens);
  }
  std::vector<std::pair<uint64_t, std::string>> top;
  for (const auto& [token, count] : sum.tokens.counts) {
    top.emplace_back(count, token);
  }
  const size_t shown = std::min<size_t>(3, top.size());
  std::partial_sort(top.begin(), top.begin() + shown, top.end(),
                    [](const auto& a, const auto& b) { return a > b; });
  std::string common;
  for (size_t i = 0; i < shown; ++i) {
    common +=
        (i ? ", " : "") + top[i].second + "=" + std::to_string(top[i].first);
  }

  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "pipeline: %llu blocks, %.1f MB in %.1f s (%.1f MB/s) with %d workers, "
      "ratio %.2f, %llu tokens (%zu distinct; top: %s), "
      "%llu round-trip failures\n",
      static_cast<unsigned long long>(sum.blocks), sum.bytes_in / 1e6, elapsed,
      elapsed > 0 ? sum.bytes_in / 1e6 / elapsed : 0.0, workers,
      sum.bytes_compressed ? double(sum.bytes_in) / sum.bytes_compressed : 0.0,
      static_cast<unsigned long long>(sum.tokens.tokens),
      sum.tokens.counts.size(), common.c_str(),
      static_cast<unsigned long long>(sum.round_trip_failures));
  return sum.round_trip_failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace examples
}  // namespace ringprof

int main(int argc, char** argv) { return ringprof::examples::Main(argc, argv); }
