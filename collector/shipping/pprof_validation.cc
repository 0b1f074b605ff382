#include "collector/shipping/pprof_validation.h"

#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "collector/profile/utf8.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using perftools::profiles::Profile;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid pprof: ", what));
}

}  // namespace

absl::StatusOr<ProfileFacts> ValidateProfile(const std::string& pprof,
                                             int64_t now_unix_ns,
                                             const ProfileLimits& limits) {
  if (pprof.size() > limits.max_uncompressed_bytes) {
    return Invalid(absl::StrCat(pprof.size(), " bytes uncompressed; limit ",
                                limits.max_uncompressed_bytes));
  }
  Profile p;
  if (!p.ParseFromString(pprof)) return Invalid("cannot parse");
  const int64_t strings = p.string_table_size();
  if (strings == 0 || !p.string_table(0).empty()) {
    return Invalid("string_table[0] must be \"\"");
  }
  // validate.go: "invalid utf8 string hex: ..." (libprotobuf refuses to
  // parse such a string already; this names the rule when it is lenient).
  for (const std::string& s : p.string_table()) {
    if (!IsValidUtf8(s)) return Invalid("a string is not valid UTF-8");
  }
  auto in_range = [strings](int64_t index) {
    return index >= 0 && index < strings;
  };
  if (static_cast<size_t>(p.sample_size()) > limits.max_samples) {
    return Invalid(
        absl::StrCat(p.sample_size(), " samples; limit ", limits.max_samples));
  }
  if (p.sample_type_size() == 0) return Invalid("no sample types");
  for (const auto& vt : p.sample_type()) {
    if (!in_range(vt.type()) || !in_range(vt.unit())) {
      return Invalid("sample type string index out of range");
    }
    const std::string& name = p.string_table(vt.type());
    if (name.empty() || name.find('-') != std::string::npos) {
      return Invalid(absl::StrCat("sample type name \"", name, "\""));
    }
  }
  if (p.period_type().type() == 0 || !in_range(p.period_type().type()) ||
      !in_range(p.period_type().unit())) {
    return Invalid("period_type is not set");
  }
  if (p.time_nanos() != 0) {
    if (p.time_nanos() < now_unix_ns - limits.max_age_ns) {
      return absl::OutOfRangeError(
          absl::StrCat("profile time ", p.time_nanos(),
                       " is older than Pyroscope's ingestion window"));
    }
    if (p.time_nanos() > now_unix_ns + limits.max_future_ns) {
      return Invalid(absl::StrCat("time_nanos ", p.time_nanos(),
                                  " is too far in the future"));
    }
  }
  std::unordered_set<uint64_t> mapping_ids, function_ids, location_ids;
  for (const auto& m : p.mapping()) {
    if (m.id() == 0) return Invalid("mapping id 0");
    if (!in_range(m.filename()) || !in_range(m.build_id())) {
      return Invalid("mapping string index out of range");
    }
    mapping_ids.insert(m.id());
  }
  for (const auto& f : p.function()) {
    if (f.id() == 0) return Invalid("function id 0");
    if (!in_range(f.name()) || !in_range(f.system_name()) ||
        !in_range(f.filename())) {
      return Invalid("function string index out of range");
    }
    function_ids.insert(f.id());
  }
  for (const auto& loc : p.location()) {
    if (loc.id() == 0) return Invalid("location id 0");
    if (loc.mapping_id() != 0 && mapping_ids.count(loc.mapping_id()) == 0) {
      return Invalid(
          absl::StrCat("location ", loc.id(), " has unknown mapping"));
    }
    for (const auto& line : loc.line()) {
      if (function_ids.count(line.function_id()) == 0) {
        return Invalid(
            absl::StrCat("location ", loc.id(), " has unknown function"));
      }
    }
    location_ids.insert(loc.id());
  }
  for (const auto& s : p.sample()) {
    if (s.value_size() != p.sample_type_size()) {
      return Invalid(absl::StrCat("a sample has ", s.value_size(),
                                  " values for ", p.sample_type_size(),
                                  " sample types"));
    }
    for (uint64_t id : s.location_id()) {
      if (location_ids.count(id) == 0) {
        return Invalid(absl::StrCat("a sample has unknown location ", id));
      }
    }
    if (static_cast<size_t>(s.label_size()) > limits.max_sample_labels) {
      return Invalid(absl::StrCat("a sample has ", s.label_size(),
                                  " labels; limit ", limits.max_sample_labels));
    }
    for (const auto& label : s.label()) {
      if (!in_range(label.key()) || !in_range(label.str()) ||
          !in_range(label.num_unit())) {
        return Invalid("sample label string index out of range");
      }
    }
  }
  ProfileFacts facts;
  facts.time_nanos = p.time_nanos();
  facts.num_samples = static_cast<size_t>(p.sample_size());
  return facts;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
