#include "collector/base/log.h"

#include <unistd.h>

#include <atomic>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "collector/base/clock.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

absl::string_view Tag(LogLevel level) {
  switch (level) {
    case LogLevel::kWarning:
      return "warning: ";
    case LogLevel::kError:
      return "error: ";
    default:
      return "";
  }
}

}  // namespace

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  const std::string t = absl::AsciiStrToLower(text);
  if (t == "debug") {
    *level = LogLevel::kDebug;
  } else if (t == "info") {
    *level = LogLevel::kInfo;
  } else if (t == "warning" || t == "warn") {
    *level = LogLevel::kWarning;
  } else if (t == "error") {
    *level = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

void SetLogLevel(LogLevel level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

namespace {

// This file's metrics, registered together on first use.
struct FileMetrics {
  Counter& lines_suppressed = Metrics::Get().GetCounter(
      "ringprof_log_lines_suppressed_total",
      "Log lines not printed because their cause exceeded its rate limit.");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

}  // namespace

void Log(LogLevel level, absl::string_view message) {
  if (!LogEnabled(level)) return;
  const std::string line =
      absl::StrCat("ringprof: ", Tag(level), message, "\n");
  // One write(2) so concurrent lines do not interleave.
  ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

void RateLimitedLog::Log(LogLevel level, absl::string_view key,
                         absl::string_view message) {
  if (!LogEnabled(level)) return;
  const int64_t now = MonotonicNowNs();
  uint64_t suppressed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end())
      it = keys_.emplace(std::string(key), KeyState()).first;
    KeyState& state = it->second;
    if (state.printed >= burst_ && now < state.next_ns) {
      ++state.suppressed;
      metrics().lines_suppressed.Add(1);
      return;
    }
    ++state.printed;
    if (state.printed >= burst_) state.next_ns = now + interval_ns_;
    suppressed = state.suppressed;
    state.suppressed = 0;
  }
  if (suppressed == 0) {
    collector::Log(level, message);
  } else {
    collector::Log(level, absl::StrCat(message, " (", suppressed,
                                       " similar messages suppressed)"));
  }
}

void RateLimitedLog::set_burst(int burst) {
  std::lock_guard<std::mutex> lock(mu_);
  burst_ = burst;
}

namespace {
RateLimitedLog& CauseLog() {
  static RateLimitedLog* log = new RateLimitedLog(int64_t{60} * 1000000000, 5);
  return *log;
}
}  // namespace

void LogWarningLimited(absl::string_view cause, absl::string_view message) {
  CauseLog().Log(LogLevel::kWarning, cause, message);
}
void LogErrorLimited(absl::string_view cause, absl::string_view message) {
  CauseLog().Log(LogLevel::kError, cause, message);
}
void SetLogLinesPerCause(int lines) { CauseLog().set_burst(lines); }

}  // namespace collector
}  // namespace ringprof
