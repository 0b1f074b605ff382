#include "collector/shipping/labels.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

bool IsLabelNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    int extra;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated sequence
    for (int k = 1; k <= extra; ++k) {
      const unsigned char cc = s[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[extra] || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

bool IsReserved(absl::string_view name) {
  return name == "__name__" || name == "service_name" || name == "__delta__";
}

}  // namespace

absl::Status ValidateLabelName(absl::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("empty label name");
  if (name.size() > kMaxLabelNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("label name longer than ", kMaxLabelNameBytes, " bytes"));
  }
  if (!std::all_of(name.begin(), name.end(), IsLabelNameChar)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid label name \"", name,
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
  std::set<absl::string_view> seen;
  bool has_name = false;
  for (const auto& [name, value] : labels) {
    if (absl::Status s = ValidateLabelName(name); !s.ok()) return s;
    if (absl::Status s = ValidateLabelValue(name, value); !s.ok()) return s;
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("duplicate label \"", name, "\""));
    }
    has_name |= name == "__name__";
  }
  if (!has_name) return absl::InvalidArgumentError("series without __name__");
  return absl::OkStatus();
}

absl::StatusOr<Labels> ParseTags(absl::string_view text) {
  Labels tags;
  std::set<std::string> seen;
  for (absl::string_view item :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag \"", item, "\" is not of the form name=value"));
    }
    std::string name(absl::StripAsciiWhitespace(item.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(item.substr(eq + 1)));
    if (absl::Status s = ValidateLabelName(name); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag \"", item, "\": ", s.message()));
    }
    if (absl::Status s = ValidateLabelValue(name, value); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag \"", item, "\": ", s.message()));
    }
    if (IsReserved(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tag \"", name,
          "\" is reserved (use the application name option for service_name)"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tag \"", name, "\" is given twice"));
    }
    tags.emplace_back(std::move(name), std::move(value));
  }
  // Leave room for __name__, service_name, __delta__ and process labels.
  if (tags.size() > kMaxLabelsPerSeries - 8) {
    return absl::InvalidArgumentError(
        absl::StrCat(tags.size(), " tags; at most ", kMaxLabelsPerSeries - 8,
                     " fit in a Pyroscope series next to ringprof's labels"));
  }
  return tags;
}

Labels BuildSeriesLabels(const SeriesLabelConfig& config,
                         const std::string& profile_name,
                         const std::string& service_name,
                         const Labels& profile_labels) {
  // Later writes win: process labels < host labels (only when absent) <
  // user tags < the names the sink owns.
  std::map<std::string, std::string> merged;
  for (const auto& [k, v] : profile_labels) merged[k] = v;
  for (const auto& [k, v] : config.host_labels) {
    if (!v.empty()) merged.emplace(k, v);
  }
  for (const auto& [k, v] : config.tags) merged[k] = v;
  std::string service = config.application_name;
  if (service.empty()) service = service_name;
  if (service.empty()) {
    auto it = merged.find("service_name");
    service = it != merged.end() ? it->second : "";
  }
  merged["service_name"] = service.empty() ? "unknown_service" : service;
  merged["__name__"] = profile_name;
  if (profile_name == "memory") {
    merged["__delta__"] = "false";
  } else {
    merged.erase("__delta__");
  }
  // Empty values mean "no label" in Pyroscope's data model.
  Labels out;
  for (auto& [k, v] : merged) {
    if (!v.empty()) out.emplace_back(k, std::move(v));
  }
  return out;
}

Labels HostLabelsFromEnvironment() {
  Labels labels;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') {
    labels.emplace_back("hostname", host);
  }
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod) {
    labels.emplace_back("pod", pod);
  }
  if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns) {
    labels.emplace_back("namespace", ns);
  }
  return labels;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
