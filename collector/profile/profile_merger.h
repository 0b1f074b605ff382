// ProfileMerger: adds pprof profiles of one kind (same sample types) into
// one, as `go tool pprof` merges files: identical stacks (by mapping,
// address and symbolized lines) add up. The result obeys the same limits as
// every profile the collector writes (see PprofBuilder).
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_MERGER_H_
#define RINGPROF_COLLECTOR_PROFILE_MERGER_H_

#include <memory>

#include "absl/status/status.h"
#include "collector/profile/pprof_builder.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

class ProfileMerger {
 public:
  explicit ProfileMerger(PyroscopeLimits limits = {}) : limits_(limits) {}

  // InvalidArgument when `profile`'s sample types differ from the first
  // profile's, or its ids are dangling.
  absl::Status Add(const perftools::profiles::Profile& profile);

  bool empty() const { return builder_ == nullptr; }
  // Covers [earliest time_nanos, latest time_nanos + duration_nanos).
  perftools::profiles::Profile Build() const;

 private:
  PyroscopeLimits limits_;
  std::unique_ptr<PprofBuilder> builder_;
  ProfileSpec spec_;
  int64_t end_nanos_ = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_MERGER_H_
