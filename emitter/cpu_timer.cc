// The CPU-timer sample source. Contract in cpu_timer.h, design notes and the
// user-visible effects in CPU_TIMER.md.
//
// How it works, in one paragraph: every thread gets its own POSIX timer on
// its own CPU-time clock (timer_create(CLOCK_THREAD_CPUTIME_ID) with
// SIGEV_THREAD_ID), so a thread is interrupted only after it has itself
// consumed CPU, and the signal lands on that very thread. The thread's CPU
// time is cut into periods of 1/RINGPROF_CPU_HZ, and each period is sampled
// once, at a uniformly random point inside it (stratified sampling: the
// handler re-arms the timer, an absolute expiry on the thread's CPU clock,
// for the next period's point; the maths is below, at ExpiryPeriods, and in
// CPU_TIMER.md). A sample weighs the periods it stands for, 1 + si_overrun,
// times the period; it captures the stack through the signal frame and
// appends a CpuSample. Timers are made with raw syscalls (no glibc timer
// bookkeeping, nothing allocated) and tracked in a fixed lock-free registry
// so that Shutdown can delete every one of them.
#include "emitter/cpu_timer.h"

#include <signal.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "emitter/arch/arch.h"
#include "emitter/config.h"
#include "emitter/fork_child.h"
#include "emitter/large_table.h"
#include "emitter/libc_imports.h"
#include "emitter/loaded_symbols.h"
#include "emitter/runtime.h"
#include "emitter/sample_points.h"
#include "emitter/signal_set.h"
#include "emitter/stderr_line.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

// ---------------------------------------------------------------------------
// Sample limits.

// Frames we keep per sample, and the extra room for the handler's own frames
// (handler, CaptureStack, libgcc, the sigreturn trampoline) that are cut off.
constexpr int kMaxSampleFrames = 256;
constexpr int kHandlerFrameSlack = 16;

// sigev_value of our timers, checked in the handler so that a stray
// sigqueue() of our signal is not taken for a sample.
constexpr int kTimerCookie = 0x52505443;  // "RPTC"

// ---------------------------------------------------------------------------
// Process-wide state.

enum class State : int {
  kOff = 0,      // never started (disabled, or the signal was taken)
  kRunning = 1,  // handler installed, threads get timers
  kStopped = 2,  // shut down or backed off; nothing left behind
};

std::atomic<State> g_state{State::kOff};
int g_signal = 0;
int64_t g_period_ns = 0;
pid_t g_owner_pid = 0;  // the process whose timers the registry holds
struct sigaction g_app_disposition;  // what was there before our handler

// Whether the process registered frames with libgcc (__register_frame*,
// done by JITs). libgcc's _Unwind_Find_FDE is reentrant (lock-free
// _dl_find_object) until the first registration; from then on it takes a
// mutex, and samples keep only the interrupted pc (see RecordSample).
std::atomic<bool> g_frames_registered{false};

std::atomic<uint64_t> g_samples_recorded{0};
std::atomic<uint64_t> g_samples_dropped{0};
std::atomic<uint64_t> g_samples_pc_only{0};
std::atomic<uint64_t> g_threads_armed{0};
std::atomic<uint64_t> g_threads_skipped{0};
std::atomic<uint64_t> g_instances_given_back{0};
std::atomic<bool> g_reported_backoff{false};
std::atomic<bool> g_reported_arm_failure{false};

