// The emitter's configuration, read once from the environment.
//
// Contract: LoadConfig never allocates (it runs in the preloaded library's
// constructor and in fork children) and never fails: every bad value is
// reported as exactly one line through `report` and replaced by its default.
// Thread-compatible; the emitter calls it before any sampling starts.
#ifndef RINGPROF_EMITTER_CONFIG_H_
#define RINGPROF_EMITTER_CONFIG_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

inline constexpr int kMaxDirSize = 512;
inline constexpr int kMaxServiceNameSize = 64;

struct Config {
  // RINGPROF_DISABLE=1|true|yes: the emitter does nothing at all.
  bool disabled = false;
  // RINGPROF_DIR: where ring files are created (made 0700, or 0750 when the
  // file mode is group-readable, if missing).
  char dir[kMaxDirSize] = "/tmp/ringprof";
  // RINGPROF_SERVICE_NAME: defaults to the executable's basename. Characters
  // outside [A-Za-z0-9_.-] become '_' (the name is part of a file name).
  char service_name[kMaxServiceNameSize] = "";
  // RINGPROF_SAMPLE_BYTES: mean of the exponential byte interval.
  int64_t sample_bytes = 512 * 1024;
  // RINGPROF_MAX_FRAMES: stack depth, [1, 1000].
  int max_frames = 128;
  // RINGPROF_RING_KIB: total size of the ring slots, [256, 1048576]; the
  // file is this plus an 8 KiB header.
  int64_t ring_kib = 8 * 1024;
  // RINGPROF_DIR_MAX_MIB: cap on the ring files in RINGPROF_DIR, enforced
  // when a ring is created (rings of processes that are gone are deleted,
  // oldest first, to make room); 0 = no cap. [0, 1048576].
  int64_t dir_max_mib = 1024;
  // RINGPROF_FILE_MODE: octal permission bits of the ring file; must include
  // 0600 and nothing beyond 0666 (e.g. 0640 for a sidecar in the same group).
  uint32_t file_mode = 0600;
  // RINGPROF_MIN_SAMPLES_PER_SEC: per busy thread, the minimum sample rate
  // the collector's tick picking can count on; 0 turns timing samples off.
  // [0, 1000].
  int min_samples_per_sec = 100;
  // RINGPROF_MAX_SAMPLES_PER_SEC: process-wide cap on timing samples per
  // second (allocation samples are never capped: that would bias weights).
  int max_samples_per_sec = 2000;
  // RINGPROF_TRACK_FREES (default on): the live set and FreeSampled records
  // for the in-use heap; see free_tracker.h and live_set.h.
  bool track_frees = true;
  // RINGPROF_PTRACER_ANY (default off): the process calls
  // prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY), so that a collector sidecar
  // of the same uid may read /proc/<pid>/root where the kernel applies YAMA's
  // ptrace scope to reading it (gVisor before release-20251215). It also
  // lets any process of that uid attach to this one with ptrace.
  bool ptracer_any = false;
  // RINGPROF_MUTEX_SAMPLE_NS / RINGPROF_BLOCK_SAMPLE_NS: off-CPU profiles
  // (wait_sampler.h), the mean nanoseconds of waiting between samples of
  // lock contention and of blocking calls; 0 turns the profile off.
  // [0, 10^12].
  int64_t mutex_sample_ns = 1'000'000;
  int64_t block_sample_ns = 1'000'000;
  // RINGPROF_LOG=stderr: diagnostics (environment facts) on stderr too;
  // `off` (default): the emitter prints nothing but configuration errors.
  bool log_stderr = false;
};

// Returns the value of an environment variable or nullptr.
using EnvLookup = const char* (*)(const char* name);

// An EnvLookup for RINGPROF_* names over a snapshot of the environment's
// RINGPROF_ entries, taken by RefreshRingprofEnv (or the first lookup): one
// pass over the environment for the twenty-odd names the emitter reads at
// start, where getenv would walk all of it for each. Changes to the
// environment after the snapshot are not seen. Allocation-free; not
// thread-safe (the library's constructors use it).
void RefreshRingprofEnv();
const char* LookupRingprofEnv(const char* name);
// Receives one complete line (with '\n') describing a bad value.
using ReportLine = void (*)(const char* line);

// Fills `config` from the environment; `executable_path` (the program's
// argv[0] or its executable) supplies the default service name (its
// basename).
void LoadConfig(EnvLookup lookup, ReportLine report,
                const char* executable_path, Config* config);

// RINGPROF_DISABLE alone, as LoadConfig reads it (silently): for the parts
// of the emitter that run before the configuration is loaded and must do
// nothing when it is off.
bool DisabledInEnvironment(EnvLookup lookup);

// The CPU-timer sampler's settings (CPU_TIMER.md).
struct CpuTimerConfig {
  // RINGPROF_CPU_HZ: timer frequency per thread, 0 (off) to 1000.
  int hz = 100;
  // RINGPROF_CPU_SIGNAL: a number in [SIGRTMIN, SIGRTMAX], or SIGRTMIN+n /
  // SIGRTMAX-n (also without the "SIG" prefix); default SIGRTMAX-4.
  int signal = 0;
};

// Fills `config` from the environment, with the same contract as
// LoadConfig (never allocates, one reported line per bad value).
void LoadCpuTimerConfig(EnvLookup lookup, ReportLine report,
                        CpuTimerConfig* config);

// Writes `line` to stderr with write(2) (no stdio, no allocation).
void ReportToStderr(const char* line);

// RINGPROF_LOG=stderr, as LoadConfig reads it (silently).
bool LogToStderrInEnvironment(EnvLookup lookup);

// A configuration error (a bad RINGPROF_* value, a ring directory the
// process cannot use), printed once per process tree: not by a process
// whose parent runs with the same LD_PRELOAD and RINGPROF_* settings (it
// printed the same line, or will), unless RINGPROF_LOG=stderr. Reads
// /proc/<ppid>/environ (system calls only, no allocation; the parent's
// environment as it was exec'd). (config_errors.cc)
void ReportConfigError(const char* line);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_CONFIG_H_
