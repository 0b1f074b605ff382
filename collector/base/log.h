// The collector's log lines on stderr: "ringprof: <message>" (warnings and
// errors say so). Info lines are off unless enabled (--verbose); warnings
// and errors always print.
//
// Thread-safe: each line is one write(2); the rate limiter takes a mutex.
#ifndef RINGPROF_COLLECTOR_LOG_H_
#define RINGPROF_COLLECTOR_LOG_H_

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

void SetVerboseLogging(bool verbose);
void LogInfo(absl::string_view message);
void LogWarning(absl::string_view message);
void LogError(absl::string_view message);

// Rate-limited per `cause` (a short fixed string naming the kind of problem,
// e.g. "ring-corrupt"): the first 5 lines of a cause print, then at most one
// per minute, which says how many were suppressed since. Suppressed lines
// count in ringprof_log_lines_suppressed_total. A workload can therefore not
// flood the collector's log, whatever it writes.
void LogWarningLimited(absl::string_view cause, absl::string_view message);
void LogErrorLimited(absl::string_view cause, absl::string_view message);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_LOG_H_
