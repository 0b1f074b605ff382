// ProfileMerger: adds pprof profiles of one kind (same sample types) into
// one, as `go tool pprof` merges files: identical stacks (by mapping,
// address and symbolized lines) add up. Snapshot values (sample types the
// kinds table marks so, profile_kinds.h: the in-use heap) are not summed
// over time: each series (e.g. one process) counts with its latest profile
// only (by time_nanos), and series add up. The result obeys the same
// limits as every profile the collector writes (see PprofBuilder).
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PPROF_PROFILE_MERGER_H_
#define RINGPROF_COLLECTOR_PPROF_PROFILE_MERGER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "collector/pprof/pprof_builder.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

class ProfileMerger {
 public:
  explicit ProfileMerger(PyroscopeLimits limits = {}) : limits_(limits) {}

  // InvalidArgument (and nothing added) when `profile`'s sample types
  // differ from the first profile's, or its ids are dangling. `series`
  // names the time series the profile belongs to (for snapshot values: the
  // merger keeps the series' latest profile, shared, not copied).
  absl::Status Add(std::shared_ptr<const perftools::profiles::Profile> profile,
                   const std::string& series = "");
  // The same for a profile the caller keeps (copied if kept).
  absl::Status Add(const perftools::profiles::Profile& profile,
                   const std::string& series = "");

  bool empty() const { return builder_ == nullptr; }
  // Covers [earliest time_nanos, latest time_nanos + duration_nanos).
  perftools::profiles::Profile Build() const;
  // The same profile as Build(), built for the last time: the snapshot
  // profiles go into the merger's own builder instead of a copy of it (no
  // copy of everything merged), and the merger is left empty.
  perftools::profiles::Profile Finish();

 private:
  // Adds the series' latest snapshot profiles to `builder` and builds.
  perftools::profiles::Profile BuildWithSnapshots(PprofBuilder* builder) const;
  // `p` with time_nanos and duration_nanos set to the merged span.
  perftools::profiles::Profile Spanned(perftools::profiles::Profile p) const;

  // `shared`: `profile` itself when the caller shares it, else null.
  absl::Status Add(const perftools::profiles::Profile& profile,
                   const std::string& series,
                   std::shared_ptr<const perftools::profiles::Profile> shared);

  PyroscopeLimits limits_;
  std::unique_ptr<PprofBuilder> builder_;
  // Per sample type: whether it is a snapshot, and its negation.
  absl::InlinedVector<bool, 4> snapshot_columns_;
  absl::InlinedVector<bool, 4> sum_columns_;
  // By series.
  std::map<std::string, std::shared_ptr<const perftools::profiles::Profile>>
      latest_;
  ProfileSpec spec_;
  int64_t end_nanos_ = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_PROFILE_MERGER_H_
