// Series labels for Pyroscope: parsing user tags, assembling the label set
// of one profile series, and checking it against Pyroscope's rules.
//
// Pyroscope (distributor, default limits) rejects a series whose labels
// break any of: at most 30 labels including __name__; names match
// [A-Za-z0-9_.]+ and are at most 1024 bytes; values are non-empty valid
// UTF-8 of at most 2048 bytes; no name appears twice; __name__ is present.
// We check before sending, so a bad tag is a startup error rather than a
// stream of rejected uploads.
//
// Thread-safety: pure functions.
#ifndef RINGPROF_COLLECTOR_SHIPPING_LABELS_H_
#define RINGPROF_COLLECTOR_SHIPPING_LABELS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {
namespace shipping {

using Labels = std::vector<std::pair<std::string, std::string>>;

inline constexpr int kMaxLabelsPerSeries = 30;
inline constexpr size_t kMaxLabelNameBytes = 1024;
inline constexpr size_t kMaxLabelValueBytes = 2048;

// Parses PYROSCOPE_TAGS syntax: "k=v,k2=v2" (whitespace around items is
// trimmed; an empty string gives no tags). Each tag must be a valid label;
// __name__, service_name and __delta__ are reserved (set by the sink), and a
// name may appear once. InvalidArgument names the offending tag.
absl::StatusOr<Labels> ParseTags(absl::string_view text);

// OK when `name` is a valid label name / `value` a valid label value.
absl::Status ValidateLabelName(absl::string_view name);
absl::Status ValidateLabelValue(absl::string_view name,
                                absl::string_view value);

// Checks a complete series label set (including __name__).
absl::Status ValidateSeriesLabels(const Labels& labels);

// What goes into every series besides the profile's own labels.
struct SeriesLabelConfig {
  // Overrides the profile's service_name when non-empty.
  std::string application_name;
  // User tags (already parsed); they override same-named process labels.
  Labels tags;
  // Added when the profile's labels do not carry them already; empty values
  // are skipped. hostname, and pod/namespace in Kubernetes.
  Labels host_labels;
};

// The series labels for one profile: __name__, service_name (application
// name, else the profile's, else "unknown_service"), the profile's labels,
// host labels, user tags, and __delta__="false" for "memory" (allocation
// profiles are deltas; Pyroscope < 2.0 would otherwise difference them).
// Sorted by name; duplicates resolved as described above.
Labels BuildSeriesLabels(const SeriesLabelConfig& config,
                         const std::string& profile_name,
                         const std::string& service_name,
                         const Labels& profile_labels);

// Labels from the environment: hostname (gethostname), and in Kubernetes
// pod (POD_NAME) and namespace (POD_NAMESPACE), when set.
Labels HostLabelsFromEnvironment();

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_LABELS_H_
