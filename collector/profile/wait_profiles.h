// The weights of the off-CPU profiles (ProfileKind::kMutex, lock
// contention, and kBlock, blocking calls) from WaitSample records
// (ringfile/FORMAT.md §5.3): per stack, the estimated number of waits and
// nanoseconds waited.
//
// A sample of a wait of d ns kept at rate r stands for max(d, r) ns and
// max(1, r / d) waits (the emitter kept it with probability min(1, d / r));
// the sums are kept as doubles and rounded once per stack when the window
// is built, so fractional counts of short waits add up instead of being
// rounded away one by one.
//
// Their sample types, {contentions, delay}, are the kinds table's
// (collector/pprof/profile_kinds.h).
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_WAIT_PROFILES_H_
#define RINGPROF_COLLECTOR_PROFILE_WAIT_PROFILES_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "collector/pprof/profile_kinds.h"
#include "ringfile/format.h"

namespace ringprof {
namespace collector {

// The profile of a wait kind: kMutex for locks, kBlock for the others.
ProfileKind WaitProfileKind(ringfile::WaitKind kind);

struct WaitTotals {
  double waits = 0;
  double delay_ns = 0;
};

// The estimate one sample stands for (see above); wait_ns, sample_ns >= 1.
WaitTotals WaitSampleWeight(uint64_t wait_ns, uint64_t sample_ns);

// Per stack id, one window's totals of one kind.
using WaitsByStack = absl::flat_hash_map<uint32_t, WaitTotals>;

// The rounded sample values {contentions, delay} of a stack's totals;
// {0, 0} (no sample) when both round to zero.
void WaitSampleValues(const WaitTotals& totals, int64_t values[2]);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_WAIT_PROFILES_H_
