#include "collector/cli/flags.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "collector/base/flag_environment.h"
#include "collector/cli/version.h"

ABSL_FLAG(std::string, ring_dir, "",
          "Directory of ring files. `collect`: required (the emitters' "
          "RINGPROF_DIR). `run`: default a private directory under /dev/shm "
          "(or $TMPDIR), removed afterwards.");
ABSL_FLAG(std::string, output_dir, "",
          "Local output directory (per-window .pb.gz, merged profiles, "
          "top.txt, flame graphs). `run`: default "
          "./ringprof-<command>-<date>-<time>. `collect`: default "
          "./ringprof-out when no Pyroscope server is configured, none "
          "otherwise.");
ABSL_FLAG(std::string, emitter, "",
          "`run`: path of libringprof.so (default: next to the ringprof "
          "binary, in its Bazel runfiles, or ../emitter/).");
ABSL_FLAG(std::string, service, "",
          "`run`: service name given to the emitter (RINGPROF_SERVICE_NAME); "
          "default: the emitter's (the executable's name).");
ABSL_FLAG(absl::Duration, tick, absl::Milliseconds(10),
          "Tick of the tick-picking CPU estimate; each pick adds one tick.");
ABSL_FLAG(absl::Duration, max_distance, absl::ZeroDuration(),
          "Farthest a sample may be from a tick to be picked for it "
          "(0: one tick).");
ABSL_FLAG(bool, idle_frame, false,
          "Record ticks at which no thread had a sample as a '[no sample]' "
          "frame in the alloc_ticks CPU profile (Pyro Caml's behaviour).");
ABSL_FLAG(absl::Duration, window, absl::Seconds(10),
          "Profile window, aligned to the wall clock.");
ABSL_FLAG(absl::Duration, poll_interval, absl::Milliseconds(5),
          "How often rings are drained.");
ABSL_FLAG(absl::Duration, rescan_interval, absl::Seconds(1),
          "How often the ring directory is rescanned besides inotify.");
ABSL_FLAG(absl::Duration, watermark_slack, absl::Milliseconds(250),
          "How far behind the newest data ticks are decided, so records "
          "committed late by other threads still count.");
ABSL_FLAG(absl::Duration, liveness_interval, absl::Seconds(1),
          "After this long without progress, check whether a ring's writer "
          "process is still alive.");
ABSL_FLAG(bool, keep_rings, false,
          "Keep ring files of ended processes (default: delete them once "
          "fully drained).");
ABSL_FLAG(std::vector<std::string>, symbols_dir, {},
          "Comma-separated directories laid out like /usr/lib/debug "
          "(.build-id/ab/cdef....debug).");
ABSL_FLAG(bool, debuginfod, true,
          "Fetch debug info from debuginfod when DEBUGINFOD_URLS is set.");
ABSL_FLAG(bool, symbolize, true,
          "false: do not symbolize; every frame keeps only its address and "
          "mapping (file, offset, build-id) for a symbolizer on the server "
          "(Pyroscope's, pprof's).");
ABSL_FLAG(int64_t, symbols_cache_mib, 512,
          "Memory budget of the symbolizer (symbol indexes, DWARF read into "
          "memory, cached results), MiB; least recently used modules are "
          "dropped beyond it.");
ABSL_FLAG(int64_t, symbols_max_file_mib, 2048,
          "Largest binary or debug file the symbolizer reads, MiB.");
ABSL_FLAG(std::string, proc_root, "/proc",
          "Where the workload's /proc is visible (binaries are looked up in "
          "<proc-root>/<pid>/root/ first).");
ABSL_FLAG(int64_t, max_queued_records, 256 * 1024,
          "Records buffered between the drain and processing threads.");
ABSL_FLAG(int32_t, max_open_rings, 256,
          "Ring files followed at once (each holds a descriptor and a "
          "mapping); others wait, files of live processes first.");
ABSL_FLAG(std::string, state_dir, "",
          "`collect`: where to persist how far each ring file was delivered, "
          "so that a restarted collector resumes there (default: "
          "<spool-dir>.state with --spool-dir, else <output-dir>/.state with "
          "a local output directory; 'none' to disable).");
ABSL_FLAG(int64_t, max_memory_mib, 1024,
          "Budget of all processes' interned stacks, locations and window "
          "aggregates (an estimate); beyond it, samples with new stacks "
          "count under a '[truncated]' stack.");
ABSL_FLAG(int64_t, max_memory_per_process_mib, 128,
          "The same budget for one process.");
ABSL_FLAG(int64_t, max_tag_values, 100,
          "Distinct values an application tag key may take per process; "
          "later values become 'other' (ringprof_tag_values_folded_total).");
