// ringprof: the collector's command line.
//
//   ringprof run [flags] -- CMD ARGS...   profile one command, locally
//   ringprof collect [flags]              sidecar: follow --ring-dir until
//                                         SIGTERM, ship or write profiles
//   ringprof diff [flags] A.pb.gz B.pb.gz -o diff.html
//   ringprof dump [--quiet] RING_FILE     what a ring file holds
//
// See collector/README.md for every flag and the output layout.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collector/base/clock.h"
#include "collector/base/file.h"
#include "collector/base/flag_environment.h"
#include "collector/base/log.h"
#include "collector/cli/child_process.h"
#include "collector/cli/flags.h"
#include "collector/collector.h"
#include "collector/profile/pprof_io.h"
#include "collector/render/flamegraph.h"
#include "collector/shipping/http_uploader.h"
#include "collector/shipping/pyroscope_flags.h"
#include "collector/shipping/pyroscope_sink.h"
#include "collector/sink/local_sink.h"
#include "collector/sink/tee_sink.h"
#include "collector/symbolize/symbolizer.h"
#include "ringfile/ringdump.h"

namespace ringprof {
namespace collector {
namespace {

constexpr char kUsage[] =
    "continuous profiler for native programs (no perf_event_open "
    "needed).\n\n"
    "  ringprof run [flags] -- CMD ARGS...   profile CMD; writes profiles "
    "and a flame graph\n"
    "  ringprof collect --ring-dir=DIR [flags]  sidecar: follow DIR until "
    "SIGTERM\n"
    "  ringprof diff [flags] BASE.pb.gz TARGET.pb.gz -o diff.html\n"
    "  ringprof dump [--follow] [--max=N] [--quiet] RING_FILE\n\n"
    "Flags use --name=value (dashes or underscores); each is also read from "
    "RINGPROF_<NAME> (e.g. RINGPROF_OUTPUT_DIR). Pyroscope shipping flags "
    "also read PYROSCOPE_* variables.";

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string SelfDir() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  std::string exe(buffer, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

// libringprof.so: --emitter, next to us, our runfiles, ../emitter/.
absl::StatusOr<std::string> FindEmitter() {
  const std::string flag = absl::GetFlag(FLAGS_emitter);
  if (!flag.empty()) {
    if (!IsExecutableFile(flag)) {
      return absl::NotFoundError(
          absl::StrCat("--emitter ", flag, " not found"));
    }
    return flag;
  }
  const std::string self = SelfDir();
  std::vector<std::string> candidates = {
      self + "/libringprof.so",
      self + "/ringprof.runfiles/ringprof/emitter/libringprof.so",
      self + "/../emitter/libringprof.so",
      self + "/../lib/ringprof/libringprof.so",
  };
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(var)) {
      candidates.push_back(
          absl::StrCat(dir, "/ringprof/emitter/libringprof.so"));
    }
  }
  for (const std::string& c : candidates) {
    if (IsExecutableFile(c)) {
      char resolved[4096];
      return ::realpath(c.c_str(), resolved) != nullptr ? std::string(resolved)
                                                        : c;
    }
  }
  return absl::NotFoundError(
      "cannot find libringprof.so next to ringprof or in its runfiles; "
      "pass --emitter=/path/to/libringprof.so");
}

// A private ring directory: tmpfs when possible (the rings are mmap'd).
absl::StatusOr<std::string> MakeRingDir() {
  std::vector<std::string> bases = {"/dev/shm"};
  if (const char* tmp = std::getenv("TMPDIR")) bases.push_back(tmp);
  bases.push_back("/tmp");
  for (const std::string& base : bases) {
    std::string templ = base + "/ringprof-run-XXXXXX";
    if (::mkdtemp(templ.data()) != nullptr) return templ;
  }
  return absl::InternalError(
      absl::StrCat("cannot create a ring directory: ", std::strerror(errno)));
}

std::string DefaultRunOutputDir(const std::string& command) {
  std::string name = command.substr(command.rfind('/') + 1);
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_')
      c = '_';
  }
  return absl::StrCat(
      "ringprof-", name, "-",
      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()));
}

// The sinks of one invocation.
struct Sinks {
  std::unique_ptr<ProfileSink> remote;  // Pyroscope, when configured
  std::unique_ptr<LocalSink> local;
  std::unique_ptr<TeeSink> tee;
};