// The timer registry: every live timer of this process, so that Shutdown
// can delete the timers of all threads. A slot holds kFree, kArming (a
// thread is creating its timer), kAbandoned (Shutdown ran while it was) or
// the kernel timer id + 1. Ownership of an id moves only by CAS, so each
// timer is deleted exactly once, by its thread or by Shutdown.
constexpr int kMaxTimers = 4096;
constexpr int64_t kFree = 0;
constexpr int64_t kArming = -1;
constexpr int64_t kAbandoned = -2;
// Bit i: some slot in [64 i, 64 i + 64) may be in use (set before a slot is
// taken, cleared only in a fork child). Scans visit only these chunks, so
// that a process with few threads never touches the rest of the 32 KiB
// registry (zero pages it would otherwise fault in at exit).
constexpr int kChunkSlots = 64;
static_assert(kMaxTimers / kChunkSlots <= 64, "one bit per chunk");
std::atomic<uint64_t> g_used_chunks{0};
// The first chunk lives with the small variables and the rest in a large
// table (large_table.h): a process's first thread takes its slot in the
// first chunk (ReserveSlot), so a process with a few threads touches no
// registry page of its own.
std::atomic<int64_t> g_registry_head[kChunkSlots];
RINGPROF_LARGE_TABLE std::atomic<int64_t>
    g_registry_tail[kMaxTimers - kChunkSlots];

std::atomic<int64_t>& Registry(int slot) {
  return slot < kChunkSlots ? g_registry_head[slot]
                            : g_registry_tail[slot - kChunkSlots];
}

// Calls visit(slot) for every slot of a chunk that may be in use.
template <typename Visit>
void ForEachUsedSlot(Visit visit) {
  const uint64_t used = g_used_chunks.load(std::memory_order_acquire);
  for (int chunk = 0; chunk < kMaxTimers / kChunkSlots; ++chunk) {
    if ((used >> chunk & 1) == 0) continue;
    for (int slot = chunk * kChunkSlots; slot < (chunk + 1) * kChunkSlots;
         ++slot) {
      visit(slot);
    }
  }
}

// Per-thread state, in initial-exec TLS (no __tls_get_addr, safe in a
// signal handler). slot < 0: this thread has no timer.
//
// CPU times below are absolute, on the thread's CPU clock.
struct ThreadTimer {
  int32_t slot;
  int32_t timer_id;
  // Start of the period whose sample point the timer is armed for (the
  // periods before it are accounted).
  int64_t period_start_ns;
  // CPU time of samples the ring refused (e.g. while another thread was
  // creating the file): added to the thread's next sample, so the thread's
  // total stays whole.
  uint64_t unrecorded_ns;
  // Where in each period the thread is sampled (sample_points.h).
  SamplePoints points;
};
__thread ThreadTimer t_timer
    __attribute__((tls_model("initial-exec"))) = {-1, 0, 0, 0, {0, 0, 0, 0}};

// Whether the application believes this thread blocks our signal. The
// sampler keeps the signal out of the kernel's mask (pthread_sigmask and
// sigprocmask are interposed, see the end of this file) so that threads that
// block everything are still sampled, and answers mask queries from this
// bit, so the application sees the mask it set.
__thread int t_app_blocks_signal __attribute__((tls_model("initial-exec"))) = 0;

// ---------------------------------------------------------------------------
// Syscall wrappers (raw: glibc's timer_create keeps no state for
// SIGEV_THREAD_ID timers, but the raw calls make "allocation-free" obvious).

int TimerCreate(pid_t tid, int* timer_id) {
  struct sigevent event;
  memset(&event, 0, sizeof(event));
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = g_signal;
  event.sigev_value.sival_int = kTimerCookie;
  event._sigev_un._tid = tid;
  return static_cast<int>(
      syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &event, timer_id));
}

// Arms the thread's timer for the sample point of the period that starts at
// timer.period_start_ns, absolute on the thread's CPU clock (a point already
// past fires at once). The interval keeps later expiries one period apart,
// so a signal delivered late counts the periods it missed in si_overrun.
int TimerArmInPeriod(ThreadTimer& timer) {
  const int64_t at_ns =
      timer.period_start_ns + NextSamplePoint(timer.points, g_period_ns);
  struct itimerspec spec;
  spec.it_value.tv_sec = at_ns / 1000000000;
  spec.it_value.tv_nsec = at_ns % 1000000000;
  spec.it_interval.tv_sec = g_period_ns / 1000000000;
  spec.it_interval.tv_nsec = g_period_ns % 1000000000;
  return static_cast<int>(syscall(SYS_timer_settime, timer.timer_id,
                                  TIMER_ABSTIME, &spec, nullptr));
}

