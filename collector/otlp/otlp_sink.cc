#include "collector/otlp/otlp_sink.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "collector/otlp/encoder.h"

namespace ringprof {
namespace collector {
namespace otlp {

std::string UuidBytes(const std::string& uuid) {
  const std::string hex = absl::StrReplaceAll(uuid, {{"-", ""}});
  if (hex.size() != 32) return "";
  for (char c : hex) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return "";
  }
  return absl::HexStringToBytes(hex);
}

std::string PartialRejection(const std::string& response_body) {
  ::opentelemetry::proto::collector::profiles::v1development::
      ExportProfilesServiceResponse response;
  if (response_body.empty() || !response.ParseFromString(response_body) ||
      response.partial_success().rejected_profiles() <= 0) {
    return "";
  }
  std::string message =
      response.partial_success().error_message().substr(0, 512);
  for (char& c : message) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = ' ';
  }
  return absl::StrCat(response.partial_success().rejected_profiles(),
                      " of its OTLP profiles rejected (", message, ")");
}

absl::StatusOr<std::unique_ptr<shipping::PyroscopeSink>> MakeOtlpSink(
    OtlpSinkOptions options) {
  shipping::PyroscopeSinkOptions& queue = options.queue;
  queue.metric_prefix = "ringprof_otlp_";
  queue.server_name = "OTLP endpoint";
  // process.pid is the resource's (OtlpSinkOptions::process_pid); a pid
  // label would add a string copy.
  queue.labels.pid_label = false;
  queue.encode_body =
      [extra = std::move(options.resource_attributes),
       process_pid = options.process_pid](
          const WindowProfile& profile, const Labels& labels,
          const perftools::profiles::Profile& pprof,
          const std::string& id) -> absl::StatusOr<std::string> {
    ResourceFacts facts;
    facts.series_labels = labels;
    facts.pid = process_pid ? profile.pid : 0;
    facts.executable_name = ExecutableName(pprof);
    facts.extra = extra;
    absl::StatusOr<ExportRequest> request =
        EncodeProfile(pprof, BuildResource(facts), UuidBytes(id), profile.kind);
    if (!request.ok()) return request.status();
    return request->SerializeAsString();
  };
  queue.check_response = PartialRejection;
  return shipping::PyroscopeSink::Create(std::move(queue));
}

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