// `log_windows`: one info line per window written locally (collect).
absl::StatusOr<Sinks> MakeSinks(const std::string& output_dir,
                                bool local_by_default,
                                bool log_windows = false) {
  Sinks sinks;
  // nullptr when no server is configured (--server-address /
  // PYROSCOPE_SERVER_ADDRESS).
  absl::StatusOr<std::unique_ptr<ProfileSink>> remote =
      MakePyroscopeSinkFromFlags();
  if (!remote.ok()) return remote.status();
  sinks.remote = std::move(*remote);
  std::string dir = output_dir;
  if (dir.empty() && (local_by_default || sinks.remote == nullptr)) {
    dir = "ringprof-out";
  }
  if (!dir.empty()) {
    absl::StatusOr<std::unique_ptr<LocalSink>> local = LocalSink::Create(dir);
    if (!local.ok()) return local.status();
    sinks.local = std::move(*local);
  }
  std::vector<ProfileSink*> all;
  if (sinks.remote) all.push_back(sinks.remote.get());
  if (sinks.local) all.push_back(sinks.local.get());
  sinks.tee = std::make_unique<TeeSink>(
      all, log_windows && sinks.local && !sinks.remote ? sinks.local->out_dir()
                                                       : "");
  return sinks;
}

// --state-dir, or its default beside the spool or in the local output;
// "" when there is none (restarts then read rings from their oldest
// record). Created 0700 when missing.
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

int Fail(const absl::Status& status, int code = 2) {
  LogError(status.message());
  return code;
}

// `fate`: how the profiled command ended, for `run` (null for collect).
void PrintLocalOutput(const LocalSink& local, const LocalOutput& out,
                      const std::string* fate) {
  std::fprintf(stderr, "\nringprof: profiles in %s/\n",
               local.out_dir().c_str());
  if (!out.cpu_flamegraph.empty()) {
    std::fprintf(stderr, "ringprof: CPU flame graph:    %s\n",
                 out.cpu_flamegraph.c_str());
  }
  if (!out.memory_flamegraph.empty()) {
    std::fprintf(stderr, "ringprof: memory flame graph: %s\n",
                 out.memory_flamegraph.c_str());
  }
  if (!out.inuse_flamegraph.empty()) {
    std::fprintf(stderr, "ringprof: live at exit:       %s\n",
                 out.inuse_flamegraph.c_str());
  }
  if (!out.top_table.empty()) {
    std::fprintf(stderr, "\n%s", out.top_table.c_str());
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

size_t CountRingFiles(const std::string& dir) {
  size_t count = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* entry = ::readdir(d)) {
      if (absl::EndsWith(entry->d_name, ".ring")) ++count;
    }
    ::closedir(d);
  }
  return count;
}

