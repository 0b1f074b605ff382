#include "collector/pprof/pprof_builder.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/pprof/utf8.h"

namespace ringprof {
namespace collector {
namespace {

// Content keys for interning: fields joined with a separator that cannot
// occur in numbers, so distinct contents never collide.
constexpr absl::string_view kSep = "\x1f";

// string_table with "" at index 0. Every string of a profile enters here,
// so this is the one place where workload bytes (file names, symbols,
// build ids) are made valid UTF-8 and cut to Pyroscope's symbol length.
class StringTable {
 public:
  StringTable(perftools::profiles::Profile* profile, size_t max_bytes)
      : profile_(profile), max_bytes_(max_bytes) {
    Intern("");
  }
  int64_t Intern(const std::string& s) {
    if (s.size() <= max_bytes_ && IsValidUtf8(s)) return Add(s);
    return Add(SanitizeUtf8(s, max_bytes_));
  }

 private:
  int64_t Add(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, index_.size());
    if (inserted) profile_->add_string_table(s);
    return it->second;
  }

  perftools::profiles::Profile* profile_;
  const size_t max_bytes_;
  absl::flat_hash_map<std::string, int64_t> index_;
};

const std::string& StringAt(const perftools::profiles::Profile& p,
                            int64_t index) {
  static const std::string* const kEmpty = new std::string();
  return index >= 0 && index < p.string_table_size() ? p.string_table(index)
                                                     : *kEmpty;
}

// The builder's ids of a parsed profile's mappings and locations.
struct ImportedIds {
  absl::flat_hash_map<uint64_t, PprofBuilder::MappingId> mappings;
  absl::flat_hash_map<uint64_t, PprofBuilder::LocationId> locations;
};

void ImportMappings(const perftools::profiles::Profile& p,
                    PprofBuilder& builder, ImportedIds& ids) {
  for (const auto& m : p.mapping()) {
    MappingSpec spec;
    spec.module.start = m.memory_start();
    spec.module.size = m.memory_limit() - m.memory_start();
    spec.module.file_offset = m.file_offset();
    spec.module.path = StringAt(p, m.filename());
    spec.module.build_id_hex = StringAt(p, m.build_id());
    spec.has_functions = m.has_functions();
    spec.has_filenames = m.has_filenames();
    spec.has_line_numbers = m.has_line_numbers();
    spec.has_inline_frames = m.has_inline_frames();
    ids.mappings[m.id()] = builder.InternMapping(spec);
  }
}

// `p` passed CheckPprofIds: every id resolves.
void ImportLocations(const perftools::profiles::Profile& p,
                     PprofBuilder& builder, ImportedIds& ids) {
  absl::flat_hash_map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : p.function()) functions[f.id()] = &f;
  std::vector<LineSpec> lines;
  for (const auto& l : p.location()) {
    lines.clear();
    for (const auto& line : l.line()) {
      const perftools::profiles::Function& f = *functions[line.function_id()];
      lines.push_back(
          {StringAt(p, f.name()), StringAt(p, f.filename()), line.line()});
    }
    const PprofBuilder::MappingId mapping =
        l.mapping_id() == 0 ? 0 : ids.mappings[l.mapping_id()];
    ids.locations[l.id()] = builder.InternLocation(mapping, l.address(), lines);
  }
}

}  // namespace

