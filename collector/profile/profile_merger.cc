#include "collector/profile/profile_merger.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/profile/pprof_validate.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;

ProfileSpec SpecOf(const Profile& p) {
  auto str = [&](int64_t i) -> std::string {
    return i >= 0 && i < p.string_table_size() ? p.string_table(i) : "";
  };
  ProfileSpec spec;
  for (const auto& vt : p.sample_type()) {
    spec.sample_types.push_back({str(vt.type()), str(vt.unit())});
  }
  spec.period_type = {str(p.period_type().type()), str(p.period_type().unit())};
  spec.period = p.period();
  spec.time_nanos = p.time_nanos();
  spec.duration_nanos = p.duration_nanos();
  spec.primary_value = std::max(0, p.sample_type_size() - 1);
  for (int i = 0; i < p.sample_type_size(); ++i) {
    if (p.default_sample_type() != 0 &&
        p.sample_type(i).type() == p.default_sample_type()) {
      spec.primary_value = i;
    }
  }
  return spec;
}

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

absl::Status ProfileMerger::Add(Profile&& p, const std::string& series) {
  return Add(p, series, &p);
}

absl::Status ProfileMerger::Add(const Profile& p, const std::string& series,
                                Profile* movable) {
  const ProfileSpec spec = SpecOf(p);
  if (builder_ == nullptr) {
    spec_ = spec;
    builder_ = std::make_unique<PprofBuilder>(spec_, limits_);
    end_nanos_ = spec.time_nanos + spec.duration_nanos;
    for (const ValueTypeSpec& type : spec_.sample_types) {
      snapshot_.push_back(absl::StartsWith(type.type, "inuse_"));
    }
  } else if (!SameTypes(spec_, spec)) {
    return absl::InvalidArgumentError(
        "cannot merge profiles with different sample types");
  }
  // Checked before anything is added: a bad profile adds nothing.
  absl::Status valid = CheckPprofIds(p);
  if (!valid.ok()) return valid;

  const int64_t end =
      std::max(end_nanos_, spec.time_nanos + spec.duration_nanos);
  if (spec.time_nanos != 0 &&
      (spec_.time_nanos == 0 || spec.time_nanos < spec_.time_nanos)) {
    spec_.time_nanos = spec.time_nanos;
  }
  end_nanos_ = end;
  absl::Status added = AddValues(p, /*snapshots=*/false, *builder_);
  if (std::find(snapshot_.begin(), snapshot_.end(), true) != snapshot_.end()) {
    // Snapshot values: only the series' latest profile counts.
    auto it = latest_.find(series);
    if (it == latest_.end() || p.time_nanos() >= it->second.time_nanos()) {
      Profile& latest = latest_[series];
      if (movable != nullptr) {
        latest = std::move(*movable);
      } else {
        latest = p;
      }
    }
  }
  return added;
}

absl::Status ProfileMerger::AddValues(const Profile& p, bool snapshots,
                                      PprofBuilder& builder) const {
  auto str = [&](int64_t i) -> std::string {
    return i >= 0 && i < p.string_table_size() ? p.string_table(i) : "";
  };

  absl::flat_hash_map<uint64_t, PprofBuilder::MappingId> mappings;
  for (const auto& m : p.mapping()) {
    MappingSpec ms;
    ms.memory_start = m.memory_start();
    ms.memory_limit = m.memory_limit();
    ms.file_offset = m.file_offset();
    ms.filename = str(m.filename());
    ms.build_id = str(m.build_id());
    ms.has_functions = m.has_functions();
    ms.has_filenames = m.has_filenames();
    ms.has_line_numbers = m.has_line_numbers();
    ms.has_inline_frames = m.has_inline_frames();
    mappings[m.id()] = builder.InternMapping(ms);
  }
  absl::flat_hash_map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : p.function()) functions[f.id()] = &f;
  absl::flat_hash_map<uint64_t, PprofBuilder::LocationId> locations;
  std::vector<LineSpec> lines;
  for (const auto& l : p.location()) {
    lines.clear();
    for (const auto& line : l.line()) {
      auto f = functions.find(line.function_id());
      if (f == functions.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("location ", l.id(), " names unknown function"));
      }
      lines.push_back(
          {str(f->second->name()), str(f->second->filename()), line.line()});
    }
    PprofBuilder::MappingId mapping = 0;
    if (l.mapping_id() != 0) {
      auto m = mappings.find(l.mapping_id());
      if (m == mappings.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("location ", l.id(), " names unknown mapping"));
      }
      mapping = m->second;
    }
    locations[l.id()] = builder.InternLocation(mapping, l.address(), lines);
  }
  std::vector<PprofBuilder::LocationId> stack;
  std::vector<int64_t> values;
  PprofBuilder::Labels labels;
  for (const auto& s : p.sample()) {
    stack.clear();
    for (uint64_t id : s.location_id()) {
      auto l = locations.find(id);
      if (l == locations.end()) {
        return absl::InvalidArgumentError("sample names unknown location");
      }
      stack.push_back(l->second);
    }
    values.assign(s.value().begin(), s.value().end());
    values.resize(spec_.sample_types.size(), 0);
    // Each column from the right source: sums of every profile, or the
    // latest snapshot of each series.
    for (size_t i = 0; i < values.size(); ++i) {
      if (snapshot_[i] != snapshots) values[i] = 0;
    }
    labels.clear();
    for (const auto& label : s.label()) {
      if (label.str() != 0) {
        labels.emplace_back(str(label.key()), str(label.str()));
      }
    }
    builder.AddSample(stack, values, builder.InternLabels(labels));
  }
  return absl::OkStatus();
}

Profile ProfileMerger::Build() const {
  if (builder_ == nullptr) return Profile();
  Profile p;
  if (latest_.empty()) {
    p = builder_->Build();
  } else {
    PprofBuilder merged = *builder_;
    for (const auto& [series, latest] : latest_) {
      AddValues(latest, /*snapshots=*/true, merged).IgnoreError();  // checked
    }
    p = merged.Build();
  }
  p.set_time_nanos(spec_.time_nanos);
  p.set_duration_nanos(std::max<int64_t>(0, end_nanos_ - spec_.time_nanos));
  return p;
}

}  // namespace collector
}  // namespace ringprof