void TimerDelete(int timer_id) { syscall(SYS_timer_delete, timer_id); }

// (Around every fork of a shell: the mask interposers ask it of each set
// that names our signal.)
bool HoldsEveryRealtimeSignal(const sigset_t* set) {
  return SignalRangeInSet(set, SIGRTMIN, SIGRTMAX);
}

// The kernel's signal mask, past our pthread_sigmask/sigprocmask
// interposers (which the emitter's own calls would otherwise reach too).
int RawSigmask(int how, const sigset_t* set, sigset_t* old) {
  return syscall(SYS_rt_sigprocmask, how, set, old, _NSIG / 8) == 0 ? 0 : errno;
}

// Eight of the random bytes the kernel gives each exec'd image (AT_RANDOM),
// or 0: what tells apart the seeds of processes whose first threads have
// the same id (pid 1 of each container) and the same CPU time (gVisor's
// clocks advance in 10 ms steps). Threads and fork children of one image
// share them and differ by thread id. No clock read, no system call.
uint64_t ExecRandom() {
  const auto* bytes = reinterpret_cast<const unsigned char*>(
      static_cast<uintptr_t>(getauxval(AT_RANDOM)));
  uint64_t value = 0;
  if (bytes != nullptr) memcpy(&value, bytes, sizeof(value));
  return value;
}

