// A signal-sensitive workload for the CPU-timer sampler's safety tests.
//
//   signal_workload SCENARIO
//
// Each scenario checks its own behaviour and exits 0 only when everything
// the workload did came out right; it prints one "stat NAME VALUE" line per
// measurement and "FAIL: why" for each failed check.
//
// Built twice from this file:
//  - with RINGPROF_IN_PROCESS, linked with the sampler and a fake runtime
//    (fake_runtime.h): the workload drives the sampler's lifecycle itself
//    and also checks the samples (runs under ASan/TSan);
//  - plain, to run under LD_PRELOAD=libringprof.so, where the test reads the
//    ring file.
//
// The sampler's signal is RINGPROF_CPU_SIGNAL when numeric, else SIGRTMAX-4
// (the sampler's default).
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#ifdef RINGPROF_IN_PROCESS
#include "emitter/cpu_timer.h"
#include "ringfile/format.h"
#include "tests/cpu_timer/fake_runtime.h"
#endif

extern "C" int __sigaction(int, const struct sigaction*, struct sigaction*);

namespace {

std::atomic<int> g_failures{0};

void Fail(const char* what) {
  fprintf(stderr, "FAIL: %s\n", what);
  g_failures.fetch_add(1);
}

void Stat(const char* name, long long value) {
  printf("stat %s %lld\n", name, value);
}

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int64_t ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int SamplerSignal() {
  const char* value = getenv("RINGPROF_CPU_SIGNAL");
  if (value != nullptr && *value >= '0' && *value <= '9') return atoi(value);
  return SIGRTMAX - 4;
}

// Lifecycle hooks: what the emitter's pthread_create wrapper and constructor
// do under LD_PRELOAD.
void ProcessStarted() {
#ifdef RINGPROF_IN_PROCESS
  ringprof::emitter::CpuTimerInit();
#endif
}
// The creating thread's view of its mask, which the new thread inherits.
int CreatorBlocksSignal() {
#ifdef RINGPROF_IN_PROCESS
  return ringprof::emitter::CpuTimerAppBlocksSignal();
#else
  return 0;
#endif
}
void ThreadStarted(int creator_blocks_signal) {
#ifdef RINGPROF_IN_PROCESS
  ringprof::emitter::CpuTimerOnThreadStart(creator_blocks_signal);
#else
  (void)creator_blocks_signal;
#endif
}
void ThreadExiting() {
#ifdef RINGPROF_IN_PROCESS
  ringprof::emitter::CpuTimerOnThreadExit();
#endif
}

// A thread that runs ThreadStarted/ThreadExiting around its body.
template <typename Fn>
std::thread Spawn(Fn fn) {
  const int blocks = CreatorBlocksSignal();
  return std::thread([fn, blocks]() {
    ThreadStarted(blocks);
    fn();
    ThreadExiting();
  });
}

std::atomic<uint64_t> g_sink{0};

// Pure computation for about `cpu_ns` of this thread's CPU time.
__attribute__((noinline)) void Spin(int64_t cpu_ns) {
  const int64_t end = ThreadCpuNs() + cpu_ns;
  uint64_t x = 88172645463325252ull;
  while (ThreadCpuNs() < end) {
    for (int i = 0; i < 20000; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    g_sink.store(x, std::memory_order_relaxed);
  }
}

// --- /proc inspection: what the sampler leaves behind ----------------------

// Whether /proc/self/status says `signo` is caught (SigCgt): 1 or 0, or -1
// when the kernel does not say (gVisor has no SigCgt line).
int SignalCaught(int signo) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int caught = -1;
  while (fgets(line, sizeof(line), f) != nullptr) {
    if (strncmp(line, "SigCgt:", 7) == 0) {
      const unsigned long long mask = strtoull(line + 7, nullptr, 16);
      caught = (mask >> (signo - 1)) & 1;
    }
  }
  fclose(f);
  return caught;
}

// The disposition as the kernel has it (past the sampler's interposer,
// which hides its own handler while it runs).
bool DispositionIsDefault(int signo) {
  struct sigaction current;
  __sigaction(signo, nullptr, &current);
  return current.sa_handler == SIG_DFL;
}

// POSIX timers of this process that notify `signo`; -1 when /proc/self/timers
// is not available (gVisor).
int TimersWithSignal(int signo) {
  FILE* f = fopen("/proc/self/timers", "r");
  if (f == nullptr) return -1;
  char line[256];
  int count = 0;
  while (fgets(line, sizeof(line), f) != nullptr) {
    int timer_signal = 0;
    if (sscanf(line, "signal: %d/", &timer_signal) == 1 &&
        timer_signal == signo) {
      ++count;
    }
  }
  fclose(f);
  return count;
}

// --- in-process sample checks ---------------------------------------------

#ifdef RINGPROF_IN_PROCESS
struct ThreadSamples {
  int count = 0;
  int64_t period_sum_ns = 0;
  int in_spin = 0;  // samples whose leaf is inside Spin()
};

ThreadSamples SamplesOf(pid_t tid) {
  ThreadSamples result;
  const uintptr_t spin = reinterpret_cast<uintptr_t>(&Spin);
  for (int i = 0; i < ringprof::cpu_timer_test::FakeSampleCount(); ++i) {
    const auto* sample = ringprof::cpu_timer_test::FakeSample(i);
    if (sample == nullptr || sample->tid != static_cast<uint32_t>(tid)) {
      continue;
    }
    ++result.count;
    result.period_sum_ns += static_cast<int64_t>(sample->cpu_period_ns);
    // Spin is on the stack: as the leaf, below clock_gettime, or below the
    // thread's SIGUSR1 handler (gVisor delivers timer signals together with
    // other signals, at the sentry's entry points). Its body is small, so a
    // pc inside it lies within its first 512 bytes.
    for (int f = 0; f < sample->frame_count && f < 8; ++f) {
      if (sample->frames[f] >= spin && sample->frames[f] < spin + 512) {
        ++result.in_spin;
        break;
      }
    }
  }
  return result;
}
#endif

// Checks that a thread that spun for `cpu_ns` was sampled and that its
// samples' weights add up to its CPU time (in-process build only).
void CheckSampled(const char* name, pid_t tid, int64_t cpu_ns) {
#ifdef RINGPROF_IN_PROCESS
  if (!ringprof::emitter::GetCpuTimerStats().running) return;  // HZ=0
  const int64_t period =
      static_cast<int64_t>(ringprof::emitter::GetCpuTimerStats().period_ns);
  const ThreadSamples s = SamplesOf(tid);
  char stat[128];
  snprintf(stat, sizeof(stat), "%s_samples", name);
  Stat(stat, s.count);
  snprintf(stat, sizeof(stat), "%s_weight_per_mille_of_cpu", name);
  Stat(stat, cpu_ns > 0 ? s.period_sum_ns * 1000 / cpu_ns : 0);
  if (s.count == 0) {
    Fail(name);
    return;
  }
  // The weights cover the CPU time up to the thread's last sample. The
  // kernel notices an expiry on a scheduler tick that finds the thread
  // running, so for a thread that runs in short bursts between blocking
  // reads the unsampled tail can be several periods of CPU.
  if (s.period_sum_ns > cpu_ns + period ||
      s.period_sum_ns < cpu_ns - 3 * period - cpu_ns / 5) {
    fprintf(stderr, "%s: weights %lld ns vs cpu %lld ns\n", name,
            static_cast<long long>(s.period_sum_ns),
            static_cast<long long>(cpu_ns));
    Fail("sample weights do not add up to the thread's CPU time");
  }
#if !defined(__SANITIZE_THREAD__)
  // TSan defers signal handlers to its own safe points, so the stack it
  // lets us see is not the interrupted one.
  if (s.in_spin * 10 < s.count * 8) {
    fprintf(stderr, "%s: %d of %d samples in Spin\n", name, s.in_spin, s.count);
    Fail("samples of a spinning thread are not attributed to Spin");
  }
#endif
#else
  // Under LD_PRELOAD the test finds the samples in the ring file.
  char stat[128];
  snprintf(stat, sizeof(stat), "%s_tid", name);
  Stat(stat, tid);
  snprintf(stat, sizeof(stat), "%s_cpu_ns", name);
  Stat(stat, cpu_ns);
#endif
}

// --- scenario: sensitive ---------------------------------------------------
// Blocking pipe reads and writes, poll/nanosleep loops, an own SIGUSR1
// handler fed by another thread, a sigwait thread, and a signalfd reader,
// all while their threads burn CPU so their timers fire often.

std::atomic<int> g_usr1_received{0};
int g_fd_signal = 0;
void OnUsr1(int) { g_usr1_received.fetch_add(1); }

void PipeTraffic(int64_t* reader_cpu, pid_t* reader_tid) {
  int fds[2];
  if (pipe(fds) != 0) return Fail("pipe");
  fcntl(fds[1], F_SETPIPE_SZ, 4096);  // small: the writer blocks as well
  constexpr int kMessages = 400;
  constexpr int kSize = 1024;
  std::thread writer = Spawn([&]() {
    char buf[kSize];
    for (int m = 0; m < kMessages; ++m) {
      memset(buf, m & 0xff, sizeof(buf));
      Spin(200000);
      size_t done = 0;
      while (done < sizeof(buf)) {
        const ssize_t n = write(fds[1], buf + done, sizeof(buf) - done);
        if (n < 0) {
          Fail(errno == EINTR ? "write on a pipe returned EINTR"
                              : "write on a pipe failed");
          return;
        }
        done += static_cast<size_t>(n);
      }
    }
    close(fds[1]);
  });
  std::thread reader = Spawn([&]() {
    *reader_tid = Gettid();
    char buf[kSize];
    int messages = 0;
    for (;;) {
      size_t got = 0;
      while (got < sizeof(buf)) {
        const ssize_t n = read(fds[0], buf + got, sizeof(buf) - got);
        if (n < 0) {
          Fail(errno == EINTR ? "read on a pipe returned EINTR"
                              : "read on a pipe failed");
          return;
        }
        if (n == 0) break;
        got += static_cast<size_t>(n);
      }
      if (got == 0) break;
      if (got != sizeof(buf) || buf[0] != static_cast<char>(messages & 0xff) ||
          buf[kSize - 1] != static_cast<char>(messages & 0xff)) {
        return Fail("pipe message corrupted or short");
      }
      ++messages;
      Spin(300000);
    }
    if (messages != kMessages) Fail("pipe messages lost");
    *reader_cpu = ThreadCpuNs();
  });
  writer.join();
  reader.join();
  close(fds[0]);
}

// poll() and nanosleep() are never restarted after a handler (signal(7)):
// count how often the sampler makes them return EINTR.
void PollAndSleep(int64_t duration_ns, long long* poll_eintr,
                  long long* sleep_eintr, long long* rounds) {
  int fds[2];
  if (pipe(fds) != 0) return Fail("pipe");
  const int64_t end = MonotonicNs() + duration_ns;
  while (MonotonicNs() < end) {
    Spin(1000000);
    struct pollfd pfd = {fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, 1);
    if (ready < 0) {
      if (errno != EINTR) return Fail("poll failed");
      ++*poll_eintr;
    } else if (ready != 0) {
      return Fail("poll saw data on an empty pipe");
    }
    Spin(1000000);
    struct timespec nap = {0, 500000};
    if (nanosleep(&nap, &nap) != 0) {
      if (errno != EINTR) return Fail("nanosleep failed");
      ++*sleep_eintr;
    }
    ++*rounds;
  }
  close(fds[0]);
  close(fds[1]);
}

int ScenarioSensitive() {
  struct sigaction usr1;
  memset(&usr1, 0, sizeof(usr1));
  usr1.sa_handler = &OnUsr1;
  usr1.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &usr1, nullptr);

