#include "collector/otlp/resource.h"

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

using ::opentelemetry::proto::resource::v1::Resource;

// Pyroscope label → semantic-convention attribute; "" leaves it out.
std::string AttributeName(const std::string& label) {
  if (label == "service_name") return "service.name";
  if (label == "hostname") return "host.name";
  if (label == "pod") return "k8s.pod.name";
  if (label == "namespace") return "k8s.namespace.name";
  if (label == "pid" || absl::StartsWith(label, "__")) return "";
  return label;
}

class ResourceWriter {
 public:
  explicit ResourceWriter(Resource* out) : out_(out) {}
  void String(const std::string& key, const std::string& value) {
    if (key.empty() || value.empty() || !seen_.insert(key).second) return;
    auto* kv = out_->add_attributes();
    kv->set_key(key);
    kv->mutable_value()->set_string_value(value);
  }
  void Int(const std::string& key, int64_t value) {
    if (!seen_.insert(key).second) return;
    auto* kv = out_->add_attributes();
    kv->set_key(key);
    kv->mutable_value()->set_int_value(value);
  }

 private:
  Resource* const out_;
  absl::flat_hash_set<std::string> seen_;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(static_cast<unsigned char>(c));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

absl::StatusOr<std::string> PercentDecode(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 1 < s.size() ? HexDigit(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? HexDigit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError("a '%' not followed by two hex digits");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

Resource BuildResource(const ResourceFacts& facts) {
  Resource resource;
  ResourceWriter w(&resource);
  for (const auto& [name, value] : facts.series_labels) {
    if (name == "service_name") w.String("service.name", value);
  }
  if (facts.pid != 0) w.Int("process.pid", facts.pid);
  w.String("process.executable.name", facts.executable_name);
  for (const auto& [name, value] : facts.series_labels) {
    w.String(AttributeName(name), value);
  }
  for (const auto& [key, value] : facts.extra) w.String(key, value);
  return resource;
}

std::string ExecutableName(const perftools::profiles::Profile& pprof) {
  if (pprof.mapping_size() == 0) return "";
  const int64_t index = pprof.mapping(0).filename();
  if (index <= 0 || index >= pprof.string_table_size()) return "";
  const std::string& path = pprof.string_table(static_cast<int>(index));
  if (absl::StartsWith(path, "[")) return "";  // [vdso], [anon]...
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::StatusOr<Attributes> ParseKeyValueList(absl::string_view text,
                                             absl::string_view what) {
  Attributes out;
  int n = 0;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    ++n;
    item = absl::StripAsciiWhitespace(item);
    const size_t eq = item.find('=');
    const absl::string_view key =
        absl::StripAsciiWhitespace(item.substr(0, eq));
    if (eq == absl::string_view::npos || key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " #", n, " is not key=value"));
    }
    absl::StatusOr<std::string> value =
        PercentDecode(absl::StripAsciiWhitespace(item.substr(eq + 1)));
    if (!value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "resource attribute \"", key, "\": ", value.status().message()));
    }
    out.emplace_back(std::string(key), std::move(*value));
  }
  return out;
}

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
