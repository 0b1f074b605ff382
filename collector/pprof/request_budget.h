// Keeping each push under Pyroscope's ingestion burst.
//
// Pyroscope's distributor rate-limits every profile of a push by its
// uncompressed size plus its label bytes (pkg/distributor/distributor.go:
// rateLimit, calculateRequestSize) with a token bucket whose burst is
// ingestion_burst_size_mb (default 2 MiB). A profile larger than the burst
// is answered 429 forever (AllowN can never allow it), so the sinks trim
// such a profile before it is queued: the smallest stacks are folded into
// one "[trimmed]" sample (totals kept), exactly as the pprof builder does
// for its own limits.
//
// Thread-safety: pure functions.
#ifndef RINGPROF_COLLECTOR_PPROF_REQUEST_BUDGET_H_
#define RINGPROF_COLLECTOR_PPROF_REQUEST_BUDGET_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "collector/pprof/label_rules.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// What Pyroscope counts against the burst for one profile: label names and
// values plus the uncompressed pprof.
size_t RequestCost(const Labels& labels, size_t pprof_bytes);

// `profile` refolded so that it serializes to at most `max_bytes`: the
// largest stacks by the default sample type are kept, the rest become one
// "[trimmed]" sample (which has no labels); the kept samples keep their
// labels (PprofBuilder::AddProfile). A profile that fits already comes back
// as it is. InvalidArgument when it has no sample type or its ids do not
// resolve; ResourceExhausted when even a profile of one "[trimmed]" sample
// does not fit.
absl::StatusOr<perftools::profiles::Profile> FitProfile(
    const perftools::profiles::Profile& profile, size_t max_bytes);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_REQUEST_BUDGET_H_