  // The sigwait thread and the signalfd thread start with every signal
  // blocked (the usual pattern), so they wait for all of them.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  std::atomic<bool> stop_waiters{false};
  std::atomic<int> usr2_waited{0};
  std::atomic<int> fd_signals_read{0};
  int signal_fd = -1;
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  std::thread sigwaiter = Spawn([&]() {
    sigset_t wait_set;
    sigfillset(&wait_set);
    while (!stop_waiters.load()) {
      siginfo_t info;
      const struct timespec timeout = {0, 100000000};
      const int signo = sigtimedwait(&wait_set, &info, &timeout);
      if (signo < 0) {
        if (errno != EINTR && errno != EAGAIN) {
          return Fail("sigtimedwait failed");
        }
        continue;
      }
      if (signo != SIGUSR2)
        return Fail("sigtimedwait returned a foreign signal");
      usr2_waited.fetch_add(1);
      Spin(2000000);  // CPU between waits: the timer would fire here
    }
  });
  // A real-time signal rather than a default-ignored one such as SIGURG,
  // which gVisor discards even while it is blocked.
  g_fd_signal = SIGRTMIN + 2;
  std::thread fd_reader = Spawn([&]() {
    // Made by the reading thread: gVisor ties a signalfd to its creator.
    sigset_t fd_set;
    sigemptyset(&fd_set);
    sigaddset(&fd_set, g_fd_signal);
    signal_fd = signalfd(-1, &fd_set, SFD_CLOEXEC);
    if (signal_fd < 0) return Fail("signalfd failed");
    while (!stop_waiters.load()) {
      struct pollfd ready = {signal_fd, POLLIN, 0};
      if (poll(&ready, 1, 100) <= 0) continue;
      struct signalfd_siginfo info;
      const ssize_t n = read(signal_fd, &info, sizeof(info));
      if (n < 0) {
        if (errno != EINTR) return Fail("read from signalfd failed");
        continue;
      }
      if (n != sizeof(info) ||
          static_cast<int>(info.ssi_signo) != g_fd_signal) {
        return Fail("signalfd returned a foreign signal");
      }
      fd_signals_read.fetch_add(1);
      Spin(2000000);
    }
  });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);

  // The spinner burns CPU until every signal below was acknowledged (at
  // least 600 ms of it), so it is alive for all of them.
  int64_t spinner_cpu = 0;
  pid_t spinner_tid = 0;
  std::atomic<bool> signals_done{false};
  std::thread spinner = Spawn([&]() {
    spinner_tid = Gettid();
    Spin(600000000);
    while (!signals_done.load()) Spin(10000000);
    spinner_cpu = ThreadCpuNs();
  });

  long long poll_eintr = 0, sleep_eintr = 0, rounds = 0;
  std::thread poller = Spawn(
      [&]() { PollAndSleep(800000000, &poll_eintr, &sleep_eintr, &rounds); });

  // SIGUSR1 to the spinner, SIGUSR2 to the sigwait thread, SIGRTMIN+2 to
  // the signalfd thread, each acknowledged before the next.
  constexpr int kSignals = 50;
  const pthread_t spinner_handle = spinner.native_handle();
  const int64_t deadline = MonotonicNs() + 60000000000;
  for (int i = 0; i < kSignals && MonotonicNs() < deadline; ++i) {
    pthread_kill(spinner_handle, SIGUSR1);
    pthread_kill(sigwaiter.native_handle(), SIGUSR2);
    pthread_kill(fd_reader.native_handle(), g_fd_signal);
    while ((g_usr1_received.load() <= i || usr2_waited.load() <= i ||
            fd_signals_read.load() <= i) &&
           MonotonicNs() < deadline) {
      sched_yield();
    }
  }
  signals_done.store(true);
  Stat("usr1_handled", g_usr1_received.load());
  Stat("usr2_sigwaited", usr2_waited.load());
  Stat("signalfd_reads", fd_signals_read.load());
  if (g_usr1_received.load() != kSignals) Fail("SIGUSR1 deliveries lost");
  if (usr2_waited.load() != kSignals) Fail("sigwait missed SIGUSR2");
  if (fd_signals_read.load() != kSignals) Fail("signalfd missed signals");

  int64_t reader_cpu = 0;
  pid_t reader_tid = 0;
  PipeTraffic(&reader_cpu, &reader_tid);

  stop_waiters.store(true);
  pthread_kill(sigwaiter.native_handle(), SIGUSR2);
  pthread_kill(fd_reader.native_handle(), g_fd_signal);
  sigwaiter.join();
  fd_reader.join();
  close(signal_fd);
  spinner.join();
  poller.join();

  Stat("poll_rounds", rounds);
  Stat("poll_eintr", poll_eintr);
  Stat("nanosleep_eintr", sleep_eintr);
  CheckSampled("spinner", spinner_tid, spinner_cpu);
  CheckSampled("pipe_reader", reader_tid, reader_cpu);
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: backoff -----------------------------------------------------
// The application installs its own handler on the sampler's signal after the
// sampler started: the sampler must give the signal back untouched.

