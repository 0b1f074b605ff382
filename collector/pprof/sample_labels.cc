#include "collector/pprof/sample_labels.h"

#include <algorithm>
#include <set>

namespace ringprof {
namespace collector {

bool StaysOnSamples(absl::string_view name) {
  return name == kSpanIdLabel || name == kTraceIdLabel || name == "profile_id";
}

std::vector<std::string> PromotedSampleLabelNames(
    const perftools::profiles::Profile& profile, const Labels& series) {
  const auto& strings = profile.string_table();
  std::set<int64_t> keys;
  for (const auto& sample : profile.sample()) {
    for (const auto& label : sample.label()) {
      if (label.str() > 0) keys.insert(label.key());
    }
  }
  std::set<std::string> names;
  for (int64_t key : keys) {
    if (key < 0 || key >= strings.size()) continue;
    const std::string& name = strings[static_cast<int>(key)];
    if (!StaysOnSamples(name) && !HasLabel(series, name)) names.insert(name);
  }
  return {names.begin(), names.end()};
}

bool SampleLabelsFit(const perftools::profiles::Profile& profile,
                     const Labels& series, size_t max_names) {
  return series.size() + PromotedSampleLabelNames(profile, series).size() <=
         max_names;
}

std::vector<std::string> FitSampleLabels(
    const Labels& series, size_t max_names,
    perftools::profiles::Profile* profile) {
  std::vector<std::string> names = PromotedSampleLabelNames(*profile, series);
  const size_t room = max_names > series.size() ? max_names - series.size() : 0;
  if (names.size() <= room) return {};
  std::vector<std::string> removed(names.begin() + room, names.end());
  const std::set<absl::string_view> drop(removed.begin(), removed.end());
  const auto& strings = profile->string_table();
  auto dropped = [&](const perftools::profiles::Label& label) {
    return label.str() > 0 && label.key() >= 0 &&
           label.key() < strings.size() &&
           drop.count(strings[static_cast<int>(label.key())]) > 0;
  };
  for (auto& sample : *profile->mutable_sample()) {
    auto* labels = sample.mutable_label();
    labels->erase(std::remove_if(labels->begin(), labels->end(), dropped),
                  labels->end());
  }
  return removed;
}

}  // namespace collector
}  // namespace ringprof
