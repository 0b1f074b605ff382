#include "collector/shipping/log.h"

#include <time.h>
#include <unistd.h>

#include <atomic>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
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

void Log(LogLevel level, absl::string_view message) {
  if (!LogEnabled(level)) return;
  const std::string line =
      absl::StrCat("ringprof shipping ", LevelName(level), ": ", message, "\n");
  // One write(2) so concurrent lines do not interleave.
  ssize_t unused = write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

void RateLimitedLog::Log(LogLevel level, const std::string& key,
                         absl::string_view message) {
  if (!LogEnabled(level)) return;
  const int64_t now = MonotonicNowNs();
  uint64_t suppressed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    KeyState& state = keys_[key];
    if (state.last_logged_ns != 0 &&
        now - state.last_logged_ns < interval_ns_) {
      ++state.suppressed;
      return;
    }
    suppressed = state.suppressed;
    state.suppressed = 0;
    state.last_logged_ns = now;
  }
  if (suppressed == 0) {
    shipping::Log(level, message);
  } else {
    shipping::Log(level, absl::StrCat(message, " (", suppressed,
                                      " similar messages suppressed)"));
  }
}

int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t UnixNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
