// Integer command-line flags for the example workloads, `--name=value` or
// `--name value`, with ranges. Deliberately tiny: the examples depend on
// nothing but the C++ standard library, like the programs users profile.
#ifndef RINGPROF_EXAMPLES_COMMON_FLAGS_H_
#define RINGPROF_EXAMPLES_COMMON_FLAGS_H_

#include <initializer_list>

namespace ringprof {
namespace examples {

struct IntFlag {
  const char* name;  // without the leading "--"
  int* value;        // holds the default on entry
  int min;
  int max;
  const char* help;
};

// Parses argv into `flags`. On `--help` prints usage to stdout and returns
// false with *exit_code = 0; on an unknown flag or a bad value prints one
// line and the usage to stderr and returns false with *exit_code = 2.
bool ParseIntFlags(int argc, char** argv, const char* summary,
                   std::initializer_list<IntFlag> flags, int* exit_code);

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_COMMON_FLAGS_H_
