// CaptureStack and the runtime services, linked directly (no LD_PRELOAD),
// so that they run under ASan and TSan.
#include "emitter/stack_capture.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "emitter/arch/arch.h"
#include "emitter/cfi_unwinder.h"
#include "emitter/libc_features.h"
#include "emitter/runtime.h"
#include "emitter/thread_state.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

// The function containing `pc` (a return address), from the dynamic symbol
// table (the test links with -rdynamic).
const void* FunctionOf(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc - 1), &info) == 0) return nullptr;
  return info.dli_saddr;
}

struct Captured {
  uint64_t frames[64];
  int count = 0;
  bool truncated = false;
};

extern "C" {
__attribute__((noinline)) void RingprofTestInner(Captured* out, int max,
                                                 int skip) {
  out->count = CaptureStack(out->frames, max, skip, &out->truncated);
  asm volatile("" ::: "memory");  // no tail call
}
__attribute__((noinline)) void RingprofTestMiddle(Captured* out, int max,
                                                  int skip) {
  RingprofTestInner(out, max, skip);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) void RingprofTestOuter(Captured* out, int max,
                                                 int skip) {
  RingprofTestMiddle(out, max, skip);
  asm volatile("" ::: "memory");
}
__attribute__((noinline)) int RingprofTestRecurse(Captured* out, int depth) {
  if (depth == 0) {
    RingprofTestInner(out, 10, 0);
    return 0;
  }
  const int result = RingprofTestRecurse(out, depth - 1) + 1;
  asm volatile("" ::: "memory");
  return result;
}
}

TEST(CaptureStackTest, CallersInnermostFirst) {
  Captured c;
  RingprofTestOuter(&c, 64, 0);
  ASSERT_GE(c.count, 4);
  EXPECT_FALSE(c.truncated);
  EXPECT_EQ(FunctionOf(c.frames[0]),
            reinterpret_cast<const void*>(&RingprofTestInner));
  EXPECT_EQ(FunctionOf(c.frames[1]),
            reinterpret_cast<const void*>(&RingprofTestMiddle));
  EXPECT_EQ(FunctionOf(c.frames[2]),
            reinterpret_cast<const void*>(&RingprofTestOuter));
}

TEST(CaptureStackTest, SkipDropsInnermostFrames) {
  Captured c;
  RingprofTestOuter(&c, 64, 1);
  ASSERT_GE(c.count, 2);
  EXPECT_EQ(FunctionOf(c.frames[0]),
            reinterpret_cast<const void*>(&RingprofTestMiddle));
}

TEST(CaptureStackTest, DeepStacksAreTruncatedAndFlagged) {
  Captured c;
  RingprofTestRecurse(&c, 40);
  EXPECT_EQ(c.count, 10);
  EXPECT_TRUE(c.truncated);
  for (int i = 1; i < 10; ++i) {
    EXPECT_EQ(FunctionOf(c.frames[i]),
              reinterpret_cast<const void*>(&RingprofTestRecurse));
  }
}

Captured g_from_signal;

void OnSignal(int) { RingprofTestInner(&g_from_signal, 64, 0); }

extern "C" __attribute__((noinline)) void RingprofTestRaise() {
  raise(SIGUSR1);
  asm volatile("" ::: "memory");
}

TEST(CaptureStackTest, UnwindsThroughASignalFrame) {
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  RingprofTestRaise();
  sigaction(SIGUSR1, &old, nullptr);
  bool found = false;
  for (int i = 0; i < g_from_signal.count; ++i) {
    if (FunctionOf(g_from_signal.frames[i]) ==
        reinterpret_cast<const void*>(&RingprofTestRaise)) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << g_from_signal.count << " frames";
}

TEST(CaptureStackTest, StopsWhenLeavingTheRecordedStack) {
  Captured full;
  RingprofTestOuter(&full, 64, 0);
  // Pretend the thread's stack ends just above this frame: the unwinder
  // must stop at the first frame whose CFA is beyond it.
  int marker;
  ThreadState saved = tls_thread_state;
  tls_thread_state.stack_low = reinterpret_cast<uintptr_t>(&marker) - 65536;
  tls_thread_state.stack_high = reinterpret_cast<uintptr_t>(&marker);
  Captured bounded;
  RingprofTestOuter(&bounded, 64, 0);
  tls_thread_state = saved;
  EXPECT_GE(bounded.count, 3);  // Inner, Middle, Outer are below `marker`
  EXPECT_LT(bounded.count, full.count);
}

// Records the calling thread's real stack bounds (what the emitter's
// pthread_create trampoline does) for the scope.
class ThreadStackBounds {
 public:
  ThreadStackBounds() : saved_(tls_thread_state) {
    pthread_attr_t attr;
    void* low = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &low, &size);
      pthread_attr_destroy(&attr);
    }
    tls_thread_state.stack_low = reinterpret_cast<uintptr_t>(low);
    tls_thread_state.stack_high = reinterpret_cast<uintptr_t>(low) + size;
  }
  ~ThreadStackBounds() { tls_thread_state = saved_; }

 private:
  const ThreadState saved_;
};

