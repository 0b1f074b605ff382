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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "emitter/config.h"
#include "emitter/environment_facts.h"
#include "emitter/fork_child.h"
#include "emitter/free_tracker.h"
#include "emitter/large_table.h"
#include "emitter/libc_features.h"
#include "emitter/live_set.h"
#include "emitter/module_map.h"
#include "emitter/ring_dir_cap.h"
#include "emitter/sample_clock.h"
#include "emitter/session.h"
#include "emitter/tags.h"
#include "emitter/thread_state.h"
#include "ringfile/format.h"
#include "ringfile/writer.h"

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
// The session is on but this process's file does not exist yet: it is
// created by the first record that needs it (a sample), so a process that
// never samples — most short-lived ones, a fork child that only execs —
// leaves no file and pays nothing for one.
std::atomic<bool> g_ring_pending{false};
// Threads creating the pending file right now (see OpenPendingRing).
std::atomic<int> g_ring_opening{0};
Config g_config;
SamplerParams g_sampler_params;
// The executable's real path, read on first use (ExecutablePath): reading
// /proc/self/exe walks /proc, which costs a fresh process tens of
// microseconds, and only a ring file needs it.
RINGPROF_LARGE_TABLE char g_executable[1024];
enum ExecutableState : int { kNotRead, kReading, kRead };
std::atomic<int> g_executable_state{kNotRead};

// Slots of all rings of the current file (sweeps pace themselves by it).
std::atomic<uint32_t> g_ring_slots{0};
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
  int state = g_executable_state.load(std::memory_order_acquire);
  if (state != kNotRead || !g_executable_state.compare_exchange_strong(
                               state, kReading, std::memory_order_acq_rel)) {
    return;
  }
  const ssize_t n =
      readlink("/proc/self/exe", g_executable, sizeof(g_executable) - 1);
  g_executable[n > 0 ? n : 0] = '\0';
  g_executable_state.store(kRead, std::memory_order_release);
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

// The smallest slot that holds a full-depth sample (the largest with a
// stack: a live-set re-send) or a module record.
uint32_t MinSlotSizeFor(int max_frames) {
  static_assert(sizeof(ringfile::LiveSample) >= sizeof(ringfile::AllocSample),
                "");
  const uint32_t sample = sizeof(ringfile::SlotHeader) +
                          sizeof(ringfile::LiveSample) +
                          8u * static_cast<uint32_t>(max_frames);
  // Room for a module path of kMaxModulePathSize as well.
  const uint32_t module = sizeof(ringfile::SlotHeader) +
                          sizeof(ringfile::ModuleMap) + kMaxModulePathSize;
  uint32_t size = sample > module ? sample : module;
  // And the largest tag-set definition.
  const uint32_t tags =
      sizeof(ringfile::SlotHeader) + ringfile::kMaxTagSetPayload;
  if (tags > size) size = tags;
  size =
      (size + ringfile::kSlotAlignment - 1) & ~(ringfile::kSlotAlignment - 1);
  return size < ringfile::kMinSlotSize ? ringfile::kMinSlotSize : size;
}

struct RingGeometry {
  uint32_t slots_per_ring;
  uint32_t slot_size;
};

// RINGPROF_RING_KIB split into `ring_count` rings of a power-of-two number
// of slots: as many slots as fit at the minimum slot size, then the slots
// widened to use the whole budget, so the slots total exactly
// RINGPROF_RING_KIB (whenever that divides evenly, which every multiple of
// 64 KiB does).
RingGeometry RingGeometryFor(uint32_t ring_count) {
  const uint32_t min_slot = MinSlotSizeFor(g_config.max_frames);
  const uint64_t per_ring =
      static_cast<uint64_t>(g_config.ring_kib) * 1024 / ring_count;
  uint32_t slots = 16;
  while (uint64_t{slots} * 2 * min_slot <= per_ring &&
         slots * 2 <= ringfile::kMaxSlotsPerRing) {
    slots *= 2;
  }
  uint64_t slot_size =
      (per_ring / slots) & ~uint64_t{ringfile::kSlotAlignment - 1};
  if (slot_size < min_slot) slot_size = min_slot;
  if (slot_size > ringfile::kMaxSlotSize) slot_size = ringfile::kMaxSlotSize;
  return {slots, static_cast<uint32_t>(slot_size)};
}