// The calling thread's CPU clock, or -1: a system call, also natively (the
// vDSO serves no CPU clock, it would only forward the call), made directly.
int64_t ThreadCpuNs() {
  struct timespec ts;
  if (syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// ---------------------------------------------------------------------------
// The real sigaction, past our interposer (signal_interpose.cc).

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
std::atomic<SigactionFn> g_next_sigaction{nullptr};

int NoSigaction(int, const struct sigaction*, struct sigaction*) {
  errno = ENOSYS;
  return -1;
}

SigactionFn NextSigaction() {
  SigactionFn next = g_next_sigaction.load(std::memory_order_acquire);
  if (next == nullptr) {
    // RTLD_NEXT keeps whatever sits between us and libc (a sanitizer
    // runtime, another preload) in the chain.
    next = reinterpret_cast<SigactionFn>(NextSymbol("sigaction"));
    if (next == nullptr) next = __sigaction;  // glibc's name (weak)
    if (next == nullptr) next = NoSigaction;
    g_next_sigaction.store(next, std::memory_order_release);
  }
  return next;
}

// ---------------------------------------------------------------------------
// The signal handler.

uintptr_t InterruptedPc(void* ucontext) {
  return static_cast<uintptr_t>(arch::FromSignalContext(ucontext).pc);
}

// Finds the interrupted frame in a stack captured from the handler: the
// unwinder reports it as the exact pc or pc - 1, depending on whether it
// treats the signal frame's successor like a return address.
int FindInterruptedFrame(const uint64_t* frames, int count, uintptr_t pc) {
  for (int i = 0; i < count; ++i) {
    if (frames[i] == pc || frames[i] + 1 == pc || frames[i] == pc + 1) {
      return i;
    }
  }
  return -1;
}

// The periods a timer signal stands for, and the next period's start.
//
// The thread's CPU time is cut into periods of length P from when its timer
// was armed, and each period is sampled once, at a random point inside it
// (sample_points.h); a sample weighs the periods it closes. For any
// function, the time t it spends in a period is hit with probability t / P:
// the expected weight is t, for any work, periodic or not (a thread's last,
// partial period of length r is sampled with probability r / P: unbiased
// too). The variance is P^2 p (1 - p), p = t / P, for each period where the
// function starts or stops, and nothing for periods it fills or misses; the
// sample points spread over a block of periods (sample_points.h) lower it
// further for work in step with P.
//
// A signal delivered late (natively expiries are noticed on scheduler
// ticks, in gVisor at its 10 ms clock steps; or the thread had it blocked)
// carries the further expiries it merged in si_overrun, one per period (the
// timer's interval), so it stands for 1 + si_overrun periods; the kernel
// counts them at the first period's offset, uniform too. If the next
// period's point is already past when the handler re-arms, the timer fires
// at once and that period is sampled at the same stack.
int64_t ExpiryPeriods(const siginfo_t* info) {
  const int64_t periods = 1 + (info->si_overrun > 0 ? info->si_overrun : 0);
  t_timer.period_start_ns += periods * g_period_ns;
  return periods;
}

void RecordSample(void* ucontext, uint64_t now_ns, uint64_t period_ns) {
  uint64_t frames[kMaxSampleFrames + kHandlerFrameSlack];
  int max_frames = MaxFrames();
  if (max_frames > kMaxSampleFrames || max_frames <= 0) {
    max_frames = kMaxSampleFrames;
  }
  const uintptr_t pc = InterruptedPc(ucontext);
  uint16_t flags = 0;
  int count = 0;
  int first = 0;
  if (g_frames_registered.load(std::memory_order_relaxed)) {
    // The process registered frames (a JIT): from now on libgcc looks up
    // every frame under its object mutex, and this thread may hold it right
    // now — inside libgcc, or in a malloc or pthread call libgcc made while
    // holding it — so unwinding again could deadlock. Keep just the pc:
    // the time is still counted, at the right leaf.
    frames[0] = pc;
    count = 1;
    flags = ringfile::kSampleTruncated;
    g_samples_pc_only.fetch_add(1, std::memory_order_relaxed);
  } else {
    bool truncated = false;
    count =
        CaptureStack(frames, max_frames + kHandlerFrameSlack, 0, &truncated);
    first = FindInterruptedFrame(frames, count, pc);
    if (first < 0) {
      // The unwinder did not get through the signal frame.
      frames[0] = pc;
      count = 1;
      first = 0;
      flags = ringfile::kSampleTruncated;
      g_samples_pc_only.fetch_add(1, std::memory_order_relaxed);
    } else {
      frames[first] = pc;  // the exact interrupted instruction
      count -= first;
      if (count > max_frames) {
        count = max_frames;
        truncated = true;
      }
      if (truncated) flags = ringfile::kSampleTruncated;
    }
  }

  // A library loaded since start that allocates nothing would otherwise
  // never have its frames placed.
  NoteSampleModules(frames + first, count);
  const SampleTags tags = TagsForSample(now_ns);
  ringfile::CpuSample sample;
  sample.monotonic_ns = now_ns;
  sample.tid = CurrentTid();
  sample.frame_count = static_cast<uint16_t>(count);
  sample.flags = flags;
  sample.cpu_period_ns = period_ns + t_timer.unrecorded_ns;
  sample.tag_set = tags.tag_set;
  sample.reserved = 0;
  sample.span_id = tags.span_id;
  if (AppendRecord(ringfile::RecordType::kCpuSample, &sample, sizeof(sample),
                   frames + first,
                   static_cast<uint32_t>(count) * sizeof(uint64_t))) {
    t_timer.unrecorded_ns = 0;
    g_samples_recorded.fetch_add(1, std::memory_order_relaxed);
  } else {
    t_timer.unrecorded_ns = sample.cpu_period_ns;
    g_samples_dropped.fetch_add(1, std::memory_order_relaxed);
  }
  // A process whose samples are all CPU samples gets its copies too.
  MaybeReemitSampleModules(now_ns);
}

// An instance of our signal that is not a sample (the application's own
// timer or sigqueue) arrived at a thread whose mask, as the application set
// it, blocks the signal: it must stay pending for the application (e.g. its
// sigwait). Put it back, and block the signal for real when this handler
// returns (in the saved context's mask). The thread then takes no more
// samples, as the application asked.
void GiveBackBlockedInstance(int signo, siginfo_t* info, void* ucontext) {
  ucontext_t* uc = static_cast<ucontext_t*>(ucontext);
  sigaddset(&uc->uc_sigmask, signo);
  syscall(SYS_rt_tgsigqueueinfo, getpid(), CurrentTid(), signo, info);
  g_instances_given_back.fetch_add(1, std::memory_order_relaxed);
}

void OnCpuTimerSignal(int signo, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  const bool sample = info != nullptr && info->si_code == SI_TIMER &&
                      info->si_value.sival_int == kTimerCookie;
  if (!sample && t_app_blocks_signal != 0 && info != nullptr) {
    GiveBackBlockedInstance(signo, info, ucontext);
  } else if (sample && t_timer.slot >= 0 &&
             g_state.load(std::memory_order_relaxed) == State::kRunning &&
             Enabled()) {
    const int64_t periods = ExpiryPeriods(info);
    // Re-armed only while the registry says the timer is still ours (not
    // deleted by a Shutdown on another thread).
    const int slot = t_timer.slot;
    if (Registry(slot).load(std::memory_order_acquire) ==
        static_cast<int64_t>(t_timer.timer_id) + 1) {
      TimerArmInPeriod(t_timer);
    }
    RecordSample(ucontext, MonotonicNowNs(),
                 static_cast<uint64_t>(periods * g_period_ns));
  }
  errno = saved_errno;
}

// ---------------------------------------------------------------------------
// Timers: arming, disarming, the registry.

// `first_thread`: the process's initial thread (or a fork child's), which
// starts probing at slot 0; threads started later probe from a
// tid-dependent place, to keep CAS contention low.
int ReserveSlot(pid_t tid, bool first_thread) {
  const int start =
      first_thread ? 0
                   : static_cast<int>(static_cast<uint32_t>(tid) % kMaxTimers);
  for (int i = 0; i < kMaxTimers; ++i) {
    const int slot = (start + i) % kMaxTimers;
    int64_t expected = kFree;
    if (Registry(slot).load(std::memory_order_relaxed) != kFree) continue;
    g_used_chunks.fetch_or(uint64_t{1} << (slot / kChunkSlots),
                           std::memory_order_acq_rel);
    if (Registry(slot).compare_exchange_strong(expected, kArming,
                                               std::memory_order_acq_rel)) {
      return slot;
    }
  }
  return -1;
}

void ReportArmFailureOnce(const char* what, int error) {
  if (g_reported_arm_failure.exchange(true)) return;
  StderrLine line;
  line.Add(what).Add(" (errno ").AddInt(error).Add(")");
  NoteEnvironmentFact(ringfile::EnvironmentFactKind::kCpuTimerMissesThreads,
                      line.c_str());
}

// A thread the sampler cannot sample. Its CPU time is still accounted when
// it exits (AccountSkippedThread), under a marked frame, so the profile says
// so instead of losing it.
__thread int t_skipped __attribute__((tls_model("initial-exec"))) = 0;

void SkipCurrentThread() {
  t_skipped = 1;
  g_threads_skipped.fetch_add(1, std::memory_order_relaxed);
}

// One CpuSample without frames, flagged kSampleThreadNotSampled, worth the
// thread's whole CPU time.
void AccountSkippedThread() {
  if (t_skipped == 0 ||
      g_state.load(std::memory_order_acquire) != State::kRunning) {
    return;
  }
  t_skipped = 0;
  const int64_t cpu = ThreadCpuNs();
  if (cpu <= 0) return;
  ringfile::CpuSample sample;
  memset(&sample, 0, sizeof(sample));
  sample.monotonic_ns = MonotonicNowNs();
  sample.tid = CurrentTid();
  sample.frame_count = 0;
  sample.flags = ringfile::kSampleThreadNotSampled;
  sample.cpu_period_ns = static_cast<uint64_t>(cpu);
  AppendRecord(ringfile::RecordType::kCpuSample, &sample, sizeof(sample),
               nullptr, 0);
}

// `first_thread`: see ReserveSlot. `known_tid`: the thread's id when the
// caller has it (0: asked for here).
void ArmCurrentThread(bool first_thread = false, pid_t known_tid = 0) {
  if (g_state.load(std::memory_order_acquire) != State::kRunning) return;
  if (t_timer.slot >= 0) return;
  // A thread that starts with every signal blocked (inherited across exec,
  // or set by a raw system call) keeps them blocked in the application's
  // view only: with ours unblocked for real it can be sampled (see
  // t_app_blocks_signal and the mask interposers). One that blocks ours but
  // not every real-time signal may be waiting for it: not armed.
  sigset_t mask;
  if (RawSigmask(SIG_BLOCK, nullptr, &mask) != 0 ||
      (SignalInSet(&mask, g_signal) && !HoldsEveryRealtimeSignal(&mask))) {
    SkipCurrentThread();
    return;
  }
  if (SignalInSet(&mask, g_signal)) {
    t_app_blocks_signal = 1;
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, g_signal);
    RawSigmask(SIG_UNBLOCK, &ours, nullptr);
  }
  const pid_t tid =
      known_tid != 0 ? known_tid : static_cast<pid_t>(syscall(SYS_gettid));
  const int slot = ReserveSlot(tid, first_thread);
  if (slot < 0) {
    SkipCurrentThread();
    ReportArmFailureOnce("more than 4096 live threads", 0);
    return;
  }
  int timer_id = -1;
  if (TimerCreate(tid, &timer_id) != 0) {
    const int error = errno;
    Registry(slot).store(kFree, std::memory_order_release);
    SkipCurrentThread();
    ReportArmFailureOnce("timer_create failed", error);
    return;
  }
  // The first period starts now; its sample point, like every later one,
  // is random, so threads started together are not sampled in lockstep.
  const int64_t now_ns = ThreadCpuNs();
  t_timer.period_start_ns = now_ns > 0 ? now_ns : 0;
  SeedSamplePoints(t_timer.points,
                   (static_cast<uint64_t>(tid) << 32) ^ ExecRandom() ^
                       static_cast<uint64_t>(t_timer.period_start_ns));
  t_timer.unrecorded_ns = 0;
  t_timer.timer_id = timer_id;
  t_timer.slot = slot;
  TimerArmInPeriod(t_timer);
  int64_t expected = kArming;
  if (!Registry(slot).compare_exchange_strong(expected, timer_id + 1,
                                              std::memory_order_acq_rel)) {
    // Shutdown ran meanwhile and left this timer to us.
    t_timer.slot = -1;
    TimerDelete(timer_id);
    Registry(slot).store(kFree, std::memory_order_release);
    return;
  }
  t_skipped = 0;
  g_threads_armed.fetch_add(1, std::memory_order_relaxed);
}

void DisarmCurrentThread() {
  const int slot = t_timer.slot;
  if (slot < 0) return;
  t_timer.slot = -1;  // first, so a late signal is ignored
  int64_t expected = static_cast<int64_t>(t_timer.timer_id) + 1;
  if (Registry(slot).compare_exchange_strong(expected, kFree,
                                             std::memory_order_acq_rel)) {
    TimerDelete(t_timer.timer_id);
  }
}

// Deletes every timer in the registry (only in the process that made them).
void DeleteAllTimers() {
  const bool ours = getpid() == g_owner_pid;
  ForEachUsedSlot([ours](int slot) {
    int64_t value = Registry(slot).load(std::memory_order_acquire);
    while (value != kFree && value != kAbandoned) {
      const int64_t next = value == kArming ? kAbandoned : kFree;
      if (Registry(slot).compare_exchange_weak(value, next,
                                               std::memory_order_acq_rel)) {
        if (value > 0 && ours) TimerDelete(static_cast<int>(value - 1));
        break;
      }
    }
  });
}

// Puts back the disposition the application had before us. Going through
// SIG_IGN first discards any of our signals still pending on some thread, so
// none can reach the restored (usually default: terminate) disposition.
void RestoreDisposition() {
  struct sigaction ignore;
  memset(&ignore, 0, sizeof(ignore));
  ignore.sa_handler = SIG_IGN;
  NextSigaction()(g_signal, &ignore, nullptr);
  NextSigaction()(g_signal, &g_app_disposition, nullptr);
}

// The application is taking our signal: stop sampling and give it back.
void BackOff(int signo) {
  if (g_state.load(std::memory_order_acquire) != State::kRunning) return;
  if (!g_reported_backoff.exchange(true)) {
    StderrLine line;
    line.Add("the application uses signal ")
        .AddInt(signo)
        .Add(
            "; stopped (set RINGPROF_CPU_SIGNAL to another real-time "
            "signal)");
    NoteEnvironmentFact(ringfile::EnvironmentFactKind::kCpuTimerOff,
                        line.c_str());
  }
  CpuTimerShutdown();
  // This thread's mask becomes what the application set. (Other threads
  // that blocked every signal keep ours unblocked: see CPU_TIMER.md.)
  if (t_app_blocks_signal != 0) {
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, signo);
    RawSigmask(SIG_BLOCK, &ours, nullptr);
  }
}

