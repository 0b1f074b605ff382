// Prints a ring file's header and records in readable form:
//
//   [--follow] [--max=N] [--quiet] FILE
//
// By default it takes a snapshot: it reads every committed record once,
// treating the writer as gone (a record still being written counts as lost),
// and exits. --follow keeps tailing, like `tail -f`, until the process marks
// its end (or Ctrl-C). --max=N stops after N records; --quiet prints only the
// header and the totals. The totals end with the count of each record type.
//
// The one implementation behind `tools/ringdump` (//ringfile:ringdump) and
// `ringprof dump`. Not thread-safe (installs a SIGINT handler, prints to
// stdout).
#ifndef RINGPROF_RINGFILE_RINGDUMP_H_
#define RINGPROF_RINGFILE_RINGDUMP_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ringprof {
namespace ringfile {

// `args` without the program name; `program` prefixes the usage line and
// errors. Returns the exit status: 0 ok, 1 usage, 2 the file is unreadable
// or corrupt (the error is printed to stderr).
int RingDump(const std::vector<std::string>& args, absl::string_view program);

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_RINGDUMP_H_