std::atomic<int> g_own_handler_calls{0};
std::atomic<int> g_own_handler_timer_calls{0};
void OnOwnSignal(int, siginfo_t* info, void*) {
  g_own_handler_calls.fetch_add(1);
  if (info->si_code == SI_TIMER) g_own_handler_timer_calls.fetch_add(1);
}

int ScenarioBackoff() {
  const int signo = SamplerSignal();
  std::thread warm = Spawn([]() { Spin(100000000); });
  warm.join();
  struct sigaction seen;
  sigaction(signo, nullptr, &seen);
  if (seen.sa_handler != SIG_DFL) Fail("the sampler's handler is visible");
  Stat("caught_before", SignalCaught(signo));
  Stat("timers_before", TimersWithSignal(signo));

  struct sigaction own;
  memset(&own, 0, sizeof(own));
  own.sa_sigaction = &OnOwnSignal;
  own.sa_flags = SA_SIGINFO;
  struct sigaction old;
  if (sigaction(signo, &own, &old) != 0) Fail("sigaction failed");
  if (old.sa_handler != SIG_DFL) Fail("old disposition is not SIG_DFL");
  const int timers = TimersWithSignal(signo);
  Stat("timers_after", timers);
  if (timers > 0) Fail("timers left after back-off");

  std::thread worker = Spawn([]() { Spin(300000000); });
  Spin(300000000);
  worker.join();
  if (g_own_handler_timer_calls.load() != 0) {
    Fail("the application's handler received sampler signals");
  }
  raise(signo);
  if (g_own_handler_calls.load() != 1) Fail("own handler not called once");
#ifdef RINGPROF_IN_PROCESS
  if (ringprof::emitter::GetCpuTimerStats().running) Fail("still running");
#endif
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: own_sigwait ------------------------------------------------
// The application uses the sampler's signal without a handler: blocks it,
// raises it from its own timer and waits for it with sigwaitinfo. It must
// get every one of its signals (the sampler backs off).

int ScenarioOwnSigwait() {
  const int signo = SamplerSignal();
  Spin(50000000);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signo);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  struct sigevent event;
  memset(&event, 0, sizeof(event));
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = signo;
  event.sigev_value.sival_int = 12345;
  timer_t timer;
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) {
    Fail("timer_create");
    return 1;
  }
  const struct itimerspec every_5ms = {{0, 5000000}, {0, 5000000}};
  timer_settime(timer, 0, &every_5ms, nullptr);
  int own = 0;
  int foreign = 0;
  const int64_t deadline = MonotonicNs() + 10000000000;
  while (own < 20 && MonotonicNs() < deadline) {
    siginfo_t info;
    const struct timespec timeout = {0, 100000000};
    if (sigtimedwait(&set, &info, &timeout) != signo) continue;
    if (info.si_code == SI_TIMER && info.si_value.sival_int == 12345) {
      ++own;
    } else {
      ++foreign;
    }
    Spin(2000000);
  }
  timer_delete(timer);
  Stat("own_timer_signals", own);
  Stat("foreign_signals", foreign);
  if (own != 20) Fail("the application's own timer signals were lost");
  if (foreign != 0) Fail("sigwait returned sampler signals");
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: preinstalled ------------------------------------------------
// The signal is already handled when the sampler starts (in-process build:
// installed before ProcessStarted; LD_PRELOAD: inherited SIG_IGN).