ABSL_FLAG(absl::Duration, max_future, absl::Minutes(1),
          "Samples stamped further ahead of the collector's clock are "
          "dropped and counted.");
ABSL_FLAG(absl::Duration, max_past, absl::Hours(1),
          "Samples stamped further behind the collector's clock are "
          "dropped and counted.");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(3),
          "`run`: after the command exits, how long to wait for its (and its "
          "children's) rings to end.");
ABSL_FLAG(absl::Duration, shutdown_deadline, absl::Seconds(10),
          "How long the shutdown may take, from the signal to exit: last "
          "drain, final windows and sink flush. Past it the collector exits "
          "anyway (status 1); with --state-dir the next one resumes.");
ABSL_FLAG(int, top, 15,
          "Rows of each table in top.txt (`run` prints the 3 hottest "
          "functions of each flame graph, names shortened).");
ABSL_FLAG(bool, verbose, false,
          "Same as --log-level=debug: log each ring file followed and ended "
          "and each upload.");
ABSL_FLAG(int32_t, log_lines_per_cause, 5,
          "Warnings and errors of one cause (e.g. a corrupt ring file) "
          "printed before the rest are rate-limited to one a minute.");
ABSL_FLAG(std::string, log_level, "info",
          "error, warning, info (one line per shipped window) or debug "
          "(also each ring file followed and ended, each upload).");
ABSL_FLAG(std::string, output, "diff.html",
          "`diff`: where to write the HTML diff flame graph (also -o).");
ABSL_FLAG(std::string, sample_index, "",
          "`diff`: which value to compare: a sample type name (e.g. "
          "inuse_space: growth of what is still allocated) or its index; "
          "empty: the profile's default (alloc_space for memory).");

