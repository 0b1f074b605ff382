// Series labels for Pyroscope: assembling the label set of one profile
// series (the collector's, the host's, the operator's tags and the
// workload's labels).
//
// The rules themselves are collector/pprof/label_rules.h.
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
#include "collector/pprof/label_rules.h"
#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {
namespace shipping {

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
// __delta__="false" for the kinds the table marks not_cumulative
// (per-window deltas, which Pyroscope < 2.0 would otherwise difference as
// it does Go's cumulative ones); the profile's
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
