// The collector's log lines on stderr: "ringprof: <message>" (warnings and
// errors say so). Info lines are off unless enabled (--verbose); warnings
// and errors always print.
//
// Thread-safe: each line is one write(2).
#ifndef RINGPROF_COLLECTOR_LOG_H_
#define RINGPROF_COLLECTOR_LOG_H_

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

void SetVerboseLogging(bool verbose);
void LogInfo(absl::string_view message);
void LogWarning(absl::string_view message);
void LogError(absl::string_view message);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_LOG_H_