namespace ringprof {
namespace collector {

// Each flag is also RINGPROF_<NAME> (flag_environment.h).
const bool kFlagEnvironment = RegisterRingprofFlagEnvironment({
    "ring_dir",
    "output_dir",
    "emitter",
    "service",
    "tick",
    "max_distance",
    "idle_frame",
    "window",
    "poll_interval",
    "rescan_interval",
    "watermark_slack",
    "liveness_interval",
    "keep_rings",
    "symbols_dir",
    "debuginfod",
    "symbolize",
    "symbols_cache_mib",
    "symbols_max_file_mib",
    "proc_root",
    "max_queued_records",
    "max_open_rings",
    "state_dir",
    "max_memory_mib",
    "max_memory_per_process_mib",
    "max_tag_values",
    "max_future",
    "max_past",
    "drain_timeout",
    "shutdown_deadline",
    "top",
    "verbose",
    "log_level",
    "log_lines_per_cause",
    "output",
    "sample_index",
});

void NormalizeFlagNames(std::vector<std::string>& args) {
  for (std::string& arg : args) {
    if (arg == "--") break;
    if (!absl::StartsWith(arg, "-") || arg.size() < 2) continue;
    const size_t dashes = absl::StartsWith(arg, "--") ? 2 : 1;
    const size_t end = std::min(arg.find('='), arg.size());
    for (size_t i = dashes; i < end; ++i) {
      if (arg[i] == '-') arg[i] = '_';
    }
  }
}

namespace {

bool IsCollectorFlagFile(absl::string_view file) {
  return absl::StrContains(file, "collector/");
}

}  // namespace

void ConfigureUsage() {
  absl::FlagsUsageConfig config;
  config.contains_help_flags = IsCollectorFlagFile;
  config.contains_helpshort_flags = IsCollectorFlagFile;
  config.version_string = [] {
    return std::string("ringprof " RINGPROF_VERSION "\n");
  };
  absl::SetFlagsUsageConfig(config);
}

absl::StatusOr<CollectorOptions> CollectorOptionsFromFlags() {
  CollectorOptions options;
  options.drainer.ring_dir = absl::GetFlag(FLAGS_ring_dir);
  options.drainer.poll_interval = absl::GetFlag(FLAGS_poll_interval);
  options.drainer.rescan_interval = absl::GetFlag(FLAGS_rescan_interval);
  options.drainer.watermark_slack = absl::GetFlag(FLAGS_watermark_slack);
  options.drainer.liveness_interval = absl::GetFlag(FLAGS_liveness_interval);
  options.drainer.keep_rings = absl::GetFlag(FLAGS_keep_rings);
  const absl::Duration tick = absl::GetFlag(FLAGS_tick);
  absl::Duration max_distance = absl::GetFlag(FLAGS_max_distance);
  if (max_distance == absl::ZeroDuration()) max_distance = tick;
  const absl::Duration window = absl::GetFlag(FLAGS_window);
  if (tick < absl::Microseconds(100) || tick > absl::Seconds(1)) {
    return absl::InvalidArgumentError("--tick must be in [100us, 1s]");
  }
  if (max_distance < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--max-distance must be >= 0");
  }
  if (window < absl::Seconds(1) || window % tick != absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--window must be >= 1s and a multiple of --tick");
  }
  if (absl::GetFlag(FLAGS_poll_interval) <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--poll-interval must be > 0");
  }
  options.profiler.tick_ns = absl::ToInt64Nanoseconds(tick);
  options.profiler.max_distance_ns = absl::ToInt64Nanoseconds(max_distance);
  options.profiler.idle_frame = absl::GetFlag(FLAGS_idle_frame);
  options.profiler.window_ns = absl::ToInt64Nanoseconds(window);
  options.profiler.unresolved_without_lines = !absl::GetFlag(FLAGS_symbolize);
  const int64_t tag_values = absl::GetFlag(FLAGS_max_tag_values);
  if (tag_values < 1 || tag_values > 100000) {
    return absl::InvalidArgumentError(
        "--max-tag-values must be in [1, 100000]");
  }
  options.profiler.max_tag_values = static_cast<size_t>(tag_values);
  const int64_t queued = absl::GetFlag(FLAGS_max_queued_records);
  if (queued < 1024) {
    return absl::InvalidArgumentError("--max-queued-records must be >= 1024");
  }
  options.max_queued_records = static_cast<size_t>(queued);
  const int32_t open_rings = absl::GetFlag(FLAGS_max_open_rings);
  if (open_rings < 1 || open_rings > 65536) {
    return absl::InvalidArgumentError("--max-open-rings must be in [1, 65536]");
  }
  options.drainer.max_open_rings = static_cast<uint32_t>(open_rings);
  const absl::Duration deadline = absl::GetFlag(FLAGS_shutdown_deadline);
  if (deadline < absl::Seconds(1) || deadline > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        "--shutdown-deadline must be in [1s, 1h]");
  }
  const int64_t total_mib = absl::GetFlag(FLAGS_max_memory_mib);
  const int64_t process_mib = absl::GetFlag(FLAGS_max_memory_per_process_mib);
  if (total_mib < 1 || process_mib < 1 || process_mib > total_mib ||
      total_mib > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        "--max-memory-mib and --max-memory-per-process-mib must be >= 1, "
        "the second at most the first");
  }
  options.max_memory_bytes = static_cast<uint64_t>(total_mib) << 20;
  options.profiler.max_memory_bytes = static_cast<uint64_t>(process_mib) << 20;
  const absl::Duration future = absl::GetFlag(FLAGS_max_future);
  const absl::Duration past = absl::GetFlag(FLAGS_max_past);
  if (future < absl::Seconds(1) || past < window || future > absl::Hours(24) ||
      past > absl::Hours(24 * 7)) {
    return absl::InvalidArgumentError(
        "--max-future must be in [1s, 24h], --max-past in [--window, 7d]");
  }
  options.profiler.max_future_ns = absl::ToInt64Nanoseconds(future);
  options.profiler.max_past_ns = absl::ToInt64Nanoseconds(past);
  return options;
}

absl::StatusOr<SymbolizerOptions> SymbolizerOptionsFromFlags() {
  SymbolizerOptions options;
  for (const std::string& dir : absl::GetFlag(FLAGS_symbols_dir)) {
    if (!dir.empty()) options.symbol_dirs.push_back(dir);
  }
  options.proc_root = absl::GetFlag(FLAGS_proc_root);
  options.use_debuginfod = absl::GetFlag(FLAGS_debuginfod);
  const int64_t cache_mib = absl::GetFlag(FLAGS_symbols_cache_mib);
  const int64_t file_mib = absl::GetFlag(FLAGS_symbols_max_file_mib);
  constexpr int64_t kMaxMib = int64_t{1} << 30;  // 1 PiB: no overflow below
  if (cache_mib < 1 || cache_mib > kMaxMib) {
    return absl::InvalidArgumentError("--symbols-cache-mib must be >= 1");
  }
  if (file_mib < 1 || file_mib > kMaxMib) {
    return absl::InvalidArgumentError("--symbols-max-file-mib must be >= 1");
  }
  options.cache_bytes = static_cast<uint64_t>(cache_mib) << 20;
  options.max_file_bytes = static_cast<uint64_t>(file_mib) << 20;
  return options;
}

}  // namespace collector
}  // namespace ringprof