// State first: g_signal is published by the release store of kRunning.
bool OwnsSignal(int signo) {
  return g_state.load(std::memory_order_acquire) == State::kRunning &&
         signo == g_signal;
}

}  // namespace

// ---------------------------------------------------------------------------
// Lifecycle.

void CpuTimerInit() {
  static std::atomic<bool> initialized{false};
  if (initialized.exchange(true)) return;
  // RINGPROF_CPU_* (config.h).
  CpuTimerConfig config;
  LoadCpuTimerConfig(LookupRingprofEnv, ReportConfigError, &config);
  const int hz = config.hz;
  g_signal = config.signal;
  if (hz == 0 || !Enabled()) return;
  g_period_ns = 1000000000 / hz;

  struct sigaction current;
  if (NextSigaction()(g_signal, nullptr, &current) != 0) return;
  const bool has_handler = (current.sa_flags & SA_SIGINFO) != 0
                               ? current.sa_sigaction != nullptr
                               : current.sa_handler != SIG_DFL;
  if (has_handler) {
    StderrLine line;
    line.Add("signal ").AddInt(g_signal).Add(
        " is already handled by the application (set "
        "RINGPROF_CPU_SIGNAL to another real-time signal)");
    NoteEnvironmentFact(ringfile::EnvironmentFactKind::kCpuTimerOff,
                        line.c_str());
    return;
  }
  g_app_disposition = current;

  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = &OnCpuTimerSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;  // sa_mask: empty (memset)
  g_owner_pid = static_cast<pid_t>(syscall(SYS_getpid));
  if (NextSigaction()(g_signal, &action, nullptr) != 0) return;
  g_state.store(State::kRunning, std::memory_order_release);
  ArmCurrentThread(/*first_thread=*/true);
}

