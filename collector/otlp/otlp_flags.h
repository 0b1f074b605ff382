// The OTLP sink's flags (defined in otlp_flags.cc) and the OpenTelemetry
// SDKs' environment variables behind them.
//
// Each flag reads its signal-specific variable (OTEL_EXPORTER_OTLP_PROFILES_*)
// when not given; when that is unset too, the generic OTEL_EXPORTER_OTLP_*
// variable applies, as the SDKs read them: the generic endpoint is a base
// URL to which /v1development/profiles is appended, the signal-specific one
// is used as it is. Series labels, tags and the queue's bounds are the
// Pyroscope sink's flags (shipping/pyroscope_flags.h). README.md has the
// table.
#ifndef RINGPROF_COLLECTOR_OTLP_OTLP_FLAGS_H_
#define RINGPROF_COLLECTOR_OTLP_OTLP_FLAGS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "collector/otlp/otlp_sink.h"
#include "collector/sink/sink.h"

ABSL_DECLARE_FLAG(std::string, otlp_endpoint);
ABSL_DECLARE_FLAG(std::string, otlp_headers);
ABSL_DECLARE_FLAG(std::string, otlp_compression);
ABSL_DECLARE_FLAG(std::string, otlp_timeout);
ABSL_DECLARE_FLAG(std::string, otlp_certificate);
ABSL_DECLARE_FLAG(std::string, otlp_client_certificate);
ABSL_DECLARE_FLAG(std::string, otlp_client_key);
ABSL_DECLARE_FLAG(std::string, otlp_spool_dir);
ABSL_DECLARE_FLAG(std::string, otlp_service_name);
ABSL_DECLARE_FLAG(bool, otlp_process_pid);
ABSL_DECLARE_FLAG(std::string, otlp_resource_attributes);

namespace ringprof {
namespace collector {

// Builds the OTLP sink from the flags; nullptr when no endpoint is
// configured. InvalidArgument naming the flag or variable for a bad value
// (never quoting a header value). Starts /metrics when --metrics-port is
// set.
absl::StatusOr<std::unique_ptr<ProfileSink>> MakeOtlpSinkFromFlags();

namespace otlp {

// The endpoint URL by the SDKs' rules: `signal` (--otlp-endpoint /
// OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT) as it is; else `generic`
// (OTEL_EXPORTER_OTLP_ENDPOINT) with "v1development/profiles" appended to
// its path (one '/' between); "" when both are empty.
std::string ResolveEndpoint(const std::string& signal,
                            const std::string& generic);

// std::nullopt when no endpoint is configured.
absl::StatusOr<std::optional<OtlpSinkOptions>> OtlpSinkOptionsFromFlags();

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_OTLP_OTLP_FLAGS_H_
