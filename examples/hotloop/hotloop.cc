// hotloop: a small workload with a known profile, for ringprof's end-to-end
// test and demos. main() alternates `HotLoop` (allocation-heavy, about 80%
// of the work) and `ColdLoop` (about 20%) for a number of rounds, then exits
// with the status given on the command line.
//
//   hotloop [rounds (default 40)] [exit status (default 0)] [threads (1)]
//
// With more than one thread, every thread runs the same loop (a load
// generator for the collector's benchmark).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// Defeats dead-allocation elimination.
void* volatile g_sink;

// Allocates and fills many short strings: the hot function.
__attribute__((noinline)) uint64_t HotLoop(int rounds) {
  uint64_t checksum = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::string> parts;
    for (int i = 0; i < 20000; ++i) {
      parts.emplace_back(64 + i % 192, static_cast<char>('a' + i % 26));
      checksum += parts.back()[i % 64];
    }
    g_sink = parts.data();
  }
  return checksum;
}

// Similar work, about a fifth as much per round.
__attribute__((noinline)) uint64_t ColdLoop(int rounds) {
  uint64_t checksum = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < 5000; ++i) {
      char* p = static_cast<char*>(std::malloc(128));
      std::memset(p, i, 128);
      g_sink = p;
      checksum += p[7];
      std::free(p);
    }
  }
  return checksum;
}

// One thread's work: the driver of the two loops.
__attribute__((noinline)) uint64_t RunWorkload(int rounds) {
  uint64_t checksum = 0;
  for (int r = 0; r < rounds; ++r) {
    checksum += HotLoop(1);
    checksum += ColdLoop(1);
  }
  return checksum;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  const int status = argc > 2 ? std::atoi(argv[2]) : 0;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  std::vector<uint64_t> results(threads > 1 ? threads : 0);
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) {
    workers.emplace_back(
        [&results, t, rounds] { results[t] = RunWorkload(rounds); });
  }
  uint64_t checksum = RunWorkload(rounds);
  for (std::thread& w : workers) w.join();
  for (uint64_t r : results) checksum += r;
  g_sink = &checksum;
  return status;
}
