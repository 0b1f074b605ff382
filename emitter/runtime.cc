// The session and the shared runtime services (runtime.h, session.h).
//
// State is a handful of globals: the writer lives in static storage that is
// never destroyed (a static destructor could run while other threads still
// allocate during exit), `g_enabled` gates every append.
#include "emitter/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "emitter/config.h"
#include "emitter/free_tracker.h"
#include "emitter/libc_features.h"
#include "emitter/module_map.h"
#include "emitter/session.h"
#include "emitter/thread_state.h"
#include "ringfile/format.h"
#include "ringfile/writer.h"

// The initial thread's stack top, set by the dynamic loader (glibc).
extern "C" void* __libc_stack_end;

namespace ringprof {
namespace emitter {

__thread ThreadState tls_thread_state
    __attribute__((tls_model("initial-exec")));

namespace {

using ringfile::RingWriter;

alignas(RingWriter) unsigned char g_writer_storage[sizeof(RingWriter)];
RingWriter* g_writer = nullptr;
// True while the ring file is open and sampling is on.
std::atomic<bool> g_enabled{false};
// In a fork child: the session is on but the child's file is created by the
// first record that needs it (so a child that only execs leaves no file).
std::atomic<bool> g_child_ring_pending{false};
Config g_config;
SamplerParams g_sampler_params;
char g_executable[1024];

std::atomic<uint64_t> g_lost_samples{0};
std::atomic<uint64_t> g_lost_weight{0};

// Small allocation-free string building for paths.
class PathBuilder {
 public:
  PathBuilder& Add(const char* s) {
    while (*s != '\0' && size_ + 1 < sizeof(buf_)) buf_[size_++] = *s++;
    buf_[size_] = '\0';
    return *this;
  }
  PathBuilder& AddNumber(uint64_t v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0 && size_ + 1 < sizeof(buf_)) buf_[size_++] = digits[--n];
    buf_[size_] = '\0';
    return *this;
  }
  const char* c_str() const { return buf_; }
  bool truncated() const { return size_ + 1 >= sizeof(buf_); }

