// The collector's log lines on stderr, one leveled logger for every part of
// it: "ringprof: <message>" at debug and info, "ringprof: warning: ..." and
// "ringprof: error: ...". Lines below the level set by --log-level (default
// info) are dropped. RateLimitedLog keeps messages that would otherwise
// repeat every window (a server that keeps rejecting uploads, a workload that
// keeps writing garbage) from flooding the log.
//
// Never pass secrets: URLs are logged through RedactUrl
// (shipping/http_uploader.h) and headers never.
//
// Thread-safe: each line is one write(2); RateLimitedLog takes a mutex.
#ifndef RINGPROF_COLLECTOR_BASE_LOG_H_
#define RINGPROF_COLLECTOR_BASE_LOG_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning"/"warn", "error" (any case); false when unknown.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void Log(LogLevel level, absl::string_view message);

inline void LogDebug(absl::string_view message) {
  Log(LogLevel::kDebug, message);
}
inline void LogInfo(absl::string_view message) {
  Log(LogLevel::kInfo, message);
}
inline void LogWarning(absl::string_view message) {
  Log(LogLevel::kWarning, message);
}
inline void LogError(absl::string_view message) {
  Log(LogLevel::kError, message);
}

// Per-key rate limiting (a key names the kind of problem, e.g.
// "ring-corrupt"): the first `burst` lines of a key print, then at most one
// per `interval_ns` (monotonic), which says how many were suppressed since.
// Suppressed lines count in ringprof_log_lines_suppressed_total.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(int64_t interval_ns, int burst = 1)
      : interval_ns_(interval_ns), burst_(burst) {}
  void Log(LogLevel level, absl::string_view key, absl::string_view message);
  void set_burst(int burst);

 private:
  struct KeyState {
    int printed = 0;
    int64_t next_ns = 0;
    uint64_t suppressed = 0;
  };
  const int64_t interval_ns_;
  std::mutex mu_;
  int burst_;  // guarded by mu_
  std::map<std::string, KeyState, std::less<>> keys_;
};

// Rate-limited per `cause` through one process-wide RateLimitedLog: the
// first 5 lines (SetLogLinesPerCause; --log-lines-per-cause) of a cause
// print, then at most one per minute. A workload can therefore not flood
// the collector's log, whatever it writes.
void LogWarningLimited(absl::string_view cause, absl::string_view message);
void LogErrorLimited(absl::string_view cause, absl::string_view message);
void SetLogLinesPerCause(int lines);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_LOG_H_
