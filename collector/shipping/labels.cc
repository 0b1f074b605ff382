#include "collector/shipping/labels.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

// Sets `name` (replacing a value already there).
void Set(Labels* labels, const std::string& name, std::string value) {
  for (auto& kv : *labels) {
    if (kv.first == name) {
      kv.second = std::move(value);
      return;
    }
  }
  labels->emplace_back(name, std::move(value));
}

}  // namespace

SeriesLabels BuildSeriesLabels(const SeriesLabelConfig& config,
                               const WindowProfile& profile) {
  SeriesLabels out;
  Labels& labels = out.labels;
  const ProfileKindInfo& kind = KindInfo(profile.kind);
  labels.emplace_back("__name__", kind.name);
  std::string service = config.application_name;
  if (service.empty()) service = SanitizeLabelValue(profile.service_name);
  labels.emplace_back("service_name",
                      service.empty() ? "unknown_service" : service);
  for (const auto& [k, v] : config.host_labels) {
    if (!v.empty()) Set(&labels, k, SanitizeLabelValue(v));
  }
  for (const auto& [k, v] : config.tags) Set(&labels, k, v);
  for (const auto& [k, v] : config.source_labels) Set(&labels, k, v);
  if (config.pid_label && profile.pid != 0) {
    Set(&labels, "pid", absl::StrCat(profile.pid));
  }
  if (!profile.session_id.empty()) {
    Set(&labels, "__session_id__", profile.session_id);
  }
  if (kind.not_cumulative) Set(&labels, "__delta__", "false");
  // The collector's own per-profile labels (e.g. ringprof_cpu_source).
  for (const auto& [k, v] : profile.labels) {
    if (IsCollectorOwnedLabel(k) || HasLabel(labels, k)) continue;
    std::string value = SanitizeLabelValue(v);
    if (!value.empty()) labels.emplace_back(k, std::move(value));
  }
  out.dropped = MergeUntrustedLabels(profile.workload_labels,
                                     kMaxLabelsPerSeries, &labels);
  std::sort(labels.begin(), labels.end());
  return out;
}

Labels HostLabelsFromEnvironment() {
  Labels labels;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') {
    labels.emplace_back("hostname", host);
  }
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod) {
    labels.emplace_back("pod", pod);
  }
  if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns) {
    labels.emplace_back("namespace", ns);
  }
  return labels;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
