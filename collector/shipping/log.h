// Shipping's log lines on stderr, with a level threshold and a rate limiter
// for messages that would otherwise repeat every window (a server that keeps
// rejecting uploads must not flood the log).
//
// Never pass secrets: callers log URLs through RedactUrl (http_uploader.h)
// and never log headers.
//
// Thread-safety: all functions and RateLimitedLog are thread-safe.
#ifndef RINGPROF_COLLECTOR_SHIPPING_LOG_H_
#define RINGPROF_COLLECTOR_SHIPPING_LOG_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {
namespace shipping {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning"/"warn", "error"; false when unknown.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
// Writes "ringprof shipping <LEVEL>: <message>\n" to stderr in one write.
void Log(LogLevel level, absl::string_view message);

// Logs the first message for a key, then at most one per `interval_ns`
// (monotonic) per key, saying how many were suppressed in between.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(int64_t interval_ns) : interval_ns_(interval_ns) {}
  void Log(LogLevel level, const std::string& key, absl::string_view message);

 private:
  struct KeyState {
    int64_t last_logged_ns = 0;
    uint64_t suppressed = 0;
  };
  const int64_t interval_ns_;
  std::mutex mu_;
  std::map<std::string, KeyState> keys_;
};

// CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds.
int64_t MonotonicNowNs();
int64_t UnixNowNs();

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_LOG_H_