 private:
  char buf_[1024] = {};
  size_t size_ = 0;
};

void ReadExecutablePath() {
  const ssize_t n =
      readlink("/proc/self/exe", g_executable, sizeof(g_executable) - 1);
  g_executable[n > 0 ? n : 0] = '\0';
}

// /proc/self/stat field 22: the process start time in clock ticks, which
// with the pid names this process uniquely over the machine's uptime.
uint64_t ReadProcessStartTicks() {
  char buf[1024];
  const int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) may contain spaces and ')': skip to the
  // last ')', which is followed by field 3.
  const char* p = strrchr(buf, ')');
  if (p == nullptr) return 0;
  int field = 2;
  for (++p; *p != '\0' && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  uint64_t ticks = 0;
  for (; *p >= '0' && *p <= '9'; ++p) ticks = ticks * 10 + (*p - '0');
  return ticks;
}

// mkdir -p, each created component with `mode`.
void MakeDirectories(const char* dir, mode_t mode) {
  char path[kMaxDirSize];
  const size_t n = strlen(dir);
  if (n >= sizeof(path)) return;
  memcpy(path, dir, n + 1);
  for (size_t i = 1; i <= n; ++i) {
    if (path[i] == '/' || path[i] == '\0') {
      const char saved = path[i];
      path[i] = '\0';
      mkdir(path, mode);  // EEXIST and the like: the open below decides.
      path[i] = saved;
    }
  }
}

uint32_t SlotSizeFor(int max_frames) {
  const uint32_t sample = sizeof(ringfile::SlotHeader) +
                          sizeof(ringfile::AllocSample) +
                          8u * static_cast<uint32_t>(max_frames);
  // Room for a module path of kMaxModulePathSize as well.
  const uint32_t module = sizeof(ringfile::SlotHeader) +
                          sizeof(ringfile::ModuleMap) + kMaxModulePathSize;
  uint32_t size = sample > module ? sample : module;
  size =
      (size + ringfile::kSlotAlignment - 1) & ~(ringfile::kSlotAlignment - 1);
  return size < ringfile::kMinSlotSize ? ringfile::kMinSlotSize : size;
}

// Creates `<dir>/<service>.<pid>.<start ticks>.ring`. An exec'd image keeps
// the pid and start time: when the name is taken (O_EXCL), `.1`, `.2`, ...
// are tried before the extension. Returns 0 or an errno value.
int CreateRingFile(RingWriter* writer) {
  const uint32_t pid = static_cast<uint32_t>(getpid());
  const uint64_t start_ticks = ReadProcessStartTicks();
  const mode_t dir_mode = (g_config.file_mode & 0060) != 0 ? 0750 : 0700;
  MakeDirectories(g_config.dir, dir_mode);

  constexpr int kRingCount = 4;
  const uint32_t slot_size = SlotSizeFor(g_config.max_frames);
  uint64_t slots = static_cast<uint64_t>(g_config.ring_kib) * 1024 /
                   (kRingCount * uint64_t{slot_size});
  uint32_t slots_per_ring = 16;
  while (uint64_t{slots_per_ring} * 2 <= slots) slots_per_ring *= 2;

  ringfile::WriterOptions options;
  options.mode = g_config.file_mode;
  options.ring_count = kRingCount;
  options.slots_per_ring = slots_per_ring;
  options.slot_size = slot_size;
  options.service_name = g_config.service_name;
  options.executable = g_executable;
  options.pid = pid;
  options.process_start_ticks = start_ticks;

  // No signal handler runs during creation: posix_fallocate of a large ring
  // fails with EINTR when a signal arrives (in a fork child the CPU timer is
  // already armed), and a handler must not find the writer half-made.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  int error = EEXIST;
  for (int attempt = 0; attempt < 16 && error == EEXIST; ++attempt) {
    PathBuilder path;
    path.Add(g_config.dir)
        .Add("/")
        .Add(g_config.service_name)
        .Add(".")
        .AddNumber(pid)
        .Add(".")
        .AddNumber(start_ticks);
    if (attempt > 0) path.Add(".").AddNumber(static_cast<uint64_t>(attempt));
    path.Add(".ring");
    if (path.truncated()) {
      error = ENAMETOOLONG;
      break;
    }
    options.path = path.c_str();
    error = writer->Create(options);
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return error;
}

void ReportCreateFailure(int error) {
  // strerrorname_np: a static string, no locale, no allocation (this may run
  // inside malloc or a signal handler in a fork child).
  const char* name = ErrnoName(error);
  PathBuilder line;
  line.Add("ringprof: cannot create a ring file in ")
      .Add(g_config.dir)
      .Add(" (");
  if (name != nullptr) {
    line.Add(name);
  } else {
    line.Add("error ").AddNumber(static_cast<uint64_t>(error));
  }
  line.Add("); profiling is off for this process\n");
  ReportToStderr(line.c_str());
}

// Opens the session's ring file; false (reported) when it cannot.
bool OpenRing() {
  if (g_writer == nullptr) g_writer = new (g_writer_storage) RingWriter();
  const int error = CreateRingFile(g_writer);
  if (error != 0) {
    ReportCreateFailure(error);
    return false;
  }
  return true;
}

void ConfigureSampler() {
  g_sampler_params.mean_bytes = g_config.sample_bytes;
  g_sampler_params.timing_period_ns =
      g_config.min_samples_per_sec > 0
          ? 1000000000ull / static_cast<uint64_t>(g_config.min_samples_per_sec)
          : 0;
}

const char* LookupEnv(const char* name) { return getenv(name); }

void RecordMainThreadStack() {
  // The initial thread's stack: [rsp now, __libc_stack_end] is the part in
  // use, and the stack only grows down from there; the low end is bounded
  // by RLIMIT_STACK but we only need the top to stop runaway unwinds.
  tls_thread_state.stack_high = reinterpret_cast<uintptr_t>(__libc_stack_end) +
                                4096;  // argv/envp live just above
  tls_thread_state.stack_low = 0;
}

}  // namespace

bool Enabled() {
  return g_enabled.load(std::memory_order_acquire) ||
         g_child_ring_pending.load(std::memory_order_relaxed);
}

namespace {

// The fork child's first record: creates the child's file (one thread wins;
// records of others racing with it are dropped), then re-records the module
// map before the record that triggered it.
bool OpenPendingChildRing() {
  if (!g_child_ring_pending.exchange(false, std::memory_order_acq_rel)) {
    return false;
  }
  ReentryGuard guard;
  if (!OpenRing()) return false;
  g_enabled.store(true, std::memory_order_release);
  EmitAllModules();
  return true;
}

}  // namespace

bool AppendRecord(ringfile::RecordType type, const void* head,
                  uint32_t head_size, const void* tail, uint32_t tail_size) {
  if (!g_enabled.load(std::memory_order_acquire) &&
      !(g_child_ring_pending.load(std::memory_order_relaxed) &&
        OpenPendingChildRing())) {
    return false;
  }
  return g_writer->TryAppend(type, head, head_size, tail, tail_size,
                             CurrentTid());
}

uint32_t CurrentTid() {
  uint32_t tid = tls_thread_state.tid;
  if (__builtin_expect(tid == 0, 0)) {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    tls_thread_state.tid = tid;
  }
  return tid;
}

uint64_t MonotonicNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

int MaxFrames() { return g_config.max_frames; }

const Config& SessionConfig() { return g_config; }
const char* ExecutablePath() { return g_executable; }
void DisableTimingSamples() { g_sampler_params.timing_period_ns = 0; }

const SamplerParams& SessionSamplerParams() { return g_sampler_params; }

void CountLostSample(uint64_t weight_bytes) {
  g_lost_samples.fetch_add(1, std::memory_order_relaxed);
  g_lost_weight.fetch_add(weight_bytes, std::memory_order_relaxed);
}

void FlushLostSamples() {
  if (g_lost_samples.load(std::memory_order_relaxed) == 0) return;
  ringfile::LostSamples lost;
  lost.monotonic_ns = MonotonicNowNs();
  lost.samples = g_lost_samples.exchange(0, std::memory_order_relaxed);
  lost.weight_bytes = g_lost_weight.exchange(0, std::memory_order_relaxed);
  if (lost.samples == 0) return;
  if (!AppendRecord(ringfile::RecordType::kLostSamples, &lost, sizeof(lost),
                    nullptr, 0)) {
    // Put them back for the next attempt.
    g_lost_samples.fetch_add(lost.samples, std::memory_order_relaxed);
    g_lost_weight.fetch_add(lost.weight_bytes, std::memory_order_relaxed);
  }
}

void StartSession() {
  ReentryGuard guard;  // nothing below is sampled
  ReadExecutablePath();
  LoadConfig(LookupEnv, ReportToStderr, g_executable, &g_config);
  if (g_config.disabled) return;
  ReportMissingLibcFeatures();
  ConfigureSampler();
  RecordMainThreadStack();
  // Runs the unwinder once outside malloc so anything it sets up lazily is
  // ready before the first sample.
  uint64_t frames[4];
  bool truncated;
  CaptureStack(frames, 4, 0, &truncated);
  if (!OpenRing()) return;
  g_enabled.store(true, std::memory_order_release);
  RecordLoadedModules();
  g_free_tracking.store(g_config.track_frees, std::memory_order_relaxed);
}

void EndSession(int exit_status) {
  // A fork child that never recorded anything has no file: keep it so.
  g_child_ring_pending.store(false, std::memory_order_relaxed);
  if (!g_enabled.load(std::memory_order_acquire)) return;
  FlushLostSamples();
  ringfile::ProcessEnd end;
  end.monotonic_ns = MonotonicNowNs();
  end.exit_status = exit_status;
  end.reserved = 0;
  AppendRecord(ringfile::RecordType::kProcessEnd, &end, sizeof(end), nullptr,
               0);
  g_writer->MarkProcessEnded();
  g_enabled.store(false, std::memory_order_release);
}

void RestartSessionInForkChild() {
  // The child's only thread inherited the forking thread's TLS.
  ResetModuleMapAfterFork();
  tls_thread_state.tid = 0;
  tls_thread_state.name_generation = 0;
  g_lost_samples.store(0, std::memory_order_relaxed);
  g_lost_weight.store(0, std::memory_order_relaxed);
  if (!g_enabled.load(std::memory_order_acquire)) return;
  g_enabled.store(false, std::memory_order_release);
  g_writer->Close();  // the child's mapping only; the parent's stays
  g_child_ring_pending.store(true, std::memory_order_release);
}

}  // namespace emitter
}  // namespace ringprof
