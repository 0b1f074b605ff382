// TagLabeler: an application's tag sets (TagSet records) and span ids as
// pprof sample labels, for one process.
//
//   TagSet record --Define--> its tags through AdmitUntrustedLabel
//                             (pprof/label_rules.h) and a per-key budget
//                             of distinct values (beyond it: "other")
//   (tag set id, span id) --LabelsFor--> sample-label id --labels()-->
//                             sorted (name, value) pairs, span_id among them
//
// A tag may not set a name the collector or the server owns, the series
// labels of the collector's (`series_labels`, e.g. --tags), span_id or
// ringprof_cpu_source. An id keeps its first definition. Label sets are
// charged to the process's memory budget; past it a sample keeps its tags
// and loses its span id (or goes without both).
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_TAG_LABELER_H_
#define RINGPROF_COLLECTOR_PROFILE_TAG_LABELER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "collector/pprof/label_rules.h"
#include "collector/profile/memory_budget.h"

namespace ringprof {
namespace collector {

class TagLabeler {
 public:
  struct Stats {
    uint64_t labels_dropped = 0;  // tags refused by the label rules
    uint64_t values_folded = 0;   // tag values past the budget: "other"
    uint64_t unknown_sets = 0;    // samples naming a set never defined
  };

  // `memory` must outlive this object; `pid` names the process in logs.
  TagLabeler(uint32_t pid, size_t max_tag_values, Labels series_labels,
             ProcessMemory* memory);
  TagLabeler(const TagLabeler&) = delete;
  TagLabeler& operator=(const TagLabeler&) = delete;

  // A tag set: key/value pairs as written (untrusted). False (nothing
  // defined) when the process already has more sets than any emitter
  // makes; a set already defined is left as it is (true).
  bool Define(
      uint32_t id,
      absl::Span<const std::pair<absl::string_view, absl::string_view>> tags);

  // The sample-label id of a sample naming `tag_set` and `span_id` (0 for
  // none: no tags, no span, or a tag set not defined yet, counted).
  uint32_t LabelsFor(uint32_t tag_set, uint64_t span_id);
  const Labels& labels(uint32_t id) const { return sample_labels_[id]; }

  const Stats& stats() const { return stats_; }

 private:
  // The tag's value under the per-key budget.
  std::string Budgeted(const std::string& name, std::string value);

  const uint32_t pid_;
  const size_t max_tag_values_;
  Labels reserved_;
  ProcessMemory* const memory_;
  // Tag sets by the emitter's id: labels after the rules and the budget.
  absl::flat_hash_map<uint32_t, Labels> tag_sets_;
  // Per tag key, the values admitted so far (the budget).
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>>
      tag_values_;
  // Distinct sample label sets; [0] is the empty one.
  std::vector<Labels> sample_labels_{Labels()};
  absl::flat_hash_map<std::pair<uint32_t, uint64_t>, uint32_t>
      sample_labels_index_;
  Stats stats_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_TAG_LABELER_H_
