// The inline sigset_t tests answer as sigismember does.
#include "emitter/signal_set.h"

#include <signal.h>

#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

bool Reference(const sigset_t* set, int first, int last) {
  for (int signo = first; signo <= last; ++signo) {
    if (sigismember(set, signo) != 1) return false;
  }
  return true;
}

TEST(SignalSetTest, SignalInSetIsSigismember) {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : {1, 2, 31, 32, 33, 34, 63, 64}) {
    if (signo >= _NSIG) continue;
    SCOPED_TRACE(signo);
    EXPECT_FALSE(SignalInSet(&set, signo));
    // (glibc keeps 32 and 33, its own, out of every set.)
    if (sigaddset(&set, signo) != 0) continue;
    EXPECT_TRUE(SignalInSet(&set, signo));
    EXPECT_EQ(SignalInSet(&set, signo == 1 ? 3 : signo - 1),
              sigismember(&set, signo == 1 ? 3 : signo - 1) == 1);
  }
}

TEST(SignalSetTest, RealtimeRangeAsSigismemberSays) {
  const int first = SIGRTMIN;
  const int last = SIGRTMAX;
  sigset_t set;
  sigemptyset(&set);
  EXPECT_FALSE(SignalRangeInSet(&set, first, last));
  sigfillset(&set);
  EXPECT_TRUE(SignalRangeInSet(&set, first, last));
  sigemptyset(&set);
  for (int rt = first; rt <= last; ++rt) sigaddset(&set, rt);
  EXPECT_TRUE(SignalRangeInSet(&set, first, last));
  sigdelset(&set, SIGINT);  // other signals do not matter
  EXPECT_TRUE(SignalRangeInSet(&set, first, last));
  // Each signal of the range missing in turn, from a full set and alone.
  for (int missing = first; missing <= last; ++missing) {
    SCOPED_TRACE(missing);
    sigset_t without;
    sigfillset(&without);
    sigdelset(&without, missing);
    EXPECT_FALSE(SignalRangeInSet(&without, first, last));
    sigemptyset(&without);
    sigaddset(&without, missing);
    EXPECT_EQ(SignalRangeInSet(&without, first, last),
              Reference(&without, first, last));
    EXPECT_TRUE(SignalRangeInSet(&without, missing, missing));
  }
}

TEST(SignalSetTest, RangesAcrossWords) {
  // Ranges within a word and across words' boundaries (32-bit words too).
  for (int first = 1; first < _NSIG - 1; first += 7) {
    for (int last = first; last < _NSIG; last += 5) {
      SCOPED_TRACE(std::to_string(first) + ".." + std::to_string(last));
      sigset_t set;
      sigemptyset(&set);
      bool added = true;
      for (int signo = first; signo <= last; ++signo) {
        added = sigaddset(&set, signo) == 0 && added;
      }
      if (!added) continue;  // glibc's own 32 and 33 are in the range
      EXPECT_EQ(SignalRangeInSet(&set, first, last),
                Reference(&set, first, last));
      EXPECT_TRUE(SignalRangeInSet(&set, first, last));
      sigdelset(&set, last);
      EXPECT_FALSE(SignalRangeInSet(&set, first, last));
    }
  }
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
