// `ringprof run [flags] -- CMD ARGS...` (commands.h).
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collector/base/log.h"
#include "collector/cli/child_process.h"
#include "collector/cli/commands.h"
#include "collector/cli/flags.h"
#include "collector/cli/startup.h"
#include "collector/collector.h"
#include "collector/sink/local_sink.h"
#include "collector/symbolize/symbolizer.h"

namespace ringprof {
namespace collector {
namespace {

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

}  // namespace

int RunCommand(const std::vector<std::string>& command) {
  if (command.empty()) {
    return Fail(absl::InvalidArgumentError(
        "usage: ringprof run [flags] -- CMD ARGS..."));
  }
  // Before any thread exists (the metrics server and the uploader start in
  // MakeSinks): every thread inherits the mask.
  BlockForwardedSignals();
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
  collector.Wake();  // its rings end now: no need to wait for their next poll
  WaitForRingsToEnd(collector, options->drainer.ring_dir, own_ring_dir);
  const std::string described = fate.Describe();
  const int finished = Finish(collector, *sinks, /*print=*/true, &described);
  child->Finish();  // deletes our ring directory
  std::fprintf(stderr, "ringprof: %s %s\n", command[0].c_str(),
               described.c_str());
  // ringprof exits now: the merged profiles, symbol tables and per-process
  // state (the collector's threads are joined) go back to the system with
  // the process instead of being freed one by one (tens of milliseconds
  // after a build). Kept reachable, so leak checkers do not count them.
  static Pipeline* const kept_pipeline = new Pipeline(std::move(*pipeline));
  static LocalSink* const kept_local = sinks->local.release();
  (void)kept_pipeline;
  (void)kept_local;
  const int exit_code = fate.ShellStatus();
  if (finished != 0 && exit_code == 0) return finished;
  return exit_code;
}

}  // namespace collector
}  // namespace ringprof
