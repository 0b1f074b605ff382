// ValidatePprof: checks a profile against the rules Grafana Pyroscope's
// ingester enforces (prior-art.md §6) and the structural rules go tool
// pprof's parser enforces. The collector's tests run every profile they
// produce through it; it is the executable form of "never produce an
// invalid profile".
//
// Thread-safe (pure function).
#ifndef RINGPROF_COLLECTOR_PPROF_VALIDATE_H_
#define RINGPROF_COLLECTOR_PPROF_VALIDATE_H_

#include "absl/status/status.h"
#include "collector/profile/pprof_builder.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// OK, or InvalidArgument naming the first violated rule.
absl::Status ValidatePprof(const perftools::profiles::Profile& profile,
                           const ProfileLimits& limits = {});

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_VALIDATE_H_
