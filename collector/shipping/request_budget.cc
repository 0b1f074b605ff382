#include "collector/shipping/request_budget.h"

#include "absl/strings/str_cat.h"
#include "collector/pprof/pprof_builder.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {

using perftools::profiles::Profile;

size_t RequestCost(const Labels& labels, size_t pprof_bytes) {
  size_t cost = pprof_bytes;
  for (const auto& [name, value] : labels) cost += name.size() + value.size();
  return cost;
}

absl::StatusOr<std::string> FitProfile(const std::string& pprof,
                                       size_t max_bytes) {
  if (pprof.size() <= max_bytes) return pprof;
  Profile p;
  if (!p.ParseFromString(pprof) || p.sample_type_size() == 0) {
    return absl::InvalidArgumentError("cannot parse the profile to trim it");
  }
  PyroscopeLimits limits;
  limits.max_bytes = max_bytes;
  limits.max_frames = SIZE_MAX;  // already within Pyroscope's depth
  PprofBuilder builder(SpecOfProfile(p), limits);
  if (absl::Status added = builder.AddProfile(p); !added.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot trim the profile: ", added.message()));
  }
  std::string out = builder.Build().SerializeAsString();
  if (out.size() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a profile of ", pprof.size(),
                     " bytes cannot be trimmed to ", max_bytes, " bytes"));
  }
  return out;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