void CpuTimerOnThreadStart(int app_blocks_signal) {
  t_app_blocks_signal = app_blocks_signal;
  ArmCurrentThread();
}

int CpuTimerAppBlocksSignal() { return t_app_blocks_signal; }

void CpuTimerOnThreadExit() {
  AccountSkippedThread();
  DisarmCurrentThread();
}

void CpuTimerAfterForkChild() {
  if (g_state.load(std::memory_order_acquire) != State::kRunning) return;
  // Timers are not inherited: the registry's ids mean nothing here. (Only
  // taken slots are written: fork_child.h.)
  ForEachUsedSlot(
      [](int slot) { StoreIfDifferent<int64_t>(Registry(slot), kFree); });
  g_used_chunks.store(0, std::memory_order_relaxed);
  // The child's only thread: its id is the process's.
  g_owner_pid = static_cast<pid_t>(syscall(SYS_getpid));
  t_timer.slot = -1;
  ArmCurrentThread(/*first_thread=*/true, g_owner_pid);
}

void CpuTimerShutdown() {
  State expected = State::kRunning;
  if (!g_state.compare_exchange_strong(expected, State::kStopped)) return;
  t_timer.slot = -1;
  DeleteAllTimers();
  RestoreDisposition();
}

bool CpuTimerBeforeExec() {
  if (g_state.load(std::memory_order_acquire) != State::kRunning) return false;
  // A vfork child shares our memory but has no timers of its own: leave the
  // parent's state alone.
  if (t_timer.slot < 0 ||
      static_cast<pid_t>(syscall(SYS_getpid)) != g_owner_pid) {
    return false;
  }
  sigset_t ours, old_mask;
  sigemptyset(&ours);
  sigaddset(&ours, g_signal);
  RawSigmask(SIG_BLOCK, &ours, &old_mask);
  DisarmCurrentThread();
  // The signal is blocked and the timer gone: whatever is pending now is all
  // there will be. Consume it (raw syscall: past our sigtimedwait wrapper).
  const struct timespec no_wait = {0, 0};
  while (syscall(SYS_rt_sigtimedwait, &ours, nullptr, &no_wait, _NSIG / 8) ==
         g_signal) {
  }
  // The new image gets the mask the application set (ours included if it
  // asked for that); a failed exec re-arms, which unblocks it again.
  if (t_app_blocks_signal != 0) sigaddset(&old_mask, g_signal);
  RawSigmask(SIG_SETMASK, &old_mask, nullptr);
  return true;
}

