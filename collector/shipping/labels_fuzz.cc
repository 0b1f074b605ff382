// Fuzz target: workload labels (arbitrary bytes) through BuildSeriesLabels
// always give a series Pyroscope accepts (ValidateSeriesLabels) in which
// the collector's labels keep their values; ParseTags on arbitrary text
// returns only tags that pass the same rules; SanitizeUtf8 returns UTF-8.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "collector/pprof/utf8.h"
#include "collector/shipping/labels.h"

namespace {

using ringprof::collector::WindowProfile;
namespace shipping = ringprof::collector::shipping;

std::string Get(const ringprof::collector::Labels& labels,
                const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "<unset>";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (!ringprof::collector::IsValidUtf8(
          ringprof::collector::SanitizeUtf8(input, size % 300))) {
    abort();
  }
  // "name\x01value\x00name\x01value..." as workload labels.
  WindowProfile profile;
  const auto kinds = ringprof::collector::ProfileKinds();
  profile.kind = kinds[size % kinds.size()].kind;
  profile.service_name = input.substr(0, 40);
  profile.session_id = "0011223344556677";
  profile.pid = 7;
  for (absl::string_view item : absl::StrSplit(input, '\0')) {
    const size_t sep = item.find('\x01');
    profile.workload_labels.emplace_back(
        std::string(item.substr(0, sep)),
        sep == absl::string_view::npos ? ""
                                       : std::string(item.substr(sep + 1)));
  }
  shipping::SeriesLabelConfig config;
  config.host_labels = {{"hostname", "host"}, {"pod", "pod-1"}};
  config.tags = {{"env", "prod"}};
  const shipping::SeriesLabels series =
      shipping::BuildSeriesLabels(config, profile);
  if (!ringprof::collector::ValidateSeriesLabels(series.labels).ok() ||
      Get(series.labels, "hostname") != "host" ||
      Get(series.labels, "pod") != "pod-1" ||
      Get(series.labels, "env") != "prod" ||
      Get(series.labels, "__session_id__") != "0011223344556677" ||
      Get(series.labels, "pid") != "<unset>") {
    abort();
  }
  absl::StatusOr<ringprof::collector::Labels> tags =
      ringprof::collector::ParseTags(input);
  if (tags.ok()) {
    ringprof::collector::Labels labels = {{"__name__", "x"},
                                          {"service_name", "s"}};
    labels.insert(labels.end(), tags->begin(), tags->end());
    if (!ringprof::collector::ValidateSeriesLabels(labels).ok()) abort();
  }
  return 0;
}
