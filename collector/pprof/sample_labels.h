// Keeping a profile's sample labels within Pyroscope v2's 30 label names.
//
// Pyroscope v2 turns every string label on a pprof sample into a series
// label (pkg/model/pprofsplit/pprof_split.go: one series per distinct label
// set), except span_id, trace_id and profile_id, which stay on the samples;
// a sample label named like a series label is ignored (the series label
// wins). Each series so made must pass the label rules, 30 names at most
// (pkg/validation/validate.go ValidateLabels), or the whole profile is
// refused (400). The names that count are therefore the series labels plus
// every other sample label name of the profile.
//
// Rule: series labels are never touched; the promoted sample label names
// are kept in name order while they fit, and the rest are removed from
// every sample (their samples stay, merged with their siblings by the
// server's normalisation). The caller counts and logs what was removed.
//
// Thread-safety: pure functions.
#ifndef RINGPROF_COLLECTOR_PPROF_SAMPLE_LABELS_H_
#define RINGPROF_COLLECTOR_PPROF_SAMPLE_LABELS_H_

#include <string>
#include <vector>

#include "collector/pprof/label_rules.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// Sample label names Pyroscope v2 keeps on samples (never series labels).
bool StaysOnSamples(absl::string_view name);

// The string sample label names of `profile` that Pyroscope v2 would add to
// the series labels `series` (not staying on samples, not already a series
// label), sorted.
std::vector<std::string> PromotedSampleLabelNames(
    const perftools::profiles::Profile& profile, const Labels& series);

// True when FitSampleLabels would leave `profile` unchanged.
bool SampleLabelsFit(const perftools::profiles::Profile& profile,
                     const Labels& series, size_t max_names);

// Removes from every sample of `profile` the promoted label names beyond
// `max_names` - series.size() (see the rule above); returns the removed
// names (empty: `profile` unchanged).
std::vector<std::string> FitSampleLabels(const Labels& series, size_t max_names,
                                         perftools::profiles::Profile* profile);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_SAMPLE_LABELS_H_