// Both walkers from the same place: frames[0] is the caller's return
// address for both.
struct BothWalkers {
  Captured fast, libgcc;
  int direct = 0;  // CfiWalk's own result
};

extern "C" __attribute__((noinline)) void RingprofTestBoth(BothWalkers* out) {
  out->fast.count = CaptureStack(out->fast.frames, 64, 0, &out->fast.truncated);
  out->libgcc.count =
      CaptureStackWithLibgcc(out->libgcc.frames, 64, 0, &out->libgcc.truncated);
  const UnwindStart start =
      CallerOf(__builtin_frame_address(0), __builtin_dwarf_cfa());
  uint64_t frames[64];
  bool truncated;
  out->direct =
      CfiWalk(start, frames, 64, 0, &truncated, tls_thread_state.stack_low,
              tls_thread_state.stack_high);
  asm volatile("" ::: "memory");
}

extern "C" __attribute__((noinline)) void RingprofTestRaise2() {
  raise(SIGUSR2);
  asm volatile("" ::: "memory");
}

BothWalkers g_from_qsort;
int CompareAndCapture(const void* a, const void* b) {
  if (g_from_qsort.fast.count == 0) RingprofTestBoth(&g_from_qsort);
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

void ExpectSameStacks(const BothWalkers& both) {
  EXPECT_GE(both.direct, 0) << "the CFI walker gave up";
  ASSERT_EQ(both.fast.count, both.libgcc.count);
  EXPECT_EQ(both.fast.truncated, both.libgcc.truncated);
  ASSERT_GT(both.fast.count, 0);
  // frames[0]: two different call sites in the same function.
  EXPECT_EQ(FunctionOf(both.fast.frames[0]),
            reinterpret_cast<const void*>(&RingprofTestBoth));
  EXPECT_EQ(FunctionOf(both.libgcc.frames[0]),
            reinterpret_cast<const void*>(&RingprofTestBoth));
  for (int i = 1; i < both.fast.count; ++i) {
    EXPECT_EQ(both.fast.frames[i], both.libgcc.frames[i]) << "frame " << i;
  }
}

TEST(CfiWalkerTest, SameStackAsLibgcc) {
  ThreadStackBounds bounds;
  BothWalkers both;
  RingprofTestBoth(&both);
  ASSERT_GE(both.fast.count, 3);
  ExpectSameStacks(both);
}

TEST(CfiWalkerTest, SameStackAsLibgccThroughLibcWithoutFramePointers) {
  ThreadStackBounds bounds;
  int values[64];
  for (int i = 0; i < 64; ++i) values[i] = (i * 37) % 64;
  g_from_qsort = BothWalkers();
  // glibc's qsort (built without frame pointers) calls the comparator.
  qsort(values, 64, sizeof(int), CompareAndCapture);
  ASSERT_GT(g_from_qsort.fast.count, 3);
  ExpectSameStacks(g_from_qsort);
}

TEST(CfiWalkerTest, SameStackAsLibgccInANewThread) {
  BothWalkers both;
  std::thread thread([&] {
    ThreadStackBounds bounds;
    RingprofTestBoth(&both);
  });
  thread.join();
  ExpectSameStacks(both);
}

BothWalkers g_from_handler;
void CaptureBothInHandler(int) { RingprofTestBoth(&g_from_handler); }

TEST(CfiWalkerTest, SameStackAsLibgccThroughASignalFrame) {
  ThreadStackBounds bounds;
  struct sigaction action = {};
  action.sa_handler = CaptureBothInHandler;
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR2, &action, &old), 0);
  g_from_handler = BothWalkers();
  RingprofTestRaise2();
  sigaction(SIGUSR2, &old, nullptr);
  ExpectSameStacks(g_from_handler);
  bool found = false;
  for (int i = 0; i < g_from_handler.fast.count; ++i) {
    found |= FunctionOf(g_from_handler.fast.frames[i]) ==
             reinterpret_cast<const void*>(&RingprofTestRaise2);
  }
  EXPECT_TRUE(found) << "the interrupted code's caller is missing";
}