// RINGPROF_DIR_MAX_MIB: see ring_dir_cap.h.
int MakeRoom(uint64_t file_size) {
  return MakeRoomInRingDir(g_config.dir,
                           static_cast<uint64_t>(g_config.dir_max_mib) << 20,
                           file_size);
}

// Creates `<dir>/<service>.<pid>.<start ticks>.ring`. An exec'd image keeps
// the pid and start time: when the name is taken (O_EXCL), `.1`, `.2`, ...
// are tried before the extension. Returns 0 or an errno value.
int CreateRingFile(RingWriter* writer) {
  const uint32_t pid = static_cast<uint32_t>(getpid());
  const uint64_t start_ticks = ProcessStartTicks(0);
  const mode_t dir_mode = (g_config.file_mode & 0060) != 0 ? 0750 : 0700;
  MakeDirectories(g_config.dir, dir_mode);

  const RingGeometry geometry = RingGeometryFor(kRingFileRings);
  const uint64_t file_size = ringfile::FileSizeFor(
      kRingFileRings, geometry.slots_per_ring, geometry.slot_size);
  // After the directory exists, before the file: the cap counts it.

  ringfile::WriterOptions options;
  options.mode = g_config.file_mode;
  options.ring_count = kRingFileRings;
  options.slots_per_ring = geometry.slots_per_ring;
  g_ring_slots.store(kRingFileRings * geometry.slots_per_ring,
                     std::memory_order_relaxed);
  options.slot_size = geometry.slot_size;
  options.service_name = g_config.service_name;
  options.executable = ExecutablePath();
  options.pid = pid;
  options.process_start_ticks = start_ticks;
  // Pre-faulted only where faults are expensive (gVisor): natively, a
  // process pays for the pages it writes, not for the whole file up front.
  options.populate = ClockReadIsSystemCall();
  // Natively, the slots' blocks are reserved as the appends reach them: a
  // short-lived process (a compiler in a build) does not pay for the whole
  // 8 MiB (~3 ms of tmpfs allocation) to write a few hundred samples.
  options.reserve_as_written = true;

  // No signal handler runs during creation: posix_fallocate of a large ring
  // fails with EINTR when a signal arrives (in a fork child the CPU timer is
  // already armed), and a handler must not find the writer half-made.
  sigset_t all, saved;
  sigfillset(&all);
  // Raw: the CPU timer's pthread_sigmask interposer would keep its signal
  // unblocked.
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &saved, _NSIG / 8);
  int error = MakeRoom(file_size);
  if (error == 0) error = EEXIST;
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
    // A taken name is skipped before the file is made (Create would find
    // out only after sizing and mapping it).
    if (faccessat(AT_FDCWD, options.path, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
      error = EEXIST;
      continue;
    }
    error = writer->Create(options);
  }
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, nullptr, _NSIG / 8);
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
  if (error == EDQUOT) {
    line.Add("rings of live processes fill RINGPROF_DIR_MAX_MIB=")
        .AddNumber(static_cast<uint64_t>(g_config.dir_max_mib));
  } else if (name != nullptr) {
    line.Add(name);
  } else {
    line.Add("error ").AddNumber(static_cast<uint64_t>(error));
  }
  line.Add("); profiling is off for this process\n");
  ReportConfigError(line.c_str());
}

// Opens the session's ring file; false (reported) when it cannot.
bool OpenRing() {
  if (g_writer == nullptr) g_writer = new (g_writer_storage) RingWriter();
  // A fork child still maps its parent's file (RestartSessionInForkChild
  // leaves it for the child's first record): only the child's view goes.
  if (g_writer->ok()) g_writer->Close();
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

void RecordMainThreadStack() {
  // The initial thread's stack: [rsp now, its top] is the part in use, and
  // the stack only grows down from there; the low end is bounded by
  // RLIMIT_STACK but we only need the top to stop runaway unwinds.
  tls_thread_state.stack_high = InitialStackTop();
  tls_thread_state.stack_low = 0;
}

}  // namespace

