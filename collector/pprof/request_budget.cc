#include "collector/pprof/request_budget.h"

#include "absl/strings/str_cat.h"
#include "collector/pprof/pprof_builder.h"

namespace ringprof {
namespace collector {

using perftools::profiles::Profile;

size_t RequestCost(const Labels& labels, size_t pprof_bytes) {
  size_t cost = pprof_bytes;
  for (const auto& [name, value] : labels) cost += name.size() + value.size();
  return cost;
}

absl::StatusOr<Profile> FitProfile(const Profile& profile, size_t max_bytes) {
  const size_t bytes = profile.ByteSizeLong();
  if (bytes <= max_bytes) return profile;
  if (profile.sample_type_size() == 0) {
    return absl::InvalidArgumentError("cannot trim a profile without types");
  }
  PyroscopeLimits limits;
  limits.max_bytes = max_bytes;
  limits.max_frames = SIZE_MAX;  // already within Pyroscope's depth
  PprofBuilder builder(SpecOfProfile(profile), limits);
  if (absl::Status added = builder.AddProfile(profile); !added.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot trim the profile: ", added.message()));
  }
  Profile out = builder.Build();
  if (out.ByteSizeLong() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a profile of ", bytes, " bytes cannot be trimmed to ",
                     max_bytes, " bytes"));
  }
  return out;
}

}  // namespace collector
}  // namespace ringprof
