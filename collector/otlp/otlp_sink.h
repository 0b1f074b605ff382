// The OTLP sink: ships every window profile as an OTLP/HTTP protobuf
// ExportProfilesServiceRequest (encoder.h, resource.h) to an OpenTelemetry
// Collector, Grafana Pyroscope's /v1development/profiles, or any OTLP
// profiles receiver.
//
// It is a shipping::PyroscopeSink whose records carry the encoded request
// (PyroscopeSinkOptions::encode_body): the same inbox, validation against
// Pyroscope's rules, trimming to the request budget, backlog (disk spool or
// memory), retry with backoff, Retry-After, attempt bound, expiry and
// window summaries, with metrics named ringprof_otlp_* instead of
// ringprof_*. The request is built once, when the profile is queued, so a
// retry or a replay from the spool sends the same bytes (and the same
// profile ids). Statuses are classified as for Pyroscope
// (http_uploader.h): 429, 502, 503, 504 and transport failures are retried,
// as OTLP/HTTP asks; 400 and the like drop the profile, counted and logged;
// a partial success (rejected_profiles > 0) counts the profile as sent and
// as failed and logs the server's message.
//
// Thread-safety: as PyroscopeSink (Submit/Flush from one thread).
#ifndef RINGPROF_COLLECTOR_OTLP_OTLP_SINK_H_
#define RINGPROF_COLLECTOR_OTLP_OTLP_SINK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "collector/otlp/resource.h"
#include "collector/shipping/pyroscope_sink.h"
#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {
namespace otlp {

struct OtlpSinkOptions {
  // queue.upload.server_url is the full endpoint URL (e.g.
  // http://collector:4318/v1development/profiles); encode_body,
  // metric_prefix and server_name are set by MakeOtlpSink.
  shipping::PyroscopeSinkOptions queue;
  // Added to every resource (OTEL_RESOURCE_ATTRIBUTES) where the collector
  // has not set the key itself.
  Attributes resource_attributes;
  // process.pid in the resource. Off by default, as the Pyroscope sink's
  // pid label: Pyroscope v2.2.1 makes every string or int resource
  // attribute a series label (one series per process), and behind an
  // OpenTelemetry Collector, which re-encodes attribute keys as dictionary
  // references, it reads the key as empty and refuses the request.
  bool process_pid = false;
};

absl::StatusOr<std::unique_ptr<shipping::PyroscopeSink>> MakeOtlpSink(
    OtlpSinkOptions options);

// What an ExportProfilesServiceResponse says was refused for good
// (partial_success with rejected_profiles > 0), for one log line; "" when
// nothing was (or the body is empty or not such a response).
std::string PartialRejection(const std::string& response_body);

// The 16 bytes of a UUID's text form ("" when it is not one).
std::string UuidBytes(const std::string& uuid);

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_OTLP_OTLP_SINK_H_