// After the command exited: lets the collector open every ring its
// processes made (a process makes one only if it sampled) and see them end,
// for at most --drain-timeout (a descendant still running keeps its ring
// open). In a shared --ring-dir other processes' rings are not waited for.
void WaitForRingsToEnd(const Collector& collector, const std::string& dir,
                       bool own_dir) {
  const size_t expected = own_dir ? CountRingFiles(dir) : 0;
  const absl::Time deadline = absl::Now() + absl::GetFlag(FLAGS_drain_timeout);
  while (absl::Now() < deadline &&
         (collector.rings_opened() < expected ||
          collector.rings_ended() < collector.rings_opened())) {
    absl::SleepFor(absl::Milliseconds(10));
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

// Stops the collector, flushes and writes the local summary, all within
// --shutdown-deadline from now; `run` (print) writes its summary after the
// deadline if need be, since its user waits for that flame graph.
int Finish(Collector& collector, Sinks& sinks, bool print,
           const std::string* fate = nullptr) {
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
        sinks.local->Finalize(absl::GetFlag(FLAGS_top));
    if (!out.ok()) return Fail(out.status(), 1);
    if (print) PrintLocalOutput(*sinks.local, *out, fate);
  }
  return flushed.ok() ? 0 : 1;
}

// The collector start-up `run` and `collect` share: a symbolizer unless
// --symbolize=false (frames stay addresses for the server to resolve), and
// the pipeline into `sink`, started. Members are destroyed collector first.
struct Pipeline {
  std::unique_ptr<Symbolizer> symbolizer;
  std::unique_ptr<Collector> collector;
};

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

int RunCommand(const std::vector<std::string>& command) {
  if (command.empty()) {
    return Fail(absl::InvalidArgumentError(
        "usage: ringprof run [flags] -- CMD ARGS..."));
  }
  absl::StatusOr<CollectorOptions> options = CollectorOptionsFromFlags();
  if (!options.ok()) return Fail(options.status());
  absl::StatusOr<SymbolizerOptions> symbolizer_options =
      SymbolizerOptionsFromFlags();
  if (!symbolizer_options.ok()) return Fail(symbolizer_options.status());
  absl::StatusOr<std::string> emitter = FindEmitter();
  if (!emitter.ok()) return Fail(emitter.status());
  std::string output_dir = absl::GetFlag(FLAGS_output_dir);
  if (output_dir.empty()) output_dir = DefaultRunOutputDir(command[0]);
  absl::StatusOr<Sinks> sinks =
      MakeSinks(output_dir, /*local_by_default=*/true);
  if (!sinks.ok()) return Fail(sinks.status());

  bool own_ring_dir = false;
  if (options->drainer.ring_dir.empty()) {
    absl::StatusOr<std::string> dir = MakeRingDir();
    if (!dir.ok()) return Fail(dir.status());
    options->drainer.ring_dir = *dir;
    own_ring_dir = true;
  } else {
    // The emitter creates files there: it must exist and be writable.
    absl::Status dir = EnsureWritableDirectory(options->drainer.ring_dir);
    if (!dir.ok()) return Fail(dir);
  }
  std::string preload = *emitter;
  if (const char* existing = std::getenv("LD_PRELOAD")) {
    if (*existing != '\0') preload = absl::StrCat(preload, ":", existing);
  }
  std::vector<std::pair<std::string, std::string>> env = {
      {"LD_PRELOAD", preload}, {"RINGPROF_DIR", options->drainer.ring_dir}};
  if (!absl::GetFlag(FLAGS_service).empty()) {
    env.emplace_back("RINGPROF_SERVICE_NAME", absl::GetFlag(FLAGS_service));
  }
  // Before any thread exists: every thread inherits the mask, and the
  // command's supervisor is forked from a single-threaded process.
  BlockForwardedSignals();
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(
      command, env, own_ring_dir ? options->drainer.ring_dir : "");
  if (!child.ok()) {
    LogError(child.status().message());
    return 127;
  }
  absl::StatusOr<Pipeline> pipeline =
      StartPipeline(*options, *symbolizer_options, sinks->tee.get());
  if (!pipeline.ok())
    return Fail(pipeline.status());  // the supervisor cleans up
  Collector& collector = *pipeline->collector;
  // Only now: the collector follows the command from its first record.
  absl::Status command_started = child->Start();
  if (!command_started.ok()) {
    LogError(command_started.message());
    collector.Stop();
    return 127;
  }

  const CommandFate fate = child->Wait();
  WaitForRingsToEnd(collector, options->drainer.ring_dir, own_ring_dir);
  const std::string described = fate.Describe();
  const int finished = Finish(collector, *sinks, /*print=*/true, &described);
  child->Finish();  // deletes our ring directory
  std::fprintf(stderr, "ringprof: %s %s\n", command[0].c_str(),
               described.c_str());
  const int exit_code = fate.ShellStatus();
  if (finished != 0 && exit_code == 0) return finished;
  return exit_code;
}

int CollectCommand() {
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
  BlockForwardedSignals();
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

// --sample-index: a sample type's name or index; empty: the profile's
// default sample type (else its last), as pprof chooses.
absl::StatusOr<int> DiffSampleIndex(const perftools::profiles::Profile& p,
                                    const std::string& wanted) {
  auto name_of = [&](int i) -> std::string {
    const int64_t s = p.sample_type(i).type();
    return s >= 0 && s < p.string_table_size() ? p.string_table(s) : "";
  };
  std::vector<std::string> names;
  for (int i = 0; i < p.sample_type_size(); ++i) names.push_back(name_of(i));
  int index = -1;
  if (wanted.empty()) {
    index = p.sample_type_size() - 1;
    for (int i = 0; i < p.sample_type_size(); ++i) {
      if (p.default_sample_type() != 0 &&
          p.sample_type(i).type() == p.default_sample_type()) {
        index = i;
      }
    }
    return index;
  }
  if (absl::SimpleAtoi(wanted, &index) && index >= 0 &&
      index < p.sample_type_size()) {
    return index;
  }
  for (int i = 0; i < p.sample_type_size(); ++i) {
    if (names[i] == wanted) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--sample-index=", wanted, ": the profile's sample types are ",
      absl::StrJoin(names, ", ")));
}

int DiffCommand(const std::vector<std::string>& files) {
  if (files.size() != 2) {
    return Fail(absl::InvalidArgumentError(
        "usage: ringprof diff BASE.pb.gz TARGET.pb.gz -o diff.html"));
  }
  absl::StatusOr<perftools::profiles::Profile> base = ReadProfileFile(files[0]);
  if (!base.ok()) return Fail(base.status());
  absl::StatusOr<perftools::profiles::Profile> target =
      ReadProfileFile(files[1]);
  if (!target.ok()) return Fail(target.status());
  if (base->sample_type_size() != target->sample_type_size()) {
    return Fail(absl::InvalidArgumentError(
        "the two profiles have different sample types"));
  }
  absl::StatusOr<int> index =
      DiffSampleIndex(*base, absl::GetFlag(FLAGS_sample_index));
  if (!index.ok()) return Fail(index.status());
  const std::string out = absl::GetFlag(FLAGS_output);
  absl::Status written = WriteFileAtomically(
      out, RenderDiffFlameGraphHtml(
               *base, *target, *index,
               absl::StrCat("ringprof diff: ", files[0], " -> ", files[1])));
  if (!written.ok()) return Fail(written, 1);
  std::fprintf(stderr, "ringprof: diff flame graph: %s\n", out.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  ConfigureUsage();
  absl::SetProgramUsageMessage(kUsage);
  std::vector<std::string> args(argv, argv + argc);
  // `dump` takes ringdump's arguments, not the collector's flags.
  if (args.size() > 1 && args[1] == "dump") {
    return ringfile::RingDump({args.begin() + 2, args.end()}, "ringprof dump");
  }
  // "-o FILE" (diff) is "--output=FILE".
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "-o") {
      args[i] = "--output=" + args[i + 1];
      args.erase(args.begin() + static_cast<long>(i) + 1);
    }
  }
  NormalizeFlagNames(args);
  std::string subcommand;
  if (args.size() > 1 && !absl::StartsWith(args[1], "-")) {
    subcommand = args[1];
    args.erase(args.begin() + 1);
  }
  // `run`: the command starts at "--" or at the first non-flag argument.
  std::vector<std::string> command;
  if (subcommand == "run") {
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--" || !absl::StartsWith(args[i], "-")) {
        command.assign(
            args.begin() + static_cast<long>(i) + (args[i] == "--" ? 1 : 0),
            args.end());
        args.resize(i);
        break;
      }
    }
  }
  absl::Status env = ApplyEnvironmentToFlags();
  if (!env.ok()) return Fail(env);
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(cargs.size()), cargs.data());
  std::vector<std::string> rest(positional.begin() + 1, positional.end());
  const std::string log_level = absl::GetFlag(FLAGS_log_level);
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--log-level must be error, warning, info or debug, not '",
                     log_level, "'")));
  }
  SetLogLevel(absl::GetFlag(FLAGS_verbose) ? LogLevel::kDebug : level);
  const int32_t lines_per_cause = absl::GetFlag(FLAGS_log_lines_per_cause);
  if (lines_per_cause < 1 || lines_per_cause > 10000) {
    return Fail(absl::InvalidArgumentError(
        "--log-lines-per-cause must be in [1, 10000]"));
  }
  SetLogLinesPerCause(lines_per_cause);

  if (subcommand == "run") return RunCommand(command);
  if (subcommand == "collect") {
    if (!rest.empty()) {
      return Fail(absl::InvalidArgumentError("collect takes no arguments"));
    }
    return CollectCommand();
  }
  if (subcommand == "diff") return DiffCommand(rest);
  std::fprintf(stderr, "%s\n\nTry --help for the flags.\n", kUsage);
  return 2;
}

}  // namespace
}  // namespace collector
}  // namespace ringprof

int main(int argc, char** argv) {
  // Before any secret is read: a non-dumpable process's /proc/<pid>/environ
  // and memory are not readable by other processes of the same uid (a
  // profiled workload), and it writes no core dump. Programs it execs start
  // dumpable again.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return ringprof::collector::Main(argc, argv);
}
