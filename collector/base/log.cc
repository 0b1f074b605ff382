#include "collector/base/log.h"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

std::atomic<bool> g_verbose{false};

void Write(absl::string_view level, absl::string_view message) {
  std::string line = absl::StrCat("ringprof: ", level, message, "\n");
  // One write per line so concurrent lines do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

constexpr int kBurst = 5;
constexpr int64_t kIntervalNs = 60'000'000'000;

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Decides whether a line of `cause` prints; `suppressed` gets the number of
// lines of that cause dropped since the last one printed.
bool Admit(absl::string_view cause, uint64_t& suppressed) {
  struct State {
    int printed = 0;
    int64_t next_ns = 0;
    uint64_t suppressed = 0;
  };
  static std::mutex mu;
  static std::map<std::string, State, std::less<>>* states =
      new std::map<std::string, State, std::less<>>();
  static Counter& dropped = Metrics::Get().GetCounter(
      "ringprof_log_lines_suppressed_total",
      "Log lines not printed because their cause exceeded its rate limit.");
  const int64_t now = MonotonicNs();
  std::lock_guard<std::mutex> lock(mu);
  auto it = states->find(cause);
  if (it == states->end())
    it = states->emplace(std::string(cause), State()).first;
  State& state = it->second;
  if (state.printed < kBurst || now >= state.next_ns) {
    ++state.printed;
    if (state.printed >= kBurst) state.next_ns = now + kIntervalNs;
    suppressed = state.suppressed;
    state.suppressed = 0;
    return true;
  }
  ++state.suppressed;
  dropped.Add(1);
  return false;
}

void WriteLimited(absl::string_view level, absl::string_view cause,
                  absl::string_view message) {
  uint64_t suppressed = 0;
  if (!Admit(cause, suppressed)) return;
  if (suppressed == 0) return Write(level, message);
  Write(level,
        absl::StrCat(message, " (", suppressed, " similar lines suppressed)"));
}

}  // namespace

void SetVerboseLogging(bool verbose) { g_verbose.store(verbose); }

void LogInfo(absl::string_view message) {
  if (g_verbose.load(std::memory_order_relaxed)) Write("", message);
}
void LogWarning(absl::string_view message) { Write("warning: ", message); }
void LogError(absl::string_view message) { Write("error: ", message); }

}  // namespace collector
}  // namespace ringprof

namespace ringprof {
namespace collector {

void LogWarningLimited(absl::string_view cause, absl::string_view message) {
  WriteLimited("warning: ", cause, message);
}
void LogErrorLimited(absl::string_view cause, absl::string_view message) {
  WriteLimited("error: ", cause, message);
}

}  // namespace collector
}  // namespace ringprof