// A profiling signal interrupting a leaf function: no frame of its own (on
// AArch64 its return address is still in the link register, which only the
// signal context holds). Both walkers go through the signal frame into the
// leaf's exact pc and on to its caller.
std::atomic<int> g_leaf_state{0};  // 0 spinning, 1 sampled, 2 gave up
BothWalkers g_from_leaf;
uint64_t g_leaf_pc = 0;

extern "C" __attribute__((noinline)) long RingprofTestLeafSpin() {
  long n = 0;
  while (g_leaf_state.load(std::memory_order_relaxed) == 0) ++n;
  return n;
}

extern "C" __attribute__((noinline)) long RingprofTestLeafCaller() {
  const long n = RingprofTestLeafSpin();
  asm volatile("" ::: "memory");
  return n + 1;
}

void CaptureInLeaf(int, siginfo_t*, void* ucontext) {
  if (g_leaf_state.load() != 0) return;
  const uint64_t pc = arch::FromSignalContext(ucontext).pc;
  // (The interrupted code is the spin loop or the test's own set-up, never
  // the loader: binaries here are bound at load.)
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 ||
      info.dli_saddr != reinterpret_cast<void*>(&RingprofTestLeafSpin)) {
    return;
  }
  g_leaf_pc = pc;
  RingprofTestBoth(&g_from_leaf);
  g_leaf_state.store(1);
}

void GiveUpOnLeaf(int) { g_leaf_state.store(2); }

TEST(CfiWalkerTest, SameStackAsLibgccFromAnInterruptedLeaf) {
  ThreadStackBounds bounds;
  struct sigaction action = {};
  action.sa_sigaction = CaptureInLeaf;
  action.sa_flags = SA_SIGINFO;
  struct sigaction old_prof, old_alarm;
  ASSERT_EQ(sigaction(SIGPROF, &action, &old_prof), 0);
  struct sigaction give_up = {};
  give_up.sa_handler = GiveUpOnLeaf;
  ASSERT_EQ(sigaction(SIGALRM, &give_up, &old_alarm), 0);
  const struct itimerval every_ms = {{0, 1000}, {0, 1000}};
  const struct itimerval off = {};
  g_leaf_state.store(0);
  g_from_leaf = BothWalkers();
  alarm(20);
  setitimer(ITIMER_PROF, &every_ms, nullptr);
  RingprofTestLeafCaller();
  setitimer(ITIMER_PROF, &off, nullptr);
  alarm(0);
  sigaction(SIGPROF, &old_prof, nullptr);
  sigaction(SIGALRM, &old_alarm, nullptr);
  ASSERT_EQ(g_leaf_state.load(), 1) << "no sample in the leaf within 20 s";
  ExpectSameStacks(g_from_leaf);
  int leaf = -1;
  for (int i = 0; i < g_from_leaf.fast.count; ++i) {
    if (g_from_leaf.fast.frames[i] == g_leaf_pc) leaf = i;
  }
  ASSERT_GE(leaf, 0) << "the interrupted pc is missing";
  ASSERT_LT(leaf + 1, g_from_leaf.fast.count);
  EXPECT_EQ(FunctionOf(g_from_leaf.fast.frames[leaf + 1]),
            reinterpret_cast<const void*>(&RingprofTestLeafCaller));
}

TEST(CfiWalkerTest, CachedRulesGiveTheSameAnswer) {
  ThreadStackBounds bounds;
  BothWalkers first, second;
  RingprofTestBoth(&first);
  RingprofTestBoth(&second);  // now from the rule cache
  ExpectSameStacks(second);
  ASSERT_EQ(first.fast.count, second.fast.count);
}

