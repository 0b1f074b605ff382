// What the CPU timer's re-arm costs (cpu_timer.cc, TimerArmInPeriod): the
// handler's one system call per sample, timer_settime of the thread's
// CPU-time timer to an absolute point with a 10 ms interval. Measured in
// wall time per call, interleaved round by round against two baselines in
// the same process:
//   null    getppid(), the cheapest system call (the platform's round trip);
//   signal  a signal to this thread (tgkill) handled by an empty SA_SIGINFO
//           handler, what every sample costs already before any unwinding.
// Prints one line: "REARM_NS NULL_NS SIGNAL_NS", the medians over ROUNDS
// rounds of CALLS calls each (tools/bench.d/timer_rearm runs it natively
// and inside gVisor, where a system call is a round trip through the
// sandbox's kernel). The points are an hour of CPU ahead, so the timer
// never fires.
//
// Usage: timer_rearm_bench [CALLS [ROUNDS]]
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void OnSignal(int, siginfo_t*, void*) {}

int g_timer_id = -1;
pid_t g_tid = 0;
pid_t g_pid = 0;

bool Rearm(int i) {
  const int64_t at = 3600000000000 + i % 10000000;
  struct itimerspec spec;
  spec.it_value.tv_sec = at / 1000000000;
  spec.it_value.tv_nsec = at % 1000000000;
  spec.it_interval.tv_sec = 0;
  spec.it_interval.tv_nsec = 10000000;
  return syscall(SYS_timer_settime, g_timer_id, TIMER_ABSTIME, &spec,
                 nullptr) == 0;
}

bool Null(int) { return syscall(SYS_getppid) >= 0; }

bool Signal(int) {
  return syscall(SYS_tgkill, g_pid, g_tid, SIGRTMAX - 4) == 0;
}

// ns per call of `call` over `calls` calls.
template <typename Call>
double NsPerCall(Call call, int calls) {
  const int64_t start = MonotonicNs();
  for (int i = 0; i < calls; ++i) {
    if (!call(i)) {
      std::perror("system call");
      std::exit(1);
    }
  }
  return static_cast<double>(MonotonicNs() - start) / calls;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (calls <= 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: timer_rearm_bench [CALLS [ROUNDS]]\n");
    return 2;
  }
  g_pid = getpid();
  g_tid = static_cast<pid_t>(syscall(SYS_gettid));
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = &OnSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGRTMAX - 4, &action, nullptr);
  struct sigevent event;
  std::memset(&event, 0, sizeof(event));
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGRTMAX - 4;
  event._sigev_un._tid = g_tid;
  if (syscall(SYS_timer_create, CLOCK_THREAD_CPUTIME_ID, &event, &g_timer_id) !=
      0) {
    std::perror("timer_create");
    return 1;
  }
  std::vector<double> rearm, null, signal;
  for (int r = 0; r < rounds; ++r) {
    rearm.push_back(NsPerCall(Rearm, calls));
    null.push_back(NsPerCall(Null, calls));
    signal.push_back(NsPerCall(Signal, calls));
  }
  std::printf("%.0f %.0f %.0f\n", Median(rearm), Median(null), Median(signal));
  return 0;
}
