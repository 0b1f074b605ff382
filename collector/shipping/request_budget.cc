#include "collector/shipping/request_budget.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "collector/profile/pprof_builder.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using perftools::profiles::Profile;

const std::string& Str(const Profile& p, int64_t index) {
  static const std::string* const kEmpty = new std::string();
  return index >= 0 && index < p.string_table_size() ? p.string_table(index)
                                                     : *kEmpty;
}

ProfileSpec SpecOf(const Profile& p) {
  ProfileSpec spec;
  for (const auto& vt : p.sample_type()) {
    spec.sample_types.push_back({Str(p, vt.type()), Str(p, vt.unit())});
  }
  spec.period_type = {Str(p, p.period_type().type()),
                      Str(p, p.period_type().unit())};
  spec.period = p.period();
  spec.time_nanos = p.time_nanos();
  spec.duration_nanos = p.duration_nanos();
  spec.primary_value = p.sample_type_size() - 1;
  for (int i = 0; i < p.sample_type_size(); ++i) {
    if (p.default_sample_type() != 0 &&
        p.sample_type(i).type() == p.default_sample_type()) {
      spec.primary_value = i;
    }
  }
  return spec;
}

}  // namespace

size_t RequestCost(const Labels& labels, size_t pprof_bytes) {
  size_t cost = pprof_bytes;
  for (const auto& [name, value] : labels) cost += name.size() + value.size();
  return cost;
}

absl::StatusOr<std::string> FitProfile(const std::string& pprof,
                                       size_t max_bytes) {
  if (pprof.size() <= max_bytes) return pprof;
  Profile p;
  if (!p.ParseFromString(pprof) || p.sample_type_size() == 0) {
    return absl::InvalidArgumentError("cannot parse the profile to trim it");
  }
  PyroscopeLimits limits;
  limits.max_bytes = max_bytes;
  limits.max_frames = SIZE_MAX;  // already within Pyroscope's depth
  PprofBuilder builder(SpecOf(p), limits);

  absl::flat_hash_map<uint64_t, PprofBuilder::MappingId> mappings;
  for (const auto& m : p.mapping()) {
    MappingSpec spec;
    spec.memory_start = m.memory_start();
    spec.memory_limit = m.memory_limit();
    spec.file_offset = m.file_offset();
    spec.filename = Str(p, m.filename());
    spec.build_id = Str(p, m.build_id());
    spec.has_functions = m.has_functions();
    spec.has_filenames = m.has_filenames();
    spec.has_line_numbers = m.has_line_numbers();
    spec.has_inline_frames = m.has_inline_frames();
    mappings[m.id()] = builder.InternMapping(spec);
  }
  absl::flat_hash_map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : p.function()) functions[f.id()] = &f;
  absl::flat_hash_map<uint64_t, PprofBuilder::LocationId> locations;
  std::vector<LineSpec> lines;
  for (const auto& loc : p.location()) {
    lines.clear();
    for (const auto& line : loc.line()) {
      auto f = functions.find(line.function_id());
      if (f == functions.end()) continue;
      lines.push_back({Str(p, f->second->name()), Str(p, f->second->filename()),
                       line.line()});
    }
    auto m = mappings.find(loc.mapping_id());
    locations[loc.id()] = builder.InternLocation(
        m == mappings.end() ? 0 : m->second, loc.address(), lines);
  }
  std::vector<PprofBuilder::LocationId> stack;
  for (const auto& s : p.sample()) {
    stack.clear();
    for (uint64_t id : s.location_id()) {
      auto it = locations.find(id);
      if (it != locations.end()) stack.push_back(it->second);
    }
    builder.AddSample(stack,
                      absl::MakeConstSpan(s.value().data(), s.value().size()));
  }
  std::string out = builder.Build().SerializeAsString();
  if (out.size() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a profile of ", pprof.size(),
                     " bytes cannot be trimmed to ", max_bytes, " bytes"));
  }
  return out;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
