#include "collector/cli/startup.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collector/base/clock.h"
#include "collector/base/log.h"
#include "collector/cli/child_process.h"
#include "collector/cli/flags.h"
#include "collector/cli/startup.h"
#include "collector/collector.h"
#include "collector/otlp/otlp_flags.h"
#include "collector/profile/environment_facts.h"
#include "collector/profile/leaf_names.h"
#include "collector/shipping/pyroscope_flags.h"
#include "collector/sink/local_sink.h"
#include "collector/sink/tee_sink.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {
namespace {

// Functions `run` prints under each flame graph's path (top.txt has more).
constexpr int kHottestPrinted = 3;

// `fate`: how the profiled command ended, for `run` (null for collect).
void PrintLocalOutput(const LocalSink& local, const LocalOutput& out,
                      const CollectorSummary& summary,
                      const std::string* fate) {
  std::fprintf(stderr, "\nringprof: profiles in %s/\n",
               local.out_dir().c_str());
  for (const LocalPage& page : out.pages) {
    std::fprintf(stderr, "ringprof: %-20s%s (%s)\n",
                 absl::StrCat(page.view->caption, ":").c_str(),
                 page.path.c_str(), page.total.c_str());
    for (const std::string& line : page.hottest) {
      std::fprintf(stderr, "  %s\n", line.c_str());
    }
  }
  // What the emitters recorded about their environment (once each).
  for (const std::string& line : EnvironmentFactLines()) {
    std::fprintf(stderr, "ringprof: environment: %s\n", line.c_str());
  }
  // How much stayed unsymbolized, and where.
  for (const std::string& line : LeafNameSummary(summary.totals.leaf_names)) {
    std::fprintf(stderr, "ringprof: %s\n", line.c_str());
  }
  if (!out.top_table.empty()) {
    std::fprintf(stderr, "ringprof: top functions of each: %s/top.txt\n",
                 local.out_dir().c_str());
  } else if (fate != nullptr && absl::StartsWith(*fate, "was killed")) {
    std::fprintf(stderr, "ringprof: no samples were recorded: the program %s\n",
                 fate->c_str());
  } else {
    std::fprintf(stderr,
                 "ringprof: no samples were recorded (the program ran too "
                 "briefly, allocated too little, or did not load the "
                 "emitter: static binaries cannot be LD_PRELOADed)\n");
  }
}

// Ends the process at `deadline` unless cancelled first: whatever a
// workload made the collector do (a huge backlog, a file that blocks), a
// shutdown takes at most --shutdown-deadline.
class ShutdownWatchdog {
 public:
  explicit ShutdownWatchdog(absl::Time deadline)
      : thread_([this, deadline] {
          std::unique_lock<std::mutex> lock(mu_);
          if (cv_.wait_until(lock, absl::ToChronoTime(deadline),
                             [this] { return cancelled_; })) {
            return;
          }
          LogError(
              "shutdown deadline (--shutdown-deadline) passed; exiting "
              "without finishing (profiles not flushed by now are lost; "
              "with --state-dir the next collector reads their records "
              "again)");
          ::_exit(1);
        }) {}
  ~ShutdownWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelled_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  std::thread thread_;
};

}  // namespace