int ScenarioPreinstalled() {
  const int signo = SamplerSignal();
  Spin(200000000);
  const int timers = TimersWithSignal(signo);
  Stat("timers", timers);
  if (timers > 0) Fail("the sampler armed timers on a taken signal");
  struct sigaction seen;
  sigaction(signo, nullptr, &seen);
  Stat("disposition_is_ignore", seen.sa_handler == SIG_IGN);
#ifdef RINGPROF_IN_PROCESS
  if (seen.sa_sigaction != &OnOwnSignal) Fail("the handler was replaced");
  if (ringprof::emitter::GetCpuTimerStats().running) Fail("running");
#endif
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: threads -----------------------------------------------------
// Thread churn: short-lived threads come and go; every one that runs long
// enough is sampled and none leaves its timer behind. "Long enough" is
// 100 ms of CPU, ten timer periods: at 40 ms, one thread of 20 once went
// without a sample inside gVisor on a loaded CI machine, where expiries
// can be noticed late (at the thread's next system call) and one still
// pending when its thread exits goes with it.

int ScenarioThreads() {
  const int signo = SamplerSignal();
  constexpr int kWaves = 20;
  constexpr int kPerWave = 8;
  std::vector<pid_t> tids(kWaves * kPerWave);
  std::vector<int64_t> cpu(kWaves * kPerWave);
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (int i = 0; i < kPerWave; ++i) {
      const int index = wave * kPerWave + i;
      threads.push_back(Spawn([&tids, &cpu, index]() {
        tids[index] = Gettid();
        Spin(index % kPerWave == 0 ? 100000000 : 1000000);
        cpu[index] = ThreadCpuNs();
      }));
    }
    for (auto& t : threads) t.join();
  }
  const int timers = TimersWithSignal(signo);
  Stat("timers_after_churn", timers);
  // Only the main thread's timer may remain.
  if (timers > 1) Fail("exited threads left timers behind");
  for (int index = 0; index < kWaves * kPerWave; index += kPerWave) {
    Stat("long_thread_tid", tids[index]);
  }
#ifdef RINGPROF_IN_PROCESS
  const auto stats = ringprof::emitter::GetCpuTimerStats();
  Stat("threads_armed", static_cast<long long>(stats.threads_armed));
  if (stats.threads_armed < kWaves * kPerWave) Fail("threads not armed");
  int long_sampled = 0;
  for (int index = 0; index < kWaves * kPerWave; index += kPerWave) {
    if (SamplesOf(tids[index]).count > 0) ++long_sampled;
  }
  Stat("long_threads_sampled", long_sampled);
  if (long_sampled != kWaves) Fail("a thread with 100 ms of CPU had no sample");
#endif
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: fork --------------------------------------------------------
// A forked child is sampled on its own (in-process build: the child runs the
// sampler's after-fork hook, as the emitter's atfork handler does).

int ScenarioFork() {
  const int signo = SamplerSignal();
  std::thread busy = Spawn([]() { Spin(200000000); });
  const pid_t child = fork();
  if (child == 0) {
#ifdef RINGPROF_IN_PROCESS
    ringprof::emitter::CpuTimerAfterForkChild();
#endif
    const int timers = TimersWithSignal(signo);
    Spin(200000000);
    int status = timers == 0 ? 2 : 0;  // -1 (no /proc/self/timers) is fine
#ifdef RINGPROF_IN_PROCESS
    if (SamplesOf(Gettid()).count == 0) status = 3;
#endif
    printf("stat child_pid %d\n", static_cast<int>(getpid()));
    fflush(stdout);
    _exit(status);
  }
  int status = 0;
  waitpid(child, &status, 0);
  Stat("child_exit", WIFEXITED(status) ? WEXITSTATUS(status) : 100);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Fail("the child was not sampled or left without timers");
  }
  // And a child that execs this program again (under LD_PRELOAD the new
  // image starts its own sampler; the test looks for its samples).
  const pid_t exec_child = fork();
  if (exec_child == 0) {
    execl("/proc/self/exe", "signal_workload", "spin",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  waitpid(exec_child, &status, 0);
  Stat("exec_child_pid", exec_child);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Fail("the exec'd child failed");
  }
  busy.join();
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: exec_storm --------------------------------------------------
// Fork children that burn CPU and then exec: a sample signal pending across
// exec would kill the new image (exec resets our handler to SIG_DFL; a
// real-time signal's default action terminates). Every child must exit 0.
// Run at a high rate so expiries often land inside the exec syscall.

int ScenarioExecStorm() {
  constexpr int kChildren = 150;
  int killed = 0;
  for (int i = 0; i < kChildren; ++i) {
    const pid_t child = fork();
    if (child == 0) {
#ifdef RINGPROF_IN_PROCESS
      ringprof::emitter::CpuTimerAfterForkChild();
#endif
      Spin(3000000);
      char arg0[] = "true";
      char* argv[] = {arg0, nullptr};
      switch (i % 3) {
        case 0:
          execl("/bin/true", "true", static_cast<char*>(nullptr));
          break;
        case 1:
          execvp("true", argv);
          break;
        default:
          execv("/bin/true", argv);
      }
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++killed;
  }
  Stat("exec_children", kChildren);
  Stat("exec_children_failed", killed);
  if (killed != 0) Fail("exec'd children died (a pending sample signal?)");
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: leftovers ---------------------------------------------------
// Prints what the sampler leaves in /proc; with the in-process build, also
// shuts the sampler down and checks that nothing is left.

int ScenarioLeftovers() {
  const int signo = SamplerSignal();
  std::thread t = Spawn([]() { Spin(50000000); });
  Spin(50000000);
  Stat("caught_running", SignalCaught(signo));
  Stat("timers_running", TimersWithSignal(signo));
  Stat("default_disposition_running", DispositionIsDefault(signo));
#ifdef RINGPROF_IN_PROCESS
  if (SignalCaught(signo) == 0 || DispositionIsDefault(signo)) {
    Fail("the sampler did not install its handler");
  }
  ringprof::emitter::CpuTimerShutdown();
  Stat("caught_after_shutdown", SignalCaught(signo));
  Stat("timers_after_shutdown", TimersWithSignal(signo));
  if (SignalCaught(signo) == 1) Fail("handler left after shutdown (SigCgt)");
  if (!DispositionIsDefault(signo)) Fail("handler left after shutdown");
  if (TimersWithSignal(signo) > 0) Fail("timers left after shutdown");
  // Where /proc/self/timers is missing (gVisor), a timer left behind would
  // still show itself: catch the signal and burn CPU.
  struct sigaction own;
  memset(&own, 0, sizeof(own));
  own.sa_sigaction = &OnOwnSignal;
  own.sa_flags = SA_SIGINFO;
  sigaction(signo, &own, nullptr);
  Spin(100000000);
  Stat("timer_signals_after_shutdown", g_own_handler_timer_calls.load());
  if (g_own_handler_timer_calls.load() != 0) Fail("a timer still fires");
#endif
  t.join();
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: exceptions / exceptions_jit --------------------------------
// Threads throw and catch C++ exceptions in a loop, so sample signals keep
// landing inside libgcc's unwinder while the handler unwinds too: no
// deadlock, no crash, every throw caught. exceptions_jit first registers an
// .eh_frame as a JIT would (__register_frame_info), after which libgcc looks
// frames up under a mutex and the sampler must not unwind from inside it.

extern "C" void __register_frame_info(const void* begin, void* object);

// A minimal .eh_frame: one CIE (x86-64 "CFA = rsp + 8, return address at
// CFA - 8") and the zero terminator; no FDEs.
alignas(8) const unsigned char kEhFrame[] = {
    20,   0,    0, 0,  // length
    0,    0,    0, 0,  // CIE id
    1,                 // version
    'z',  'R',  0,     // augmentation
    1,                 // code alignment
    0x78,              // data alignment -8
    16,                // return address register
    1,    0x1b,        // augmentation data: FDE pointer encoding
    0x0c, 7,    8,     // DW_CFA_def_cfa rsp 8
    0x90, 1,           // DW_CFA_offset rip, CFA-8
    0,    0,           // DW_CFA_nop padding
    0,    0,    0, 0,  // terminator
};
alignas(16) unsigned char g_frame_object[256];

__attribute__((noinline)) void ThrowFrom(int depth) {
  if (depth == 0) throw depth;
  ThrowFrom(depth - 1);
  g_sink.fetch_add(1, std::memory_order_relaxed);  // not a tail call
}

int ScenarioExceptions(bool register_frames) {
  if (register_frames) __register_frame_info(kEhFrame, g_frame_object);
  std::atomic<long long> caught{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.push_back(Spawn([&caught]() {
      const int64_t end = ThreadCpuNs() + 300000000;
      while (ThreadCpuNs() < end) {
        for (int i = 0; i < 20; ++i) {
          try {
            ThrowFrom(16);
          } catch (int) {
            caught.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    }));
  }
  for (auto& t : threads) t.join();
  Stat("caught", caught.load());
  if (caught.load() == 0) Fail("no exception caught");
#ifdef RINGPROF_IN_PROCESS
  const auto stats = ringprof::emitter::GetCpuTimerStats();
  Stat("samples", static_cast<long long>(stats.samples_recorded));
  Stat("samples_pc_only", static_cast<long long>(stats.samples_pc_only));
  if (stats.running && stats.samples_recorded == 0) Fail("no samples");
  // With frames registered, every sample keeps only the interrupted pc.
  if (stats.running && register_frames &&
      stats.samples_pc_only != stats.samples_recorded) {
    Fail("registered frames, but samples were unwound");
  }
#endif
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: masks (in-process only) -------------------------------------
// A thread that blocks every signal (as xz's workers do) is still sampled,
// and the application sees exactly the mask it set.

int ScenarioMasks() {
  sigset_t all;
  sigfillset(&all);
  sigset_t previous;
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t tid = 0;
  int64_t cpu = 0;
  int sees_blocked = 0;
  int kernel_blocks = -1;
  std::thread worker = Spawn([&]() {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    Spin(200000000);
    cpu = ThreadCpuNs();
    sigset_t seen;
    pthread_sigmask(SIG_BLOCK, nullptr, &seen);
    sees_blocked = sigismember(&seen, SamplerSignal());
    sigset_t kernel;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &kernel, _NSIG / 8);
    kernel_blocks = sigismember(&kernel, SamplerSignal());
  });
  worker.join();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  Stat("app_sees_blocked", sees_blocked);
  Stat("kernel_blocks", kernel_blocks);
  if (sees_blocked != 1) Fail("the application's mask query lost the signal");
#ifdef RINGPROF_IN_PROCESS
  if (ringprof::emitter::GetCpuTimerStats().running) {
    if (kernel_blocks != 0) Fail("the sampler's signal is blocked for real");
    CheckSampled("blocked_thread", tid, cpu);
  }
#endif
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: unsampled (in-process only) ----------------------------------
// A thread that starts with the sampler's signal (alone) blocked cannot be
// sampled; when it exits, its whole CPU time is recorded in one frameless
// sample flagged kSampleThreadNotSampled, so profiles can show it.

int ScenarioUnsampled() {
#ifdef RINGPROF_IN_PROCESS
  sigset_t ours;
  sigemptyset(&ours);
  sigaddset(&ours, SamplerSignal());
  sigset_t previous;
  // Raw: the sampler's pthread_sigmask would take a mask naming its signal
  // alone as the application using it, and back off.
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, &ours, &previous, _NSIG / 8);
  pid_t tid = 0;
  int64_t cpu = 0;
  std::thread worker = Spawn([&]() {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    Spin(100000000);
    cpu = ThreadCpuNs();
  });
  worker.join();
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &previous, nullptr, _NSIG / 8);
  int marked = 0;
  int64_t marked_ns = 0;
  int other = 0;
  for (int i = 0; i < ringprof::cpu_timer_test::FakeSampleCount(); ++i) {
    const auto* sample = ringprof::cpu_timer_test::FakeSample(i);
    if (sample == nullptr || sample->tid != static_cast<uint32_t>(tid)) {
      continue;
    }
    if ((sample->flags & ringprof::ringfile::kSampleThreadNotSampled) != 0) {
      ++marked;
      marked_ns += static_cast<int64_t>(sample->cpu_period_ns);
    } else {
      ++other;
    }
  }
  Stat("not_sampled_records", marked);
  Stat("timer_samples", other);
  Stat("recorded_per_mille_of_cpu", cpu > 0 ? marked_ns * 1000 / cpu : 0);
  if (marked != 1) Fail("the unsampled thread's CPU was not recorded once");
  if (other != 0) Fail("a thread with the signal blocked took samples");
  if (marked_ns < cpu * 9 / 10) Fail("the recorded CPU time falls short");
#endif
  return g_failures.load() == 0 ? 0 : 1;
}

// --- scenario: spin (an exec target) ---------------------------------------

int ScenarioSpin() {
  Spin(200000000);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s sensitive|backoff|preinstalled|threads|fork|"
            "leftovers|own_sigwait|exceptions|exceptions_jit|spin|exec_storm|"
            "masks|unsampled\n",
            argv[0]);
    return 2;
  }
  const char* scenario = argv[1];
  setvbuf(stdout, nullptr, _IOLBF, 0);
#ifdef RINGPROF_IN_PROCESS
  if (strcmp(scenario, "preinstalled") == 0) {
    struct sigaction own;
    memset(&own, 0, sizeof(own));
    own.sa_sigaction = &OnOwnSignal;
    own.sa_flags = SA_SIGINFO;
    sigaction(SamplerSignal(), &own, nullptr);
  }
#endif
  ProcessStarted();
  int status = 2;
  if (strcmp(scenario, "sensitive") == 0) status = ScenarioSensitive();
  if (strcmp(scenario, "backoff") == 0) status = ScenarioBackoff();
  if (strcmp(scenario, "preinstalled") == 0) status = ScenarioPreinstalled();
  if (strcmp(scenario, "threads") == 0) status = ScenarioThreads();
  if (strcmp(scenario, "fork") == 0) status = ScenarioFork();
  if (strcmp(scenario, "exec_storm") == 0) status = ScenarioExecStorm();
  if (strcmp(scenario, "leftovers") == 0) status = ScenarioLeftovers();
  if (strcmp(scenario, "spin") == 0) status = ScenarioSpin();
  if (strcmp(scenario, "masks") == 0) status = ScenarioMasks();
  if (strcmp(scenario, "unsampled") == 0) status = ScenarioUnsampled();
  if (strcmp(scenario, "own_sigwait") == 0) status = ScenarioOwnSigwait();
  if (strcmp(scenario, "exceptions") == 0) status = ScenarioExceptions(false);
  if (strcmp(scenario, "exceptions_jit") == 0) {
    status = ScenarioExceptions(true);
  }
  printf("result %s %s\n", scenario, status == 0 ? "ok" : "failed");
  return status;
}
