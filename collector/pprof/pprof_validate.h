// The rules every profile the collector writes or ships must pass: Grafana
// Pyroscope's ingestion rules (its distributor's default limits and
// validate.go) and the structural rules go tool pprof's parser enforces.
// PprofBuilder builds within PyroscopeLimits, the Pyroscope and OTLP sinks
// check each profile with ValidatePprof before it is queued, and the tests
// run every profile they produce through it: the executable form of "never
// produce an invalid profile".
//
// Thread-safe (pure functions).
#ifndef RINGPROF_COLLECTOR_PPROF_PPROF_VALIDATE_H_
#define RINGPROF_COLLECTOR_PPROF_PPROF_VALIDATE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// Pyroscope's ingestion limits (defaults of its distributor).
struct PyroscopeLimits {
  size_t max_samples = 16000;
  size_t max_bytes = 4u << 20;  // serialized, uncompressed
  size_t max_frames = 1000;
  // Longest string-table entry (max_profile_symbol_value_length): Pyroscope
  // cuts longer ones itself, possibly inside a UTF-8 character, and then
  // refuses the profile.
  size_t max_string_bytes = 65535;
  size_t max_sample_labels = 100;
  // Ingestion window for time_nanos: [now - max_age, now + max_future].
  int64_t max_age_ns = int64_t{3600} * 1000000000;
  int64_t max_future_ns = int64_t{600} * 1000000000;
};

// OK, or InvalidArgument naming the first zero, duplicate or dangling
// location/function/mapping id: what a reader of the profile's references
// relies on (ValidatePprof checks it too).
absl::Status CheckPprofIds(const perftools::profiles::Profile& profile);

// OK, or InvalidArgument naming the first violated rule: size, sample
// count, string_table[0] != "", a string that is not UTF-8 or too long, a
// string index out of range, zero, duplicate or dangling
// location/function/mapping ids, a sample whose value count differs from
// the number of sample types, too many frames or labels on a sample, no
// sample types, a sample type name that is empty or contains '-',
// period_type unset. With `now_unix_ns` != 0 also the ingestion window:
// OutOfRange when time_nanos is older than it (the profile expired; nothing
// is wrong with it otherwise), InvalidArgument when it is too far ahead.
absl::Status ValidatePprof(const perftools::profiles::Profile& profile,
                           const PyroscopeLimits& limits = {},
                           int64_t now_unix_ns = 0);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_PPROF_VALIDATE_H_
