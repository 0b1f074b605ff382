// `ringprof collect [flags]` (commands.h).
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/base/log.h"
#include "collector/cli/child_process.h"
#include "collector/cli/commands.h"
#include "collector/cli/flags.h"
#include "collector/cli/startup.h"
#include "collector/collector.h"
#include "collector/otlp/otlp_flags.h"
#include "collector/shipping/http_uploader.h"
#include "collector/shipping/pyroscope_flags.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {

int CollectCommand() {
  // Before any thread exists (the metrics server and the uploader start in
  // MakeSinks): a thread without the mask would take a SIGTERM sent to the
  // process and die of it, losing the last window.
  BlockForwardedSignals();
  absl::StatusOr<CollectorOptions> options = CollectorOptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  absl::StatusOr<SymbolizerOptions> symbolizer_options =
      SymbolizerOptionsFromFlags();
  if (!symbolizer_options.ok()) return Fail(symbolizer_options.status());
  if (options->drainer.ring_dir.empty()) {
    if (const char* dir = std::getenv("RINGPROF_DIR")) {
      options->drainer.ring_dir = dir;
    }
  }
  if (options->drainer.ring_dir.empty()) {
    return Fail(absl::InvalidArgumentError(
        "collect needs --ring-dir (or RINGPROF_DIR)"));
  }
  absl::StatusOr<Sinks> sinks =
      MakeSinks(absl::GetFlag(FLAGS_output_dir), /*local_by_default=*/false,
                /*log_windows=*/true);
  if (!sinks.ok()) return Fail(sinks.status());
  absl::StatusOr<std::string> state_dir =
      StateDir(sinks->local ? sinks->local->out_dir() : "");
  if (!state_dir.ok()) return Fail(state_dir.status());
  options->drainer.state_dir = *state_dir;
  absl::StatusOr<Pipeline> pipeline =
      StartPipeline(*options, *symbolizer_options, sinks->tee.get());
  if (!pipeline.ok()) return Fail(pipeline.status());
  Collector& collector = *pipeline->collector;
  // Where profiles go, at every level but error: the one line a sidecar's
  // operator needs first.
  std::vector<std::string> destinations;
  if (sinks->remote) {
    std::string server = absl::GetFlag(FLAGS_server_address);
    const char* env = std::getenv("PYROSCOPE_SERVER_ADDRESS");
    if (server.empty() && env != nullptr) server = env;
    destinations.push_back(shipping::RedactUrl(server));
  }
  if (sinks->otlp) {
    destinations.push_back(absl::StrCat(
        "OTLP ", shipping::RedactUrl(otlp::ResolveEndpoint(
                     absl::GetFlag(FLAGS_otlp_endpoint),
                     std::getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != nullptr
                         ? std::getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
                         : ""))));
  }
  if (sinks->local) destinations.push_back(sinks->local->out_dir() + "/");
  const std::string start_line =
      absl::StrCat("collecting from ", options->drainer.ring_dir,
                   "; profiles go to ", absl::StrJoin(destinations, " and "));
  if (LogEnabled(LogLevel::kWarning)) {
    std::fprintf(stderr, "ringprof: %s\n", start_line.c_str());
  }
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  int sig = 0;
  sigwait(&set, &sig);
  LogDebug(absl::StrCat("signal ", sig, ": draining and flushing"));
  return Finish(collector, *sinks, /*print=*/false);
}

}  // namespace collector
}  // namespace ringprof