ProfileSpec SpecOfProfile(const perftools::profiles::Profile& p) {
  ProfileSpec spec;
  for (const auto& vt : p.sample_type()) {
    spec.sample_types.push_back(
        {StringAt(p, vt.type()), StringAt(p, vt.unit())});
  }
  spec.period_type = {StringAt(p, p.period_type().type()),
                      StringAt(p, p.period_type().unit())};
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

PprofBuilder::PprofBuilder(ProfileSpec spec, PyroscopeLimits limits)
    : spec_(std::move(spec)), limits_(limits) {
  limits_.max_samples = std::max<size_t>(limits_.max_samples, 1);
  limits_.max_frames = std::max<size_t>(limits_.max_frames, 2);
  trimmed_location_ = InternSyntheticLocation("[trimmed]");
  truncated_location_ = InternSyntheticLocation("[truncated]");
}

PprofBuilder::MappingId PprofBuilder::InternMapping(const MappingSpec& m) {
  const ModuleInfo& module = m.module;
  key_.clear();
  absl::StrAppend(&key_, module.start, kSep, module.size, kSep,
                  module.file_offset, kSep, module.path, kSep,
                  module.build_id_hex);
  auto it = mapping_index_.find(key_);
  if (it == mapping_index_.end()) {
    const MappingId id = static_cast<MappingId>(mappings_.size() + 1);
    mapping_index_.emplace(key_, id);
    mappings_.push_back({m});
    return id;
  }
  // The same module seen with richer symbol information wins.
  MappingSpec& have = mappings_[it->second - 1].spec;
  have.has_functions |= m.has_functions;
  have.has_filenames |= m.has_filenames;
  have.has_line_numbers |= m.has_line_numbers;
  have.has_inline_frames |= m.has_inline_frames;
  return it->second;
}

uint32_t PprofBuilder::InternFunction(absl::string_view name,
                                      absl::string_view filename) {
  // The key is built in a reused buffer and looked up as a view: a string
  // is made only for a new function.
  key_.clear();
  absl::StrAppend(&key_, name, kSep, filename);
  auto it = function_index_.find(key_);
  if (it != function_index_.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(functions_.size());
  function_index_.emplace(key_, id);
  functions_.push_back({std::string(name), std::string(filename)});
  return id;
}

PprofBuilder::LocationId PprofBuilder::InternLocation(
    MappingId mapping, uint64_t address, absl::Span<const LineSpec> lines) {
  // Functions first (a known location's functions are known, so it adds
  // none; a new one adds them in line order), then the location by its
  // mapping, address and (function id, line) pairs: a short key.
  line_ids_.clear();
  for (const LineSpec& line : lines) {
    line_ids_.push_back(
        {InternFunction(line.function, line.filename), line.line});
  }
  key_.clear();
  absl::StrAppend(&key_, mapping, kSep, address);
  for (const Line& line : line_ids_) {
    absl::StrAppend(&key_, kSep, line.function, kSep, line.line);
  }
  auto it = location_index_.find(key_);
  if (it != location_index_.end()) return it->second;
  const LocationId id = static_cast<LocationId>(locations_.size() + 1);
  location_index_.emplace(key_, id);
  locations_.push_back({mapping, address, line_ids_});
  return id;
}

PprofBuilder::LocationId PprofBuilder::InternSyntheticLocation(
    absl::string_view function) {
  LineSpec line{std::string(function), "", 0};
  return InternLocation(0, 0, absl::MakeConstSpan(&line, 1));
}

PprofBuilder::LabelSetId PprofBuilder::InternLabels(const Labels& labels) {
  if (labels.empty()) return 0;
  std::string key;
  for (const auto& [name, value] : labels) {
    absl::StrAppend(&key, name.size(), kSep, name, value.size(), kSep, value);
  }
  auto [it, inserted] =
      label_set_index_.try_emplace(std::move(key), label_sets_.size() + 1);
  if (inserted) label_sets_.push_back(labels);
  return it->second;
}

void PprofBuilder::AddSample(absl::Span<const LocationId> stack,
                             absl::Span<const int64_t> values,
                             LabelSetId labels) {
  if (std::all_of(values.begin(), values.end(),
                  [](int64_t v) { return v == 0; })) {
    return;
  }
  std::vector<LocationId> key;
  if (stack.size() > limits_.max_frames) {
    // Keep the innermost frames: they say where the cost is.
    key.assign(stack.begin(), stack.begin() + (limits_.max_frames - 1));
    key.push_back(truncated_location_);
  } else {
    key.assign(stack.begin(), stack.end());
  }
  const size_t stack_size = key.size();
  if (labels != 0) {
    // Location ids are >= 1: a 0 separates the stack from the labels.
    key.push_back(0);
    key.push_back(labels);
  }
  auto [it, inserted] = sample_index_.try_emplace(key, samples_.size());
  if (inserted) {
    key.resize(stack_size);
    samples_.push_back({std::move(key),
                        std::vector<int64_t>(spec_.sample_types.size(), 0),
                        labels});
  }
  std::vector<int64_t>& sum = samples_[it->second].values;
  for (size_t i = 0; i < sum.size() && i < values.size(); ++i) {
    sum[i] += values[i];
  }
}

absl::Status PprofBuilder::AddProfile(const perftools::profiles::Profile& p,
                                      absl::Span<const bool> columns) {
  // Checked before anything is added: a bad profile adds nothing.
  if (absl::Status ids = CheckPprofIds(p); !ids.ok()) return ids;
  ImportedIds ids;
  ImportMappings(p, *this, ids);
  ImportLocations(p, *this, ids);
  std::vector<LocationId> stack;
  std::vector<int64_t> values;
  Labels labels;
  for (const auto& s : p.sample()) {
    stack.clear();
    for (uint64_t id : s.location_id()) stack.push_back(ids.locations[id]);
    values.assign(s.value().begin(), s.value().end());
    values.resize(spec_.sample_types.size(), 0);
    for (size_t i = 0; i < values.size() && i < columns.size(); ++i) {
      if (!columns[i]) values[i] = 0;
    }
    labels.clear();
    for (const auto& label : s.label()) {
      if (label.str() != 0) {
        labels.emplace_back(StringAt(p, label.key()), StringAt(p, label.str()));
      }
    }
    AddSample(stack, values, InternLabels(labels));
  }
  return absl::OkStatus();
}

std::vector<size_t> PprofBuilder::SamplesByRank() const {
  // A sample's rank is its largest share of any value's total, so a stack
  // that matters in one column (e.g. in-use bytes of memory allocated in
  // earlier windows, with no allocated bytes now) is kept as surely as one
  // that matters in the primary column. Ties: the primary value.
  const size_t columns = spec_.sample_types.size();
  std::vector<double> totals(columns, 0);
  for (const Sample& s : samples_) {
    for (size_t i = 0; i < columns && i < s.values.size(); ++i) {
      totals[i] += std::abs(static_cast<double>(s.values[i]));
    }
  }
  std::vector<double> rank(samples_.size(), 0);
  for (size_t k = 0; k < samples_.size(); ++k) {
    const auto& values = samples_[k].values;
    for (size_t i = 0; i < columns && i < values.size(); ++i) {
      if (totals[i] > 0) {
        rank[k] = std::max(
            rank[k], std::abs(static_cast<double>(values[i])) / totals[i]);
      }
    }
  }
  std::vector<size_t> order(samples_.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t primary = static_cast<size_t>(spec_.primary_value);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rank[a] != rank[b]) return rank[a] > rank[b];
    const auto& va = samples_[a].values;
    const auto& vb = samples_[b].values;
    int64_t pa = primary < va.size() ? va[primary] : 0;
    int64_t pb = primary < vb.size() ? vb[primary] : 0;
    return pa > pb;
  });
  return order;
}

