#include "collector/otlp/encoder.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "collector/pprof/label_rules.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

namespace pb = ::opentelemetry::proto::profiles::v1development;
using ::opentelemetry::proto::common::v1::AnyValue;
using ::perftools::profiles::Profile;

constexpr char kBuildIdAttribute[] = "process.executable.build_id.gnu";
constexpr char kServiceNameAttribute[] = "service.name";

// Hex of exactly `bytes` bytes, decoded; empty when it is not.
std::string DecodeHexId(const std::string& hex, size_t bytes) {
  if (hex.size() != 2 * bytes) return "";
  for (char c : hex) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return "";
  }
  return absl::HexStringToBytes(hex);
}

// Interns everything the request's profiles share. Index 0 of every table
// is the zero value.
class Dictionary {
 public:
  explicit Dictionary(pb::ProfilesDictionary* out) : out_(out) {
    Str("");
    out_->add_mapping_table();
    out_->add_location_table();
    out_->add_function_table();
    out_->add_link_table();
    out_->add_attribute_table();
    out_->add_stack_table();
  }

  int32_t Str(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, out_->string_table_size());
    if (inserted) out_->add_string_table(s);
    return it->second;
  }

  int32_t StringAttribute(const std::string& key, const std::string& value) {
    AnyValue any;
    any.set_string_value(value);
    return Attribute(key, any, "");
  }

  int32_t Attribute(const std::string& key, const AnyValue& value,
                    const std::string& unit) {
    const int32_t key_index = Str(key), unit_index = Str(unit);
    std::string id = absl::StrCat(key_index, "/", unit_index, "/",
                                  value.SerializeAsString());
    auto [it, inserted] =
        attributes_.try_emplace(std::move(id), out_->attribute_table_size());
    if (inserted) {
      pb::KeyValueAndUnit* a = out_->add_attribute_table();
      a->set_key_strindex(key_index);
      *a->mutable_value() = value;
      a->set_unit_strindex(unit_index);
    }
    return it->second;
  }

  int32_t Link(const std::string& trace_id, const std::string& span_id) {
    auto [it, inserted] = links_.try_emplace(
        absl::StrCat(trace_id, "/", span_id), out_->link_table_size());
    if (inserted) {
      pb::Link* link = out_->add_link_table();
      link->set_trace_id(trace_id);
      link->set_span_id(span_id);
    }
    return it->second;
  }

  int32_t Stack(const std::vector<int32_t>& locations) {
    std::string id(reinterpret_cast<const char*>(locations.data()),
                   locations.size() * sizeof(int32_t));
    auto [it, inserted] =
        stacks_.try_emplace(std::move(id), out_->stack_table_size());
    if (inserted) {
      out_->add_stack_table()->mutable_location_indices()->Add(
          locations.begin(), locations.end());
    }
    return it->second;
  }

  pb::ProfilesDictionary* out() { return out_; }

 private:
  pb::ProfilesDictionary* const out_;
  absl::flat_hash_map<std::string, int32_t> strings_, attributes_, links_,
      stacks_;
};

// The pprof's tables turned into dictionary entries, by pprof id.
class TableImporter {
 public:
  TableImporter(const Profile& pprof, Dictionary* dict)
      : pprof_(pprof), dict_(dict) {}

