#include "collector/profile/tag_labeler.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "collector/base/hex.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

constexpr char kOtherTagValue[] = "other";
// The emitter interns at most this many tag sets per process.
constexpr size_t kMaxTagSets = 4096;
// Memory charged per distinct sample label set, besides its strings.
constexpr uint64_t kLabelSetBytes = 96;

// This file's metrics, registered together on first use.
struct FileMetrics {
  Counter& tag_labels_dropped = Metrics::Get().GetCounter(
      "ringprof_tag_labels_dropped_total",
      "Application tags left off their samples by the label rules (invalid "
      "name, empty value, or a name the collector owns).");
  Counter& tag_values_folded = Metrics::Get().GetCounter(
      "ringprof_tag_values_folded_total",
      "Tag sets whose value of some key became \"other\" because the key "
      "already had --max-tag-values distinct values in its process.");
  Counter& unknown_tag_sets = Metrics::Get().GetCounter(
      "ringprof_tag_sets_unknown_total",
      "Samples naming a tag set whose definition was not read (lost in the "
      "ring, or read after the sample); they go without their tags.");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

}  // namespace

TagLabeler::TagLabeler(uint32_t pid, size_t max_tag_values,
                       Labels series_labels, ProcessMemory* memory)
    : pid_(pid),
      max_tag_values_(max_tag_values),
      reserved_(std::move(series_labels)),
      memory_(memory) {
  // span_id is ringprof_span_set's; ringprof_cpu_source a series label.
  reserved_.emplace_back(kSpanIdLabel, "");
  reserved_.emplace_back(kCpuSourceLabel, "");
}

bool TagLabeler::Define(
    uint32_t id,
    absl::Span<const std::pair<absl::string_view, absl::string_view>> tags) {
  // An id keeps its first definition: the emitter re-sends the same one,
  // and samples already counted under it must not change meaning.
  if (tag_sets_.contains(id)) return true;
  if (tag_sets_.size() >= kMaxTagSets) return false;
  Labels labels;
  for (const auto& [key, value] : tags) {
    AdmittedLabel tag = AdmitUntrustedLabel(key, value, labels, reserved_);
    if (!tag.refused.empty()) {
      ++stats_.labels_dropped;
      metrics().tag_labels_dropped.Add(1);
      LogWarningLimited(
          "tag-label",
          absl::StrFormat("pid %u: tag %s left out of its samples (%s)", pid_,
                          absl::CHexEscape(key.substr(0, 64)), tag.refused));
      continue;
    }
    std::string text = Budgeted(tag.name, std::move(tag.value));
    labels.emplace_back(std::move(tag.name), std::move(text));
  }
  std::sort(labels.begin(), labels.end());
  tag_sets_.emplace(id, std::move(labels));
  return true;
}

std::string TagLabeler::Budgeted(const std::string& name, std::string value) {
  absl::flat_hash_set<std::string>& seen = tag_values_[name];
  if (seen.contains(value)) return value;
  if (seen.size() >= max_tag_values_) {
    ++stats_.values_folded;
    metrics().tag_values_folded.Add(1);
    return kOtherTagValue;
  }
  seen.insert(value);
  return value;
}

uint32_t TagLabeler::LabelsFor(uint32_t tag_set, uint64_t span_id) {
  if (tag_set == 0 && span_id == 0) return 0;
  auto known = tag_sets_.find(tag_set);
  if (tag_set != 0 && known == tag_sets_.end()) {
    // Its TagSet record was lost or is yet to come (the emitter re-sends it
    // within seconds): this sample goes without its tags.
    ++stats_.unknown_sets;
    metrics().unknown_tag_sets.Add(1);
    tag_set = 0;
    if (span_id == 0) return 0;
  }
  auto [it, inserted] = sample_labels_index_.try_emplace({tag_set, span_id}, 0);
  if (!inserted) return it->second;
  Labels labels;
  if (tag_set != 0) labels = known->second;
  if (span_id != 0) {
    labels.emplace_back(kSpanIdLabel, HexId(span_id));
    std::sort(labels.begin(), labels.end());
  }
  uint64_t cost = kLabelSetBytes;
  for (const auto& [name, value] : labels) cost += name.size() + value.size();
  if (!memory_->Charge(cost)) {
    // Past the memory budget: keep the tags, drop the span.
    sample_labels_index_.erase(it);
    return span_id != 0 && tag_set != 0 ? LabelsFor(tag_set, 0) : 0;
  }
  it->second = static_cast<uint32_t>(sample_labels_.size());
  sample_labels_.push_back(std::move(labels));
  return it->second;
}

}  // namespace collector
}  // namespace ringprof
