// Guarded reads of shared file mappings that another process may truncate.
//
// Contract: a load from a MAP_SHARED page beyond the end of its (truncated)
// file raises SIGBUS, which by default kills the reader. GuardedCall runs a
// function with a per-thread guard covering [begin, begin + size); a SIGBUS
// whose fault address lies in that range makes GuardedCall return false
// instead (the function is abandoned mid-way: it must own no resources, take
// no locks and allocate nothing). Any other SIGBUS (a fault outside the
// guarded range, or on a thread with no guard) goes to the handler that was
// installed before ours, or to the default action.
//
// Thread-safe: each thread has its own guard; guards do not nest (a nested
// GuardedCall replaces the outer range until it returns). The process-wide
// SIGBUS handler is installed on first use and never removed; it is
// async-signal-safe and allocation-free.
#ifndef RINGPROF_RINGFILE_GUARDED_MEMORY_H_
#define RINGPROF_RINGFILE_GUARDED_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace ringfile {

// Runs fn(arg); false when it faulted on [begin, begin + size).
bool GuardedCall(const void* begin, size_t size, void (*fn)(void*), void* arg);

// Copies `size` bytes from a guarded mapping; false (dst partly written) when
// the source faulted.
bool GuardedCopy(void* dst, const void* src, size_t size);

// Load one word with acquire ordering; false when it faulted.
bool GuardedLoadAcquire(const uint64_t* word, uint64_t* out);
bool GuardedLoadAcquire(const uint32_t* word, uint32_t* out);

// Faults recovered so far (all threads), for tests and metrics.
uint64_t GuardedFaults();

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_GUARDED_MEMORY_H_
