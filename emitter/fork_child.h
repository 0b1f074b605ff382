// Resetting state in a fork child (pthread_atfork child handlers).
//
// A fork child gets a private copy of every page it writes, and most
// children only exec: the handlers store only values that differ, so that a
// child that inherited the reset state writes (and copies) nothing.
//
// Async-signal-safe, allocation-free.
#ifndef RINGPROF_EMITTER_FORK_CHILD_H_
#define RINGPROF_EMITTER_FORK_CHILD_H_

#include <atomic>

namespace ringprof {
namespace emitter {

// `variable` = `value`, written only if it differs.
template <typename T>
inline void StoreIfDifferent(
    std::atomic<T>& variable, T value,
    std::memory_order order = std::memory_order_relaxed) {
  if (variable.load(std::memory_order_relaxed) != value) {
    variable.store(value, order);
  }
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_FORK_CHILD_H_
