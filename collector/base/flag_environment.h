// Every ringprof flag can also be given as an environment variable; the
// command line wins. Each file that defines flags registers their variables
// once, at namespace scope:
//
//   const bool kFlagEnvironment = RegisterFlagEnvironment({
//       {"server_address", "PYROSCOPE_SERVER_ADDRESS"}, ...});
//   const bool kFlagEnvironment = RegisterRingprofFlagEnvironment(
//       {"ring_dir", "output_dir", ...});  // RINGPROF_RING_DIR, ...
//
// and the program calls ApplyEnvironmentToFlags() before it parses its
// command line.
//
// Thread-safety: registration happens during static initialization; Apply
// and the accessors are called from main's thread before other threads run.
#ifndef RINGPROF_COLLECTOR_BASE_FLAG_ENVIRONMENT_H_
#define RINGPROF_COLLECTOR_BASE_FLAG_ENVIRONMENT_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

struct FlagVariable {
  const char* flag;      // the flag's name, e.g. "ring_dir"
  const char* variable;  // e.g. "RINGPROF_RING_DIR"
};

// Returns true (for the namespace-scope constant).
bool RegisterFlagEnvironment(std::initializer_list<FlagVariable> flags);
// The variable of each named flag is RINGPROF_<NAME IN UPPER CASE>.
bool RegisterRingprofFlagEnvironment(std::initializer_list<const char*> flags);

// Sets every registered flag whose variable is set and not empty.
// InvalidArgument naming the variable when a value does not parse, Internal
// when a registered flag does not exist.
absl::Status ApplyEnvironmentToFlags();

// The variable of `flag`, or "" when it has none.
std::string FlagVariableOf(absl::string_view flag);

// (flag, variable) for every registered flag, sorted by flag.
std::vector<std::pair<std::string, std::string>> RegisteredFlagVariables();

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_FLAG_ENVIRONMENT_H_
