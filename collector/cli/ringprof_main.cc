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
#include <malloc.h>
#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/base/flag_environment.h"
#include "collector/base/log.h"
#include "collector/cli/commands.h"
#include "collector/cli/flags.h"
#include "collector/cli/startup.h"
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
    "also read PYROSCOPE_* variables, the OTLP flags (--otlp-*) the "
    "OpenTelemetry SDKs' OTEL_* variables.";

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

namespace {

// The collector allocates in bursts (a window's profiles, a module's symbol
// table) on two threads. glibc's defaults give each thread an arena that
// grows a page range at a time (one mprotect each: hundreds per build) and
// hand blocks of 128 KiB and more to mmap, so every large buffer is
// faulted in afresh. One arena that grows 8 MiB at a time, keeps up to
// 32 MiB free before returning it, and serves blocks below 32 MiB from the
// heap does the same work with a fraction of the system calls and page
// faults. The profiled programs are not affected (they exec).
void TuneAllocator() {
#ifdef __GLIBC__
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_TOP_PAD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  TuneAllocator();  // before any thread exists
  // Before any secret is read: a non-dumpable process's /proc/<pid>/environ
  // and memory are not readable by other processes of the same uid (a
  // profiled workload), and it writes no core dump. Programs it execs start
  // dumpable again.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  return ringprof::collector::Main(argc, argv);
}