bool RingFileOpen() { return g_enabled.load(std::memory_order_acquire); }

bool Enabled() {
  return g_enabled.load(std::memory_order_acquire) ||
         g_ring_pending.load(std::memory_order_relaxed) ||
         g_ring_opening.load(std::memory_order_acquire) > 0;
}

namespace {

// Records that make a pending ring file be created: the samples and what
// belongs to them. Module records, thread exits and the process end are
// dropped while the file is pending (the module table is recorded into the
// file when it is created).
bool CreatesRing(ringfile::RecordType type) {
  switch (type) {
    case ringfile::RecordType::kModuleMap:
    case ringfile::RecordType::kModuleUnmap:
    case ringfile::RecordType::kThreadExit:
    case ringfile::RecordType::kProcessEnd:
    case ringfile::RecordType::kEnvironmentFact:
      return false;
    default:
      return true;
  }
}

// The first record that needs the file creates it (one thread wins; records
// of others racing with it are dropped), then re-records the module map
// before the record that triggered it. If this thread interrupted itself
// inside a module-table update (a CPU-timer signal), the table is recorded
// by the next sampled path instead.
bool OpenPendingRing() {
  // Enabled() stays true while the winner creates the file: a thread that
  // starts meanwhile must still be set up (stack bounds, CPU timer).
  g_ring_opening.fetch_add(1, std::memory_order_acq_rel);
  if (!g_ring_pending.exchange(false, std::memory_order_acq_rel)) {
    g_ring_opening.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  ReentryGuard guard;
  const bool opened = OpenRing();
  if (opened) g_enabled.store(true, std::memory_order_release);
  g_ring_opening.fetch_sub(1, std::memory_order_acq_rel);
  if (!opened) return false;
  if (!TryEmitAllModules()) RequestModuleReemit();
  EmitEnvironmentFacts();
  return true;
}

}  // namespace

bool AppendRecordInRing(uint32_t shard, ringfile::RecordType type,
                        const void* head, uint32_t head_size, const void* tail,
                        uint32_t tail_size) {
  if (!g_enabled.load(std::memory_order_acquire) &&
      !(g_ring_pending.load(std::memory_order_relaxed) && CreatesRing(type) &&
        OpenPendingRing())) {
    return false;
  }
  return g_writer->TryAppend(type, head, head_size, tail, tail_size, shard);
}

bool AppendRecord(ringfile::RecordType type, const void* head,
                  uint32_t head_size, const void* tail, uint32_t tail_size) {
  return AppendRecordInRing(CurrentTid(), type, head, head_size, tail,
                            tail_size);
}

void PrefetchRecordSlot() {
  if (g_enabled.load(std::memory_order_acquire)) {
    g_writer->PrefetchNextSlot(CurrentTid());
  }
}

uint32_t CurrentTid() {
  uint32_t tid = tls_thread_state.tid;
  if (__builtin_expect(tid == 0, 0)) {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    tls_thread_state.tid = tid;
  }
  return tid;
}

uint64_t MonotonicNowNs() { return SampleClockNowNs(); }

int MaxFrames() { return g_config.max_frames; }

bool ClockReadIsSystemCall() { return ClockReadIsSlow(); }

uint32_t RingSlots() { return g_ring_slots.load(std::memory_order_relaxed); }

void NoteSampleModules(const uint64_t* frames, int frame_count) {
  if (HaveDlFindObject()) NoteStackModules(frames, frame_count);
}

void MaybeReemitSampleModules(uint64_t now_ns) {
  if (HaveDlFindObject() && MaybeReemitModules(now_ns)) {
    EmitEnvironmentFacts();  // with each copy of the module map
  }
}

const Config& SessionConfig() { return g_config; }
const char* ExecutablePath() {
  ReadExecutablePath();
  // Only while another thread is reading it (never on the sampled paths:
  // the ring file's creation reads it before anything is emitted).
  return g_executable_state.load(std::memory_order_acquire) == kRead
             ? g_executable
             : "";
}
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

namespace {

// RINGPROF_PTRACER_ANY (config.h). Linux keeps a ptracer exception per
// process, not across fork, so fork children set it again. Without YAMA
// the call fails (EINVAL), and nothing needs it.
void AllowAnyPtracerIfConfigured() {
  if (g_config.ptracer_any) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
}

}  // namespace

void StartSession() {
  ReentryGuard guard;  // nothing below is sampled
  // The default service name: the name the program was started as (a
  // symlink's, e.g. redis-server -> redis-check-rdb), else the executable's.
  // (The executable's path is read only when needed: by the ring file's
  // creation, or here when the program has no name.)
  const bool have_invocation_name =
      program_invocation_name != nullptr && *program_invocation_name != '\0';
  RefreshRingprofEnv();
  LoadConfig(LookupRingprofEnv, ReportConfigError,
             have_invocation_name ? program_invocation_name : ExecutablePath(),
             &g_config);
  if (g_config.disabled) return;
  AllowAnyPtracerIfConfigured();
  SetDiagnosticsToStderr(g_config.log_stderr);
  ConfigureSampler();
  RecordMainThreadStack();
  // (The unwinder needs no warm-up: the CFI walker sets nothing up, and
  // libgcc's is warmed where it is opened, libc_features.cc.)
  // The file is created by the first sample (OpenPendingRing).
  g_ring_pending.store(true, std::memory_order_release);
  RecordLoadedModules();  // the table only: nothing is written yet
  g_free_tracking.store(
      g_config.track_frees && LiveSetInit(g_config.max_frames),
      std::memory_order_relaxed);
}

void CreatePendingRing() {
  if (g_ring_pending.load(std::memory_order_acquire)) OpenPendingRing();
}

void EndSession(int exit_status) {
  // A process that never recorded anything has no file: keep it so.
  g_ring_pending.store(false, std::memory_order_relaxed);
  if (!g_enabled.load(std::memory_order_acquire)) return;
  FlushLostSamples();
  // What is still allocated at exit, for leak reports (FORMAT.md §5.1),
  // then the module map again, last, where nothing overwrites it: a
  // collector that lost the earlier copies (a short, busy run laps the
  // rings) can still name those stacks.
  // Also when nothing is live: the empty sweep tells a collector that lost
  // frees (programs often free everything at exit, in a burst) that
  // nothing is left.
  if (FreeTrackingOn()) {
    SweepLiveSetNow();
    TryEmitAllModules();
  }
  EmitEnvironmentFacts();  // last too: a lapped ring keeps them
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
  AllowAnyPtracerIfConfigured();
  // The child's only thread inherited the forking thread's TLS.
  ResetModuleMapAfterFork();
  ResetLiveSetSweepAfterFork();
  tls_thread_state.tid = 0;
  tls_thread_state.wait_rng = 0;  // not the parent's draws
  tls_thread_state.name_generation = 0;
  // The thread keeps its tags; the child's file needs their definitions.
  ForgetRecordedTagSets();
  StoreIfDifferent<uint64_t>(g_lost_samples, 0);
  StoreIfDifferent<uint64_t>(g_lost_weight, 0);
  // A thread of the parent that was reading the executable's path is gone.
  if (g_executable_state.load(std::memory_order_relaxed) == kReading) {
    g_executable_state.store(kNotRead, std::memory_order_relaxed);
  }
  // On in the parent: file open, pending, or being created by a thread
  // that does not exist here (so the child starts its own from scratch).
  const bool on = g_enabled.load(std::memory_order_acquire) ||
                  g_ring_pending.load(std::memory_order_relaxed) ||
                  g_ring_opening.load(std::memory_order_relaxed) > 0;
  StoreIfDifferent(g_enabled, false, std::memory_order_release);
  StoreIfDifferent(g_ring_opening, 0);
  // The parent's file stays mapped here, unwritten, until the child makes
  // its own (OpenRing): most children only exec, which unmaps it anyway.
  StoreIfDifferent(g_ring_pending, on, std::memory_order_release);
}

}  // namespace emitter
}  // namespace ringprof