// As on glibc < 2.35: objects come from the table of those loaded at start
// (this binary, libc, libstdc++, the vDSO), not from _dl_find_object.
class WithoutDlFindObjectTest : public ::testing::Test {
 protected:
  void SetUp() override { UseDlFindObjectForTest(false); }
  void TearDown() override { UseDlFindObjectForTest(true); }
};

TEST_F(WithoutDlFindObjectTest, SameStackAsLibgccThroughLibc) {
  ASSERT_FALSE(HaveDlFindObject());
  ThreadStackBounds bounds;
  int values[64];
  for (int i = 0; i < 64; ++i) values[i] = (i * 37) % 64;
  g_from_qsort = BothWalkers();
  qsort(values, 64, sizeof(int), CompareAndCapture);
  ASSERT_GT(g_from_qsort.fast.count, 3);
  ExpectSameStacks(g_from_qsort);
}

TEST_F(WithoutDlFindObjectTest, SameStackAsLibgccThroughASignalFrame) {
  ThreadStackBounds bounds;
  struct sigaction action = {};
  action.sa_handler = CaptureBothInHandler;
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR2, &action, &old), 0);
  g_from_handler = BothWalkers();
  RingprofTestRaise2();
  sigaction(SIGUSR2, &old, nullptr);
  ExpectSameStacks(g_from_handler);
}

TEST_F(WithoutDlFindObjectTest, FindObjectDescribesObjectsLoadedAtStart) {
  dl_find_object found;
  ASSERT_EQ(FindObject(reinterpret_cast<void*>(&qsort), &found), 0);
  EXPECT_NE(found.dlfo_eh_frame, nullptr);
  EXPECT_LE(found.dlfo_map_start, reinterpret_cast<void*>(&qsort));
  EXPECT_GT(found.dlfo_map_end, reinterpret_cast<void*>(&qsort));
  // The same answer as glibc's.
  dl_find_object real;
  UseDlFindObjectForTest(true);
  ASSERT_EQ(FindObject(reinterpret_cast<void*>(&qsort), &real), 0);
  EXPECT_EQ(found.dlfo_eh_frame, real.dlfo_eh_frame);
  EXPECT_EQ(found.dlfo_map_start, real.dlfo_map_start);
  int on_stack;
  EXPECT_NE(FindObject(&on_stack, &real), 0);
  UseDlFindObjectForTest(false);
  EXPECT_NE(FindObject(&on_stack, &found), 0);
}

// The initial thread's stack top (the unwinder's bound there): glibc's
// __libc_stack_end, found under the architecture's symbol version. (Not
// musl's fallback, the environment vector: a new variable moves glibc's to
// the heap.)
TEST(LibcFeaturesTest, InitialStackTopIsJustAboveTheMainThreadsStack) {
  ASSERT_EQ(setenv("RINGPROF_TEST_NEW_VARIABLE", "1", 1), 0);
  int local = 0;
  const uintptr_t here = reinterpret_cast<uintptr_t>(&local);
  const uintptr_t top = InitialStackTop();
  EXPECT_GT(top, here);
  EXPECT_LT(top - here, uintptr_t{64} << 20);
}

TEST(RuntimeTest, DisabledUntilASessionStarts) {
  EXPECT_FALSE(Enabled());
  const int payload = 1;
  EXPECT_FALSE(AppendRecord(ringfile::RecordType::kLabel, &payload,
                            sizeof(payload), nullptr, 0));
}

TEST(RuntimeTest, CurrentTidIsTheKernelTidOfEachThread) {
  EXPECT_EQ(CurrentTid(), static_cast<uint32_t>(syscall(SYS_gettid)));
  uint32_t other = 0, other_real = 0;
  std::thread thread([&] {
    other = CurrentTid();
    other_real = static_cast<uint32_t>(syscall(SYS_gettid));
  });
  thread.join();
  EXPECT_EQ(other, other_real);
  EXPECT_NE(other, CurrentTid());
}

TEST(RuntimeTest, MonotonicClockAdvances) {
  const uint64_t a = MonotonicNowNs();
  usleep(1000);
  const uint64_t b = MonotonicNowNs();
  EXPECT_GE(b - a, 1000000u);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
