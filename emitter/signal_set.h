// sigset_t tests read straight from the set, as the kernel lays it out
// (glibc's and musl's alike: signal n is bit n - 1, in unsigned longs).
//
// Why not sigismember: a libc call, bound lazily in the constructor of every
// process, and made for each of ~30 real-time signals each time the mask
// interposers see a set naming the sampler's signal (around every fork of a
// shell). Inline, no system call, async-signal-safe.
#ifndef RINGPROF_EMITTER_SIGNAL_SET_H_
#define RINGPROF_EMITTER_SIGNAL_SET_H_

#include <signal.h>

#include <cstring>

namespace ringprof {
namespace emitter {

namespace signal_set_internal {
constexpr int kWordBits = 8 * sizeof(unsigned long);

inline unsigned long Word(const sigset_t* set, int index) {
  unsigned long word;
  memcpy(&word, reinterpret_cast<const char*>(set) + index * sizeof(word),
         sizeof(word));
  return word;
}
}  // namespace signal_set_internal

// sigismember(set, signo) == 1, for a valid signo (1 to _NSIG - 1).
inline bool SignalInSet(const sigset_t* set, int signo) {
  using signal_set_internal::kWordBits;
  return ((signal_set_internal::Word(set, (signo - 1) / kWordBits) >>
           ((signo - 1) % kWordBits)) &
          1) != 0;
}

// Whether `set` holds every signal from `first` to `last` (valid signal
// numbers, first <= last): one test per word of the set.
inline bool SignalRangeInSet(const sigset_t* set, int first, int last) {
  using signal_set_internal::kWordBits;
  const int last_bit = last - 1;
  for (int bit = first - 1; bit <= last_bit;) {
    const int index = bit / kWordBits;
    const int low = bit % kWordBits;
    const int high =
        last_bit / kWordBits == index ? last_bit % kWordBits : kWordBits - 1;
    const unsigned long mask = (~0ul >> (kWordBits - 1 - high)) & (~0ul << low);
    if ((signal_set_internal::Word(set, index) & mask) != mask) return false;
    bit = (index + 1) * kWordBits;
  }
  return true;
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_SIGNAL_SET_H_
