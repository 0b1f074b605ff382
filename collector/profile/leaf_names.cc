#include "collector/profile/leaf_names.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "collector/base/file.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

// "38.2%", "<0.1%" for a share too small to show, "0%" for none.
std::string Percent(int64_t part, int64_t total) {
  if (part <= 0 || total <= 0) return "0%";
  const double percent = 100.0 * static_cast<double>(part) / total;
  if (percent < 0.05) return "<0.1%";
  return absl::StrFormat("%.1f%%", percent);
}

std::string Metric(absl::string_view family, ProfileKind kind) {
  return absl::StrCat(family, "{profile=\"", KindName(kind), "\"}");
}

const char* DefaultSampleType(ProfileKind kind) {
  const ProfileKindInfo& info = KindInfo(kind);
  return info.sample_types[info.default_sample_type].type;
}

}  // namespace

LeafNames& LeafNames::operator+=(const LeafNames& other) {
  total += other.total;
  unnamed += other.unnamed;
  for (const auto& [path, module] : other.modules) {
    UnnamedModule& sum = modules[path];
    if (sum.reason.empty()) sum.reason = module.reason;
    sum.value += module.value;
  }
  return *this;
}

LeafNamesByKind& operator+=(LeafNamesByKind& sum,
                            const LeafNamesByKind& other) {
  for (const auto& [kind, leaves] : other) sum[kind] += leaves;
  return sum;
}

void ExportLeafNames(ProfileKind kind, const LeafNames& window) {
  Counter& total = Metrics::Get().GetCounter(
      Metric("ringprof_profile_value_total", kind),
      "Value of the samples with a stack, per profile kind, in its default "
      "sample type (the one its flame graph shows).");
  Counter& unnamed = Metrics::Get().GetCounter(
      Metric("ringprof_profile_unsymbolized_value_total", kind),
      "Of ringprof_profile_value_total, the value of the samples whose leaf "
      "frame has no function name (module+0x<offset> or [module] "
      "0x<start>); the reason per module is logged once.");
  Gauge& ratio = Metrics::Get().GetGauge(
      Metric("ringprof_profile_unsymbolized_ratio", kind),
      "ringprof_profile_unsymbolized_value_total over "
      "ringprof_profile_value_total since the collector started (rate() the "
      "two for a recent share).");
  total.Add(static_cast<uint64_t>(std::max<int64_t>(0, window.total)));
  unnamed.Add(static_cast<uint64_t>(std::max<int64_t>(0, window.unnamed)));
  if (total.value() > 0) {
    ratio.Set(static_cast<double>(unnamed.value()) /
              static_cast<double>(total.value()));
  }
}

std::vector<std::string> LeafNameSummary(const LeafNamesByKind& leaves,
                                         size_t max_modules) {
  std::vector<std::string> shares;
  // Per module: its share of each kind, and the largest (for the order).
  struct Module {
    std::string path;
    std::string reason;
    std::vector<std::string> shares;
    double largest = 0;
  };
  std::map<std::string, Module> modules;
  for (const ProfileKindInfo& info : ProfileKinds()) {
    auto it = leaves.find(info.kind);
    if (it == leaves.end() || it->second.total <= 0) continue;
    const LeafNames& kind = it->second;
    shares.push_back(absl::StrCat(info.name, " ",
                                  Percent(kind.unnamed, kind.total), " of ",
                                  DefaultSampleType(info.kind)));
    for (const auto& [path, unnamed] : kind.modules) {
      if (unnamed.value <= 0) continue;
      Module& module = modules[path];
      module.path = path;
      if (module.reason.empty()) module.reason = unnamed.reason;
      module.shares.push_back(
          absl::StrCat(info.name, " ", Percent(unnamed.value, kind.total)));
      module.largest = std::max(
          module.largest, static_cast<double>(unnamed.value) / kind.total);
    }
  }
  if (shares.empty()) return {};
  std::vector<std::string> lines = {
      absl::StrCat("unsymbolized (samples whose leaf has no function name): ",
                   absl::StrJoin(shares, ", "))};
  std::vector<const Module*> sorted;
  for (const auto& [path, module] : modules) sorted.push_back(&module);
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const Module* a, const Module* b) { return a->largest > b->largest; });
  for (size_t i = 0; i < sorted.size() && i < max_modules; ++i) {
    const Module& module = *sorted[i];
    lines.push_back(absl::StrCat(
        "  ", module.path.empty() ? "[no module]" : Basename(module.path), " (",
        absl::StrJoin(module.shares, ", "), "): ", module.reason));
  }
  if (sorted.size() > max_modules) {
    lines.push_back(absl::StrCat("  and ", sorted.size() - max_modules,
                                 " more modules (their reasons logged above)"));
  }
  return lines;
}

}  // namespace collector
}  // namespace ringprof