void CpuTimerAfterFailedExec() { ArmCurrentThread(); }

CpuTimerStats GetCpuTimerStats() {
  CpuTimerStats stats;
  stats.running = g_state.load(std::memory_order_acquire) == State::kRunning;
  stats.signal = g_signal;
  stats.period_ns = static_cast<uint64_t>(g_period_ns);
  stats.samples_recorded = g_samples_recorded.load(std::memory_order_relaxed);
  stats.samples_dropped = g_samples_dropped.load(std::memory_order_relaxed);
  stats.samples_pc_only = g_samples_pc_only.load(std::memory_order_relaxed);
  stats.threads_armed = g_threads_armed.load(std::memory_order_relaxed);
  stats.threads_skipped = g_threads_skipped.load(std::memory_order_relaxed);
  stats.instances_given_back =
      g_instances_given_back.load(std::memory_order_relaxed);
  return stats;
}

// For signal_interpose.cc (cpu_timer.h).
bool CpuTimerOwnsSignal(int signo) { return OwnsSignal(signo); }
void CpuTimerBackOff(int signo) { BackOff(signo); }
const struct sigaction& CpuTimerAppDisposition() { return g_app_disposition; }
int CpuTimerNextSigaction(int signo, const struct sigaction* action,
                          struct sigaction* old_action) {
  return NextSigaction()(signo, action, old_action);
}
bool CpuTimerRunning() {
  return g_state.load(std::memory_order_acquire) == State::kRunning;
}
int CpuTimerSignal() { return g_signal; }
void CpuTimerNoteFramesRegistered() {
  g_frames_registered.store(true, std::memory_order_relaxed);
}
void CpuTimerSetAppBlocksSignal(int blocks) { t_app_blocks_signal = blocks; }
bool CpuTimerHoldsEveryRealtimeSignal(const sigset_t* set) {
  return HoldsEveryRealtimeSignal(set);
}

}  // namespace emitter
}  // namespace ringprof
