#include "collector/pprof/profile_merger.h"

#include <algorithm>
#include <vector>

#include "collector/pprof/profile_kinds.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;

bool SameTypes(const ProfileSpec& a, const ProfileSpec& b) {
  if (a.sample_types.size() != b.sample_types.size()) return false;
  for (size_t i = 0; i < a.sample_types.size(); ++i) {
    if (a.sample_types[i].type != b.sample_types[i].type ||
        a.sample_types[i].unit != b.sample_types[i].unit) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::Status ProfileMerger::Add(const Profile& p, const std::string& series) {
  return Add(p, series, nullptr);
}

absl::Status ProfileMerger::Add(std::shared_ptr<const Profile> profile,
                                const std::string& series) {
  const Profile& p = *profile;
  return Add(p, series, std::move(profile));
}

absl::Status ProfileMerger::Add(const Profile& p, const std::string& series,
                                std::shared_ptr<const Profile> shared) {
  const ProfileSpec spec = SpecOfProfile(p);
  if (builder_ == nullptr) {
    spec_ = spec;
    builder_ = std::make_unique<PprofBuilder>(spec_, limits_);
    end_nanos_ = spec.time_nanos + spec.duration_nanos;
    for (const ValueTypeSpec& type : spec_.sample_types) {
      snapshot_columns_.push_back(IsSnapshotSampleType(type.type));
      sum_columns_.push_back(!snapshot_columns_.back());
    }
  } else if (!SameTypes(spec_, spec)) {
    return absl::InvalidArgumentError(
        "cannot merge profiles with different sample types");
  }
  // A bad profile adds nothing (AddProfile checks it first).
  absl::Status added = builder_->AddProfile(p, sum_columns_);
  if (!added.ok()) return added;

  const int64_t end =
      std::max(end_nanos_, spec.time_nanos + spec.duration_nanos);
  if (spec.time_nanos != 0 &&
      (spec_.time_nanos == 0 || spec.time_nanos < spec_.time_nanos)) {
    spec_.time_nanos = spec.time_nanos;
  }
  end_nanos_ = end;
  if (std::find(snapshot_columns_.begin(), snapshot_columns_.end(), true) !=
      snapshot_columns_.end()) {
    // Snapshot values: only the series' latest profile counts.
    auto it = latest_.find(series);
    if (it == latest_.end() || p.time_nanos() >= it->second->time_nanos()) {
      latest_[series] = shared != nullptr ? std::move(shared)
                                          : std::make_shared<const Profile>(p);
    }
  }
  return absl::OkStatus();
}

Profile ProfileMerger::Build() const {
  if (builder_ == nullptr) return Profile();
  if (latest_.empty()) return Spanned(builder_->Build());
  PprofBuilder merged = *builder_;
  return BuildWithSnapshots(&merged);
}

Profile ProfileMerger::Finish() {
  if (builder_ == nullptr) return Profile();
  Profile p = BuildWithSnapshots(builder_.get());
  *this = ProfileMerger(limits_);
  return p;
}

Profile ProfileMerger::BuildWithSnapshots(PprofBuilder* builder) const {
  for (const auto& [series, latest] : latest_) {
    // Checked when it was added.
    builder->AddProfile(*latest, snapshot_columns_).IgnoreError();
  }
  return Spanned(builder->Build());
}

Profile ProfileMerger::Spanned(Profile p) const {
  p.set_time_nanos(spec_.time_nanos);
  p.set_duration_nanos(std::max<int64_t>(0, end_nanos_ - spec_.time_nanos));
  return p;
}

}  // namespace collector
}  // namespace ringprof
