// The `ringprof` command-line flags (defined in flags.cc) and what they
// configure. Every flag may also be given as an environment variable
// RINGPROF_<FLAG NAME IN UPPER CASE> (e.g. --watermark-slack ->
// RINGPROF_WATERMARK_SLACK); the command line wins. Dashes and underscores
// in flag names are interchangeable.
#ifndef RINGPROF_COLLECTOR_CLI_FLAGS_H_
#define RINGPROF_COLLECTOR_CLI_FLAGS_H_

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "collector/collector.h"
#include "collector/symbolize/symbolizer.h"

ABSL_DECLARE_FLAG(std::string, ring_dir);
ABSL_DECLARE_FLAG(std::string, output_dir);
ABSL_DECLARE_FLAG(std::string, emitter);
ABSL_DECLARE_FLAG(std::string, service);
ABSL_DECLARE_FLAG(absl::Duration, drain_timeout);
ABSL_DECLARE_FLAG(absl::Duration, shutdown_deadline);
ABSL_DECLARE_FLAG(std::string, state_dir);
ABSL_DECLARE_FLAG(int, top);
ABSL_DECLARE_FLAG(bool, verbose);
ABSL_DECLARE_FLAG(std::string, log_level);
ABSL_DECLARE_FLAG(int32_t, log_lines_per_cause);
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(std::string, sample_index);

namespace ringprof {
namespace collector {

// Rewrites "--some-flag[=v]" to "--some_flag[=v]" up to a "--" argument.
void NormalizeFlagNames(std::vector<std::string>& args);

// --help lists the flags of collector/ and collector/shipping/.
void ConfigureUsage();

// Options from flags; InvalidArgument for inconsistent values.
absl::StatusOr<CollectorOptions> CollectorOptionsFromFlags();
absl::StatusOr<SymbolizerOptions> SymbolizerOptionsFromFlags();

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_CLI_FLAGS_H_
