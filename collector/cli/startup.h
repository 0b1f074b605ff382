// The start-up and shutdown the `ringprof` commands share: the sinks of
// one invocation, the state directory, the collector pipeline, and the
// final flush with its summary.
//
// Called from main's thread only.
#ifndef RINGPROF_COLLECTOR_CLI_STARTUP_H_
#define RINGPROF_COLLECTOR_CLI_STARTUP_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/collector.h"
#include "collector/sink/local_sink.h"
#include "collector/sink/sink.h"
#include "collector/sink/tee_sink.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {

// The sinks of one invocation.
struct Sinks {
  std::unique_ptr<ProfileSink> remote;  // Pyroscope, when configured
  std::unique_ptr<ProfileSink> otlp;    // OTLP endpoint, when configured
  std::unique_ptr<LocalSink> local;
  std::unique_ptr<TeeSink> tee;
};

// `log_windows`: one info line per window written locally (collect).
absl::StatusOr<Sinks> MakeSinks(const std::string& output_dir,
                                bool local_by_default,
                                bool log_windows = false);

// --state-dir, or its default beside the spool or in the local output;
// "" when there is none (restarts then read rings from their oldest
// record). Created 0700 when missing.
absl::StatusOr<std::string> StateDir(const std::string& local_out);

// Logs `status` as an error; returns `code` (the process's exit status).
int Fail(const absl::Status& status, int code = 2);

// Stops the collector, flushes and writes the local summary, all within
// --shutdown-deadline from now; `run` (print) writes its summary after the
// deadline if need be, since its user waits for that flame graph. `fate`:
// how the profiled command ended, for `run` (null for collect).
int Finish(Collector& collector, Sinks& sinks, bool print,
           const std::string* fate = nullptr);

// The collector start-up `run` and `collect` share: a symbolizer unless
// --symbolize=false (frames stay addresses for the server to resolve), and
// the pipeline into `sink`, started. Members are destroyed collector first.
struct Pipeline {
  std::unique_ptr<Symbolizer> symbolizer;
  std::unique_ptr<Collector> collector;
};

absl::StatusOr<Pipeline> StartPipeline(
    const CollectorOptions& options,
    const SymbolizerOptions& symbolizer_options, ProfileSink* sink);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_CLI_STARTUP_H_