  absl::Status Import() {
    for (const auto& m : pprof_.mapping()) {
      if (absl::Status s = ImportMapping(m); !s.ok()) return s;
    }
    for (const auto& f : pprof_.function()) {
      if (absl::Status s = ImportFunction(f); !s.ok()) return s;
    }
    for (const auto& l : pprof_.location()) {
      if (absl::Status s = ImportLocation(l); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> PprofString(int64_t index) const {
    if (index < 0 || index >= pprof_.string_table_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pprof string index ", index, " out of range"));
    }
    return pprof_.string_table(static_cast<int>(index));
  }

  // The dictionary index of a pprof location id; -1 when undefined.
  int32_t Location(uint64_t id) const {
    auto it = locations_.find(id);
    return it == locations_.end() ? -1 : it->second;
  }

 private:
  absl::StatusOr<int32_t> Str(int64_t pprof_index) {
    absl::StatusOr<std::string> s = PprofString(pprof_index);
    if (!s.ok()) return s.status();
    return dict_->Str(*s);
  }

  absl::Status ImportMapping(const perftools::profiles::Mapping& m) {
    absl::StatusOr<int32_t> filename = Str(m.filename());
    absl::StatusOr<std::string> build_id = PprofString(m.build_id());
    if (!filename.ok()) return filename.status();
    if (!build_id.ok()) return build_id.status();
    pb::Mapping* out = dict_->out()->add_mapping_table();
    out->set_memory_start(m.memory_start());
    out->set_memory_limit(m.memory_limit());
    out->set_file_offset(m.file_offset());
    out->set_filename_strindex(*filename);
    if (!build_id->empty()) {
      out->add_attribute_indices(
          dict_->StringAttribute(kBuildIdAttribute, *build_id));
    }
    mappings_[m.id()] = dict_->out()->mapping_table_size() - 1;
    return absl::OkStatus();
  }

  absl::Status ImportFunction(const perftools::profiles::Function& f) {
    absl::StatusOr<int32_t> name = Str(f.name());
    absl::StatusOr<int32_t> system_name = Str(f.system_name());
    absl::StatusOr<int32_t> filename = Str(f.filename());
    for (const auto* s : {&name, &system_name, &filename}) {
      if (!s->ok()) return s->status();
    }
    pb::Function* out = dict_->out()->add_function_table();
    out->set_name_strindex(*name);
    out->set_system_name_strindex(*system_name);
    out->set_filename_strindex(*filename);
    out->set_start_line(f.start_line());
    functions_[f.id()] = dict_->out()->function_table_size() - 1;
    return absl::OkStatus();
  }

  absl::Status ImportLocation(const perftools::profiles::Location& l) {
    pb::Location* out = dict_->out()->add_location_table();
    if (l.mapping_id() != 0) {
      auto it = mappings_.find(l.mapping_id());
      if (it == mappings_.end()) return Undefined("mapping", l.mapping_id());
      out->set_mapping_index(it->second);
    }
    out->set_address(l.address());
    for (const auto& line : l.line()) {
      auto it = functions_.find(line.function_id());
      if (it == functions_.end()) {
        return Undefined("function", line.function_id());
      }
      pb::Line* out_line = out->add_lines();
      out_line->set_function_index(it->second);
      out_line->set_line(line.line());
      out_line->set_column(line.column());
    }
    locations_[l.id()] = dict_->out()->location_table_size() - 1;
    return absl::OkStatus();
  }

  static absl::Status Undefined(const char* what, uint64_t id) {
    return absl::InvalidArgumentError(
        absl::StrCat("pprof references undefined ", what, " id ", id));
  }

  const Profile& pprof_;
  Dictionary* const dict_;
  absl::flat_hash_map<uint64_t, int32_t> mappings_, functions_, locations_;
};

// A pprof sample's identity in OTLP: stack, attributes, link.
struct SampleKey {
  int32_t stack = 0;
  std::vector<int32_t> attributes;
  int32_t link = 0;
};

absl::StatusOr<SampleKey> EncodeSampleKey(
    const perftools::profiles::Sample& sample, const TableImporter& tables,
    Dictionary* dict) {
  SampleKey key;
  std::vector<int32_t> locations;
  locations.reserve(sample.location_id_size());
  for (uint64_t id : sample.location_id()) {
    const int32_t index = tables.Location(id);
    if (index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pprof sample references undefined location id ", id));
    }
    locations.push_back(index);
  }
  key.stack = dict->Stack(locations);
  std::string trace_id, span_id;
  for (const auto& label : sample.label()) {
    absl::StatusOr<std::string> name = tables.PprofString(label.key());
    absl::StatusOr<std::string> str = tables.PprofString(label.str());
    absl::StatusOr<std::string> unit = tables.PprofString(label.num_unit());
    for (const auto* s : {&name, &str, &unit}) {
      if (!s->ok()) return s->status();
    }
    if (*name == kSpanIdLabel && span_id.empty()) {
      span_id = DecodeHexId(*str, 8);
      if (!span_id.empty()) continue;
    }
    if (*name == kTraceIdLabel && trace_id.empty()) {
      trace_id = DecodeHexId(*str, 16);
      if (!trace_id.empty()) continue;
    }
    AnyValue value;
    if (label.str() != 0) {
      value.set_string_value(*str);
    } else {
      value.set_int_value(label.num());
    }
    key.attributes.push_back(dict->Attribute(*name, value, *unit));
  }
  if (!span_id.empty() || !trace_id.empty()) {
    key.link = dict->Link(trace_id, span_id);
  }
  return key;
}

std::string ProfileId(const std::string& base, int index) {
  std::string id = base.substr(0, 16);
  id.resize(16, '\0');
  // Distinct per profile of the request, stable across retries.
  id[15] = static_cast<char>(id[15] ^ static_cast<char>(index));
  return id;
}

// How a pprof's values read in OTLP: its sample types (the pprof's, or
// OpenTelemetry's CPU convention's samples/count), its period type and
// period, and what each value is divided by.
struct OtlpShape {
  std::vector<std::pair<std::string, std::string>> sample_types;
  std::string period_type, period_unit;
  int64_t period = 1;
  int64_t divisor = 1;
};

// The largest period that divides the pprof's period and every value: the
// sampling period when each sample is worth one (timer samples, ticks),
// else a divisor of it (a sample worth more or less: CPU time a dropped
// sample left to the next, a thread that was not sampled, a period that
// changed), down to 1 ns; so that count x period is every value exactly.
int64_t WholePeriod(const Profile& pprof) {
  int64_t period = pprof.period();
  for (const auto& sample : pprof.sample()) {
    for (int64_t value : sample.value()) {
      if (period == 1) return 1;
      if (value != 0) period = std::gcd(period, value < 0 ? -value : value);
    }
  }
  return period;
}

absl::StatusOr<OtlpShape> ShapeOf(const Profile& pprof,
                                  const TableImporter& tables,
                                  ProfileKind kind) {
  const ProfileKindInfo& info = KindInfo(kind);
  OtlpShape shape;
  for (int i = 0; i < pprof.sample_type_size(); ++i) {
    absl::StatusOr<std::string> type =
        tables.PprofString(pprof.sample_type(i).type());
    absl::StatusOr<std::string> unit =
        tables.PprofString(pprof.sample_type(i).unit());
    if (!type.ok()) return type.status();
    if (!unit.ok()) return unit.status();
    shape.sample_types.emplace_back(*std::move(type), *std::move(unit));
  }
  absl::StatusOr<std::string> period_type =
      tables.PprofString(pprof.period_type().type());
  absl::StatusOr<std::string> period_unit =
      tables.PprofString(pprof.period_type().unit());
  if (!period_type.ok()) return period_type.status();
  if (!period_unit.ok()) return period_unit.status();
  shape.period_type = *std::move(period_type);
  shape.period_unit = *std::move(period_unit);
  // A pprof period of 0 says the values are already scaled to every
  // event (the collector's memory profiles: unbiased estimates); OTLP
  // consumers divide by nothing and Pyroscope names a profile by its
  // period type only when the period is set, so say 1 (each unit counts
  // itself).
  shape.period = pprof.period() > 0 ? pprof.period() : 1;
  switch (info.otlp) {
    case OtlpNaming::kCpuSamples:
      if (shape.sample_types.size() == 1 && pprof.period() > 0) {
        shape.sample_types[0] = {"samples", "count"};
        shape.period_type = info.period_type;
        shape.period_unit = info.period_unit;
        shape.period = shape.divisor = WholePeriod(pprof);
      }
      break;
    case OtlpNaming::kNameAsPeriodType:
      shape.period_type = info.name;
      break;
  }
  return shape;
}

// `value` in periods of `divisor`, which divides it (WholePeriod).
int64_t InPeriods(int64_t value, int64_t divisor) { return value / divisor; }

void InitProfiles(const Profile& pprof, const OtlpShape& shape,
                  const std::string& profile_id, Dictionary* dict,
                  pb::ScopeProfiles* scope) {
  for (size_t i = 0; i < shape.sample_types.size(); ++i) {
    pb::Profile* out = scope->add_profiles();
    out->mutable_sample_type()->set_type_strindex(
        dict->Str(shape.sample_types[i].first));
    out->mutable_sample_type()->set_unit_strindex(
        dict->Str(shape.sample_types[i].second));
    out->set_time_unix_nano(static_cast<uint64_t>(pprof.time_nanos()));
    out->set_duration_nano(static_cast<uint64_t>(pprof.duration_nanos()));
    out->mutable_period_type()->set_type_strindex(dict->Str(shape.period_type));
    out->mutable_period_type()->set_unit_strindex(dict->Str(shape.period_unit));
    out->set_period(shape.period);
    out->set_profile_id(ProfileId(profile_id, static_cast<int>(i)));
  }
}

// The resource's service.name as a dictionary attribute; 0 when none.
int32_t ServiceAttribute(
    const ::opentelemetry::proto::resource::v1::Resource& resource,
    Dictionary* dict) {
  for (const auto& kv : resource.attributes()) {
    if (kv.key() == kServiceNameAttribute &&
        kv.value().value_case() == AnyValue::kStringValue) {
      return dict->StringAttribute(kServiceNameAttribute,
                                   kv.value().string_value());
    }
  }
  return 0;
}

}  // namespace

absl::StatusOr<ExportRequest> EncodeProfile(
    const Profile& pprof,
    const ::opentelemetry::proto::resource::v1::Resource& resource,
    const std::string& profile_id, ProfileKind kind) {
  ExportRequest request;
  Dictionary dict(request.mutable_dictionary());
  TableImporter tables(pprof, &dict);
  if (absl::Status s = tables.Import(); !s.ok()) return s;

  pb::ResourceProfiles* rp = request.add_resource_profiles();
  *rp->mutable_resource() = resource;
  pb::ScopeProfiles* scope = rp->add_scope_profiles();
  scope->mutable_scope()->set_name(kScopeName);
  absl::StatusOr<OtlpShape> shape = ShapeOf(pprof, tables, kind);
  if (!shape.ok()) return shape.status();
  InitProfiles(pprof, *shape, profile_id, &dict, scope);
  const int32_t service = ServiceAttribute(resource, &dict);
  for (const auto& sample : pprof.sample()) {
    absl::StatusOr<SampleKey> key = EncodeSampleKey(sample, tables, &dict);
    if (!key.ok()) return key.status();
    if (service != 0) key->attributes.push_back(service);
    const int n = std::min(sample.value_size(), scope->profiles_size());
    for (int i = 0; i < n; ++i) {
      const int64_t value = InPeriods(sample.value(i), shape->divisor);
      if (value == 0) continue;
      pb::Sample* out = scope->mutable_profiles(i)->add_samples();
      out->set_stack_index(key->stack);
      out->mutable_attribute_indices()->Add(key->attributes.begin(),
                                            key->attributes.end());
      out->set_link_index(key->link);
      out->add_values(value);
    }
  }
  return request;
}

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