absl::StatusOr<Sinks> MakeSinks(const std::string& output_dir,
                                bool local_by_default, bool log_windows) {
  Sinks sinks;
  // nullptr when no server is configured (--server-address /
  // PYROSCOPE_SERVER_ADDRESS).
  absl::StatusOr<std::unique_ptr<ProfileSink>> remote =
      MakePyroscopeSinkFromFlags();
  if (!remote.ok()) return remote.status();
  sinks.remote = std::move(*remote);
  // nullptr when no OTLP endpoint is configured (--otlp-endpoint,
  // OTEL_EXPORTER_OTLP_[PROFILES_]ENDPOINT).
  absl::StatusOr<std::unique_ptr<ProfileSink>> otlp = MakeOtlpSinkFromFlags();
  if (!otlp.ok()) return otlp.status();
  sinks.otlp = std::move(*otlp);
  const bool shipping = sinks.remote != nullptr || sinks.otlp != nullptr;
  std::string dir = output_dir;
  if (dir.empty() && (local_by_default || !shipping)) {
    dir = "ringprof-out";
  }
  if (!dir.empty()) {
    absl::StatusOr<std::unique_ptr<LocalSink>> local = LocalSink::Create(dir);
    if (!local.ok()) return local.status();
    sinks.local = std::move(*local);
  }
  std::vector<ProfileSink*> all;
  if (sinks.remote) all.push_back(sinks.remote.get());
  if (sinks.otlp) all.push_back(sinks.otlp.get());
  if (sinks.local) all.push_back(sinks.local.get());
  sinks.tee = std::make_unique<TeeSink>(
      all,
      log_windows && sinks.local && !shipping ? sinks.local->out_dir() : "");
  return sinks;
}

absl::StatusOr<std::string> StateDir(const std::string& local_out) {
  std::string dir = absl::GetFlag(FLAGS_state_dir);
  if (dir == "none") return std::string();
  if (dir.empty()) {
    std::string spool = absl::GetFlag(FLAGS_spool_dir);
    if (spool.empty()) {
      if (const char* env = std::getenv("RINGPROF_SPOOL_DIR")) spool = env;
    }
    while (spool.size() > 1 && spool.back() == '/') spool.pop_back();
    if (!spool.empty()) {
      dir = spool + ".state";
    } else if (!local_out.empty()) {
      dir = local_out + "/.state";
    } else {
      return std::string();
    }
  }
  ::mkdir(dir.c_str(), 0700);
  absl::Status writable = EnsureWritableDirectory(dir);
  if (!writable.ok()) return writable;
  return dir;
}

int Fail(const absl::Status& status, int code) {
  LogError(status.message());
  return code;
}

int Finish(Collector& collector, Sinks& sinks, bool print,
           const std::string* fate) {
  const absl::Time deadline =
      absl::Now() + absl::GetFlag(FLAGS_shutdown_deadline);
  std::optional<ShutdownWatchdog> watchdog;
  watchdog.emplace(deadline);
  collector.Stop(deadline);
  const absl::Status flushed = sinks.tee->Flush(
      MonotonicNowNs() + absl::ToInt64Nanoseconds(std::max(
                             absl::ZeroDuration(), deadline - absl::Now())));
  if (print) watchdog.reset();
  if (!flushed.ok()) LogWarning(absl::StrCat("flush: ", flushed.message()));
  const CollectorSummary summary = collector.summary();
  if (summary.totals.late_samples > 0) {
    LogWarning(absl::StrCat(summary.totals.late_samples,
                            " samples arrived too late for tick picking "
                            "(raise --watermark-slack)"));
  }
  if (sinks.local) {
    absl::StatusOr<LocalOutput> out =
        sinks.local->Finalize(absl::GetFlag(FLAGS_top), kHottestPrinted);
    if (!out.ok()) return Fail(out.status(), 1);
    if (print) PrintLocalOutput(*sinks.local, *out, summary, fate);
  }
  return flushed.ok() ? 0 : 1;
}

absl::StatusOr<Pipeline> StartPipeline(
    const CollectorOptions& options,
    const SymbolizerOptions& symbolizer_options, ProfileSink* sink) {
  Pipeline pipeline;
  if (!options.profiler.unresolved_without_lines) {
    pipeline.symbolizer = Symbolizer::Create(symbolizer_options);
  }
  pipeline.collector =
      std::make_unique<Collector>(options, pipeline.symbolizer.get(), sink);
  if (absl::Status started = pipeline.collector->Start(); !started.ok()) {
    return started;
  }
  return pipeline;
}

}  // namespace collector
}  // namespace ringprof
