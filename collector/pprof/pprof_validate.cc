#include "collector/pprof/pprof_validate.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/pprof/utf8.h"

namespace ringprof {
namespace collector {
namespace {

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("invalid pprof: ", what));
}

}  // namespace

absl::Status CheckPprofIds(const perftools::profiles::Profile& p) {
  absl::flat_hash_set<uint64_t> mappings, functions, locations;
  for (const auto& m : p.mapping()) {
    if (m.id() == 0 || !mappings.insert(m.id()).second) {
      return absl::InvalidArgumentError("mapping id zero or duplicate");
    }
  }
  for (const auto& f : p.function()) {
    if (f.id() == 0 || !functions.insert(f.id()).second) {
      return absl::InvalidArgumentError("function id zero or duplicate");
    }
  }
  for (const auto& l : p.location()) {
    if (l.id() == 0 || !locations.insert(l.id()).second) {
      return absl::InvalidArgumentError("location id zero or duplicate");
    }
    if (l.mapping_id() != 0 && !mappings.contains(l.mapping_id())) {
      return absl::InvalidArgumentError(
          absl::StrCat("location ", l.id(), " has unknown mapping"));
    }
    for (const auto& line : l.line()) {
      if (!functions.contains(line.function_id())) {
        return absl::InvalidArgumentError(
            absl::StrCat("location ", l.id(), " has unknown function"));
      }
    }
  }
  for (const auto& s : p.sample()) {
    for (uint64_t id : s.location_id()) {
      if (!locations.contains(id)) {
        return absl::InvalidArgumentError("sample has unknown location");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePprof(const perftools::profiles::Profile& p,
                           const PyroscopeLimits& limits, int64_t now_unix_ns) {
  const int64_t strings = p.string_table_size();
  if (strings == 0 || !p.string_table(0).empty()) {
    return Invalid("string_table[0] must be the empty string");
  }
  for (const std::string& s : p.string_table()) {
    if (!IsValidUtf8(s)) return Invalid("a string is not valid UTF-8");
    if (s.size() > limits.max_string_bytes) {
      return Invalid(absl::StrCat("a string of ", s.size(), " bytes > ",
                                  limits.max_string_bytes));
    }
  }
  auto string_ok = [&](int64_t i) { return i >= 0 && i < strings; };
  if (p.sample_type_size() == 0) return Invalid("no sample_type");
  for (const auto& vt : p.sample_type()) {
    if (!string_ok(vt.type()) || !string_ok(vt.unit())) {
      return Invalid("sample_type string index out of range");
    }
    if (p.string_table(vt.type()).empty() ||
        absl::StrContains(p.string_table(vt.type()), "-")) {
      return Invalid(absl::StrCat("bad sample type name '",
                                  p.string_table(vt.type()), "'"));
    }
  }
  if (!p.has_period_type() || !string_ok(p.period_type().type()) ||
      !string_ok(p.period_type().unit()) || p.period_type().type() == 0) {
    return Invalid("period_type not set");
  }
  if (static_cast<size_t>(p.sample_size()) > limits.max_samples) {
    return Invalid(
        absl::StrCat(p.sample_size(), " samples > ", limits.max_samples));
  }
  if (p.ByteSizeLong() > limits.max_bytes) {
    return Invalid(
        absl::StrCat(p.ByteSizeLong(), " bytes > ", limits.max_bytes));
  }
  absl::Status ids = CheckPprofIds(p);
  if (!ids.ok()) return Invalid(ids.message());
  for (const auto& m : p.mapping()) {
    if (!string_ok(m.filename()) || !string_ok(m.build_id())) {
      return Invalid("mapping string index out of range");
    }
  }
  for (const auto& f : p.function()) {
    if (!string_ok(f.name()) || !string_ok(f.system_name()) ||
        !string_ok(f.filename())) {
      return Invalid("function string index out of range");
    }
  }
  for (const auto& s : p.sample()) {
    if (s.value_size() != p.sample_type_size()) {
      return Invalid("sample value count differs from sample_type count");
    }
    if (static_cast<size_t>(s.location_id_size()) > limits.max_frames) {
      return Invalid(absl::StrCat("stack of ", s.location_id_size(),
                                  " frames > ", limits.max_frames));
    }
    if (static_cast<size_t>(s.label_size()) > limits.max_sample_labels) {
      return Invalid(absl::StrCat("a sample has ", s.label_size(),
                                  " labels; limit ", limits.max_sample_labels));
    }
    for (const auto& label : s.label()) {
      if (!string_ok(label.key()) || !string_ok(label.str()) ||
          !string_ok(label.num_unit())) {
        return Invalid("sample label string index out of range");
      }
    }
  }
  if (now_unix_ns != 0 && p.time_nanos() != 0) {
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
  return absl::OkStatus();
}

}  // namespace collector
}  // namespace ringprof
