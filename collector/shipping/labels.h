// Series labels for Pyroscope: the label rules, parsing user tags, and
// assembling the label set of one profile series.
//
// Rules (Grafana Pyroscope v1.x, pkg/validation/validate.go ValidateLabels
// and SanitizeLegacyLabelName, default limits in pkg/validation/limits.go):
// at most 30 labels including __name__; a name is [A-Za-z0-9_.]+, does not
// start with a digit, and at most 1024 bytes; the server renames '.' to '_'
// (two names equal after that are a duplicate error); values valid UTF-8 of
// at most 2048 bytes; service_name non-empty; no name twice. Names starting
// with "__" are the server's: __session_id__, __delta__, __otel__, __order__
// change how it stores or merges a series.
//
// ringprof sends names already renamed ('.' -> '_'), so what it sends is
// exactly what is stored, and owns these names (nothing from a workload or
// a tag may set them): service_name, pid, hostname, pod, namespace and
// every "__" name. Tags (the operator's) may set hostname, pod and
// namespace; workload labels (untrusted) may set none of them.
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
#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {
namespace shipping {

using Labels = std::vector<std::pair<std::string, std::string>>;

inline constexpr int kMaxLabelsPerSeries = 30;
inline constexpr size_t kMaxLabelNameBytes = 1024;
inline constexpr size_t kMaxLabelValueBytes = 2048;

// Pyroscope's rule for a label name, with its one repair: '.' becomes '_'.
// InvalidArgument (naming the rule) for an empty or too long name, a
// leading digit, or any character outside [A-Za-z0-9_.].
absl::StatusOr<std::string> SanitizeLabelName(absl::string_view name);

// A value Pyroscope accepts: bytes that are not UTF-8 become U+FFFD, and
// the value is cut to 2048 bytes on a character boundary. May be empty
// (an empty value means "no label").
std::string SanitizeLabelValue(absl::string_view value);

// service_name, pid, hostname, pod, namespace, and any name starting "__".
bool IsCollectorOwnedLabel(absl::string_view name);

// A label refused from an untrusted source, and why (for one log line).
struct DroppedLabel {
  std::string name;
  std::string reason;
};

// Adds untrusted labels (a workload's Label records, per-sample labels) to
// `labels` one by one: each name through SanitizeLabelName and each value
// through SanitizeLabelValue. A label is dropped alone, never the profile,
// when its name is invalid, collector-owned, already in `labels` (what is
// there wins), its value is empty, or `labels` already has `max_labels`.
std::vector<DroppedLabel> MergeUntrustedLabels(const Labels& untrusted,
                                               size_t max_labels,
                                               Labels* labels);

// Parses PYROSCOPE_TAGS syntax: "k=v,k2=v2" (whitespace around items is
// trimmed; an empty string gives no tags). Names go through
// SanitizeLabelName ("k8s.cluster" becomes "k8s_cluster", as Pyroscope
// would store it); values must be valid UTF-8 (a tag is typed by a person:
// an error beats a silent repair). service_name, pid and "__" names are
// refused, and a name may appear once (after renaming). InvalidArgument
// names the offending tag.
absl::StatusOr<Labels> ParseTags(absl::string_view text);

// OK when `name` is a label name ringprof may send ([A-Za-z_][A-Za-z0-9_]*,
// or a "__" name) / `value` a valid label value.
absl::Status ValidateLabelName(absl::string_view name);
absl::Status ValidateLabelValue(absl::string_view name,
                                absl::string_view value);

// Checks a complete series label set (including __name__ and a non-empty
// service_name).
absl::Status ValidateSeriesLabels(const Labels& labels);

// What goes into every series besides the profile's own labels.
struct SeriesLabelConfig {
  // Overrides the profile's service_name when non-empty.
  std::string application_name;
  // User tags (already parsed); they may set hostname, pod and namespace.
  Labels tags;
  // hostname, and pod/namespace in Kubernetes; empty values are skipped.
  Labels host_labels;
  // Source-code integration: service_repository, service_git_ref,
  // service_root_path when configured.
  Labels source_labels;
  // Add pid=<process id>. Off by default: one series per process is how a
  // fleet reaches Pyroscope's per-tenant series limit; __session_id__
  // tells processes apart instead (the server drops it by default).
  bool pid_label = false;
};

struct SeriesLabels {
  Labels labels;  // sorted by name
  std::vector<DroppedLabel> dropped;
};

// The series labels for one profile: __name__; service_name (application
// name, else the profile's, else "unknown_service"); host labels; tags;
// source labels; pid when asked; __session_id__ from the profile;
// __delta__="false" for "memory" (allocation profiles are per-window
// deltas; Pyroscope < 2.0 would otherwise difference them); the profile's
// collector labels (profile.labels); then its workload labels through
// MergeUntrustedLabels, up to 30 labels in all.
SeriesLabels BuildSeriesLabels(const SeriesLabelConfig& config,
                               const WindowProfile& profile);

// Labels from the environment: hostname (gethostname), and in Kubernetes
// pod (POD_NAME) and namespace (POD_NAMESPACE), when set.
Labels HostLabelsFromEnvironment();

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_LABELS_H_
