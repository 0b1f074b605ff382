// Checks a serialized pprof against the rules Pyroscope's distributor
// enforces (default limits), so an invalid profile is reported locally and
// never sent to be rejected.
//
// Thread-safety: pure function.
#ifndef RINGPROF_COLLECTOR_SHIPPING_PPROF_VALIDATION_H_
#define RINGPROF_COLLECTOR_SHIPPING_PPROF_VALIDATION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ringprof {
namespace collector {
namespace shipping {

struct ProfileLimits {
  size_t max_uncompressed_bytes = 4 << 20;
  size_t max_samples = 16000;
  size_t max_sample_labels = 100;
  // Ingestion window for time_nanos: [now - max_age, now + max_future].
  int64_t max_age_ns = int64_t{3600} * 1000000000;
  int64_t max_future_ns = int64_t{600} * 1000000000;
};

struct ProfileFacts {
  int64_t time_nanos = 0;
  size_t num_samples = 0;
};

// OK with the profile's facts, or:
//  - OutOfRange when time_nanos is older than the ingestion window (the
//    profile expired; nothing is wrong with it otherwise);
//  - InvalidArgument for every other rule: size, sample count, unparsable,
//    string_table[0] != "", string index out of range, zero or dangling
//    location/function/mapping ids, a sample with a value count different
//    from the number of sample types, no sample types, a sample type name
//    that is empty or contains '-', period_type unset, time_nanos in the
//    future beyond the grace period, a string that is not UTF-8, more
//    than max_sample_labels labels on a sample.
absl::StatusOr<ProfileFacts> ValidateProfile(const std::string& pprof,
                                             int64_t now_unix_ns,
                                             const ProfileLimits& limits = {});

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_PPROF_VALIDATION_H_
