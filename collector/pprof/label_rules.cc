#include "collector/pprof/label_rules.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collector/pprof/utf8.h"

namespace ringprof {
namespace collector {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '.';
}

}  // namespace

bool SameLabelName(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '.' ? '_' : a[i];
    const char y = b[i] == '.' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

bool HasLabel(const Labels& labels, absl::string_view name) {
  return std::any_of(labels.begin(), labels.end(), [&](const auto& kv) {
    return SameLabelName(kv.first, name);
  });
}

absl::StatusOr<std::string> SanitizeLabelName(absl::string_view name) {
  if (absl::Status s = ValidateLabelName(name); !s.ok()) return s;
  return std::string(name);
}

std::string SanitizeLabelValue(absl::string_view value) {
  if (value.size() <= kMaxLabelValueBytes && IsValidUtf8(value)) {
    return std::string(value);
  }
  return SanitizeUtf8(value, kMaxLabelValueBytes);
}

bool IsCollectorOwnedLabel(absl::string_view name) {
  return absl::StartsWith(name, "__") || name == "service_name" ||
         name == "pid" || name == "hostname" || name == "pod" ||
         name == "namespace";
}

AdmittedLabel AdmitUntrustedLabel(absl::string_view raw_name,
                                  absl::string_view raw_value,
                                  const Labels& present,
                                  const Labels& reserved) {
  AdmittedLabel out;
  absl::StatusOr<std::string> name = SanitizeLabelName(raw_name);
  if (!name.ok()) {
    out.name = SanitizeUtf8(raw_name, 64);
    out.refused = std::string(name.status().message());
    return out;
  }
  out.name = *std::move(name);
  out.value = SanitizeLabelValue(raw_value);
  if (IsCollectorOwnedLabel(out.name) || HasLabel(reserved, out.name)) {
    out.refused = "the name is the collector's";
  } else if (HasLabel(present, out.name)) {
    out.refused = "a label of that name is already set";
  } else if (out.value.empty()) {
    out.refused = "empty value";
  }
  return out;
}

std::vector<DroppedLabel> MergeUntrustedLabels(const Labels& untrusted,
                                               size_t max_labels,
                                               Labels* labels) {
  std::vector<DroppedLabel> dropped;
  for (const auto& [raw_name, raw_value] : untrusted) {
    AdmittedLabel label = AdmitUntrustedLabel(raw_name, raw_value, *labels);
    if (label.refused.empty() && labels->size() >= max_labels) {
      label.refused =
          "the series has no room left (Pyroscope allows 30 labels)";
    }
    if (!label.refused.empty()) {
      dropped.push_back({std::move(label.name), std::move(label.refused)});
      continue;
    }
    labels->emplace_back(std::move(label.name), std::move(label.value));
  }
  return dropped;
}

absl::Status ValidateLabelName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("empty label name");
  if (name.size() > kMaxLabelNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("label name longer than ", kMaxLabelNameBytes, " bytes"));
  }
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid label name \"", SanitizeUtf8(name),
                     "\": must not start with a digit"));
  }
  if (!std::all_of(name.begin(), name.end(), IsNameChar)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid label name \"", SanitizeUtf8(name),
                     "\": only letters, digits, '_' and '.' are allowed"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabelValue(absl::string_view name,
                                absl::string_view value) {
  if (value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty value for label \"", name, "\""));
  }
  if (value.size() > kMaxLabelValueBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("value of label \"", name, "\" is longer than ",
                     kMaxLabelValueBytes, " bytes"));
  }
  if (!IsValidUtf8(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("value of label \"", name, "\" is not valid UTF-8"));
  }
  return absl::OkStatus();
}

absl::Status ValidateSeriesLabels(const Labels& labels) {
  if (labels.size() > kMaxLabelsPerSeries) {
    return absl::InvalidArgumentError(absl::StrCat("series has ", labels.size(),
                                                   " labels; Pyroscope allows ",
                                                   kMaxLabelsPerSeries));
  }
  std::set<std::string> seen;  // as a v1 server would store the names
  for (const auto& [name, value] : labels) {
    if (absl::Status s = ValidateLabelName(name); !s.ok()) return s;
    if (absl::Status s = ValidateLabelValue(name, value); !s.ok()) return s;
    std::string legacy = name;
    std::replace(legacy.begin(), legacy.end(), '.', '_');
    if (!seen.insert(std::move(legacy)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("duplicate label \"", name, "\""));
    }
  }
  if (seen.count("__name__") == 0) {
    return absl::InvalidArgumentError("series without __name__");
  }
  if (seen.count("service_name") == 0) {
    return absl::InvalidArgumentError("series without service_name");
  }
  return absl::OkStatus();
}

absl::StatusOr<Labels> ParseTags(absl::string_view text) {
  Labels tags;
  for (absl::string_view item :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tag \"", SanitizeUtf8(item), "\" is not of the form name=value"));
    }
    const absl::string_view raw_name =
        absl::StripAsciiWhitespace(item.substr(0, eq));
    std::string value(absl::StripAsciiWhitespace(item.substr(eq + 1)));
    absl::StatusOr<std::string> name = SanitizeLabelName(raw_name);
    if (!name.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tag \"", SanitizeUtf8(item), "\": ", name.status().message()));
    }
    if (absl::Status s = ValidateLabelValue(*name, value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag \"", SanitizeUtf8(item), "\": ", s.message()));
    }
    if (absl::StartsWith(*name, "__") || *name == "service_name" ||
        *name == "pid") {
      return absl::InvalidArgumentError(absl::StrCat(
          "tag \"", *name,
          "\" is reserved (names starting with \"__\" are Pyroscope's; use "
          "the application name option for service_name and the pid label "
          "option for pid)"));
    }
    if (HasLabel(tags, *name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag \"", *name,
                       "\" is given twice (names equal once '.' is "
                       "'_' are one name: Pyroscope v1 stores them so)"));
    }
    tags.emplace_back(std::move(*name), std::move(value));
  }
  // Leave room for __name__, service_name, __delta__, __session_id__, pid,
  // hostname, pod, namespace, ringprof_cpu_source and three source labels.
  constexpr size_t kMaxTags = kMaxLabelsPerSeries - 12;
  if (tags.size() > kMaxTags) {
    return absl::InvalidArgumentError(
        absl::StrCat(tags.size(), " tags; at most ", kMaxTags,
                     " fit in a Pyroscope series next to ringprof's labels"));
  }
  return tags;
}

}  // namespace collector
}  // namespace ringprof
