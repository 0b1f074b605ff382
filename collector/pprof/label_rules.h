// Pyroscope's label rules, as code: what a series or sample label may be,
// repairing and admitting untrusted labels, parsing user tags, and the label
// names the collector owns.
//
// Rules (Grafana Pyroscope v2.2.1, pkg/validation/validate.go
// ValidateLabels, default limits in pkg/validation/limits.go): at most 30
// label names per series including __name__ and service_name, and every
// string label on a pprof sample but span_id/trace_id/profile_id becomes a
// series label too (collector/pprof/sample_labels.h); names at most 1024
// bytes, values valid UTF-8 of at most 2048 bytes; service_name non-empty;
// no name twice. v2 stores a name as sent (its
// -validation.disable-label-sanitization defaults to true: any UTF-8
// name). Pyroscope v1.x (and v2 with that option false) accepts only
// [A-Za-z0-9_.] without a leading digit, renames '.' to '_', and refuses a
// series where two names are equal after that.
//
// ringprof sends names both accept, unchanged: [A-Za-z0-9_.]+, no leading
// digit, and never two names equal once '.' is '_' (SameLabelName), so
// `k8s.cluster` is stored as `k8s.cluster` by v2 and as `k8s_cluster` by
// v1. Names starting with "__" are the server's: __session_id__,
// __delta__, __otel__, __order__ change how it stores or merges a series.
//
// The collector owns these names (nothing from a workload or a tag may set
// them): service_name, pid, hostname, pod, namespace and every "__" name.
// Tags (the operator's) may set hostname, pod and namespace; workload
// labels (untrusted) may set none of them. Sample labels the collector
// writes itself (kSpanIdLabel) and its per-profile series label
// (kCpuSourceLabel) are refused from a workload's tags too.
//
// Thread-safety: pure functions.
#ifndef RINGPROF_COLLECTOR_PPROF_LABEL_RULES_H_
#define RINGPROF_COLLECTOR_PPROF_LABEL_RULES_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/base/labels.h"

namespace ringprof {
namespace collector {

inline constexpr int kMaxLabelsPerSeries = 30;
inline constexpr size_t kMaxLabelNameBytes = 1024;
inline constexpr size_t kMaxLabelValueBytes = 2048;

// The sample label carrying a sample's span id (16 lower-case hex digits).
inline constexpr char kSpanIdLabel[] = "span_id";
// The sample label of a trace id (32 hex digits) as Pyroscope reads it;
// the collector writes none, an OTLP link may carry one.
inline constexpr char kTraceIdLabel[] = "trace_id";
// The series label saying where a CPU profile's time comes from ("timer" or
// "alloc_ticks").
inline constexpr char kCpuSourceLabel[] = "ringprof_cpu_source";

// True when `a` and `b` are one name to some Pyroscope server: equal, or
// equal once '.' is '_' (what v1 stores).
bool SameLabelName(absl::string_view a, absl::string_view b);

// True when `labels` has a label whose name is the same (SameLabelName) as
// `name`.
bool HasLabel(const Labels& labels, absl::string_view name);

// The name as ringprof sends it (unchanged), or InvalidArgument (naming
// the rule) for an empty or too long name, a leading digit, or any
// character outside [A-Za-z0-9_.].
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

// One untrusted label after the admission rule.
struct AdmittedLabel {
  // Sanitized; for an invalid name, the raw name made UTF-8, cut to 64
  // bytes (for a log line).
  std::string name;
  std::string value;  // sanitized
  // Empty when admitted; otherwise why not.
  std::string refused;
};

// The one admission rule for an untrusted label (a workload's Label
// record, an application's tag): the name through SanitizeLabelName, the
// value through SanitizeLabelValue; refused when the name is invalid or
// collector-owned, is in `reserved` or already in `present` (what is there
// wins), or the value is empty.
AdmittedLabel AdmitUntrustedLabel(absl::string_view name,
                                  absl::string_view value,
                                  const Labels& present,
                                  const Labels& reserved = {});

// Adds untrusted labels (a workload's Label records) to `labels` one by
// one through AdmitUntrustedLabel. A label is dropped alone, never the
// profile, when the rule refuses it or `labels` already has `max_labels`.
std::vector<DroppedLabel> MergeUntrustedLabels(const Labels& untrusted,
                                               size_t max_labels,
                                               Labels* labels);

// Parses PYROSCOPE_TAGS syntax: "k=v,k2=v2" (whitespace around items is
// trimmed; an empty string gives no tags). Names go through
// SanitizeLabelName ("k8s.cluster" stays "k8s.cluster"); values must be
// valid UTF-8 (a tag is typed by a person: an error beats a silent
// repair). service_name, pid and "__" names are refused, and a name may
// appear once (SameLabelName: "a.b" and "a_b" are one). InvalidArgument
// names the offending tag.
absl::StatusOr<Labels> ParseTags(absl::string_view text);

// OK when `name` is a label name ringprof may send ([A-Za-z_.][A-Za-z0-9_.]*)
// / `value` a valid label value.
absl::Status ValidateLabelName(absl::string_view name);
absl::Status ValidateLabelValue(absl::string_view name,
                                absl::string_view value);

// Checks a complete series label set (including __name__ and a non-empty
// service_name; no two names the same by SameLabelName).
absl::Status ValidateSeriesLabels(const Labels& labels);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_LABEL_RULES_H_
