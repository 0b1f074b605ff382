// For tests: runs `go tool pprof` (Debian's golang-go) on a profile file,
// the reference reader our profiles must satisfy.
#ifndef RINGPROF_COLLECTOR_PPROF_GO_PPROF_TESTUTIL_H_
#define RINGPROF_COLLECTOR_PPROF_GO_PPROF_TESTUTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ringprof {
namespace collector {

// Runs `go tool pprof -symbolize=none ARGS...` with HOME and GOCACHE in the
// test's temporary directory. Returns stdout+stderr when it exits 0;
// Unavailable when `go` is not installed; Internal with the output
// otherwise.
absl::StatusOr<std::string> RunGoPprof(const std::vector<std::string>& args);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_GO_PPROF_TESTUTIL_H_