perftools::profiles::Profile PprofBuilder::Emit(size_t keep) const {
  perftools::profiles::Profile profile;
  StringTable strings(&profile, limits_.max_string_bytes);
  for (const ValueTypeSpec& vt : spec_.sample_types) {
    auto* type = profile.add_sample_type();
    type->set_type(strings.Intern(vt.type));
    type->set_unit(strings.Intern(vt.unit));
  }
  profile.mutable_period_type()->set_type(
      strings.Intern(spec_.period_type.type));
  profile.mutable_period_type()->set_unit(
      strings.Intern(spec_.period_type.unit));
  profile.set_period(spec_.period);
  profile.set_time_nanos(spec_.time_nanos);
  profile.set_duration_nanos(spec_.duration_nanos);
  if (spec_.primary_value >= 0 &&
      static_cast<size_t>(spec_.primary_value) < spec_.sample_types.size()) {
    profile.set_default_sample_type(
        strings.Intern(spec_.sample_types[spec_.primary_value].type));
  }

  // Output ids are assigned in order of first use, so only referenced
  // entries are written and ids stay dense.
  std::vector<uint64_t> mapping_out(mappings_.size() + 1, 0);
  std::vector<uint64_t> function_out(functions_.size(), 0);
  std::vector<uint64_t> location_out(locations_.size() + 1, 0);

  auto emit_mapping = [&](MappingId id) -> uint64_t {
    if (id == 0) return 0;
    if (mapping_out[id] != 0) return mapping_out[id];
    const MappingSpec& m = mappings_[id - 1].spec;
    auto* out = profile.add_mapping();
    out->set_id(profile.mapping_size());
    out->set_memory_start(m.module.start);
    out->set_memory_limit(m.module.start + m.module.size);
    out->set_file_offset(m.module.file_offset);
    out->set_filename(strings.Intern(m.module.path));
    out->set_build_id(strings.Intern(m.module.build_id_hex));
    out->set_has_functions(m.has_functions);
    out->set_has_filenames(m.has_filenames);
    out->set_has_line_numbers(m.has_line_numbers);
    out->set_has_inline_frames(m.has_inline_frames);
    return mapping_out[id] = out->id();
  };
  auto emit_function = [&](uint32_t index) -> uint64_t {
    if (function_out[index] != 0) return function_out[index];
    const Function& f = functions_[index];
    auto* out = profile.add_function();
    out->set_id(profile.function_size());
    out->set_name(strings.Intern(f.name));
    out->set_system_name(out->name());
    out->set_filename(strings.Intern(f.filename));
    return function_out[index] = out->id();
  };
  auto emit_location = [&](LocationId id) -> uint64_t {
    if (location_out[id] != 0) return location_out[id];
    const Location& l = locations_[id - 1];
    uint64_t mapping = emit_mapping(l.mapping);
    auto* out = profile.add_location();
    out->set_id(profile.location_size());
    out->set_mapping_id(mapping);
    out->set_address(l.address);
    for (const Line& line : l.lines) {
      auto* out_line = out->add_line();
      out_line->set_function_id(emit_function(line.function));
      out_line->set_line(line.line);
    }
    return location_out[id] = out->id();
  };

  std::vector<size_t> order = SamplesByRank();
  // Mappings in the order they were interned (callers intern the main
  // binary first: pprof treats the first mapping as the program).
  std::vector<bool> mapping_used(mappings_.size() + 1, false);
  for (size_t rank = 0; rank < order.size() && rank < keep; ++rank) {
    for (LocationId id : samples_[order[rank]].stack) {
      mapping_used[locations_[id - 1].mapping] = true;
    }
  }
  for (MappingId id = 1; id <= mappings_.size(); ++id) {
    if (mapping_used[id]) emit_mapping(id);
  }
  std::vector<int64_t> trimmed(spec_.sample_types.size(), 0);
  bool any_trimmed = false;
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const Sample& s = samples_[order[rank]];
    if (rank >= keep) {
      for (size_t i = 0; i < trimmed.size(); ++i) trimmed[i] += s.values[i];
      any_trimmed = true;
      continue;
    }
    auto* out = profile.add_sample();
    for (LocationId id : s.stack) out->add_location_id(emit_location(id));
    for (int64_t v : s.values) out->add_value(v);
    if (s.labels != 0) {
      for (const auto& [name, value] : label_sets_[s.labels - 1]) {
        auto* label = out->add_label();
        label->set_key(strings.Intern(name));
        label->set_str(strings.Intern(value));
      }
    }
  }
  if (any_trimmed) {
    auto* out = profile.add_sample();
    out->add_location_id(emit_location(trimmed_location_));
    for (int64_t v : trimmed) out->add_value(v);
  }
  return profile;
}

perftools::profiles::Profile PprofBuilder::Build() const {
  size_t keep = samples_.size();
  if (keep > limits_.max_samples) keep = limits_.max_samples - 1;
  while (true) {
    perftools::profiles::Profile profile = Emit(keep);
    if (profile.ByteSizeLong() <= limits_.max_bytes || keep == 0) {
      return profile;
    }
    keep /= 2;
  }
}

}  // namespace collector
}  // namespace ringprof
