#include "collector/otlp/otlp_flags.h"

#include <cstdlib>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "collector/base/flag_environment.h"
#include "collector/base/log.h"
#include "collector/shipping/http_uploader.h"
#include "collector/shipping/pyroscope_flags.h"

ABSL_FLAG(std::string, otlp_endpoint, "",
          "OTLP/HTTP profiles endpoint, the full URL, e.g. "
          "http://otel-collector:4318/v1development/profiles; enables the "
          "OTLP sink [OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT; else "
          "OTEL_EXPORTER_OTLP_ENDPOINT + /v1development/profiles]");
ABSL_FLAG(std::string, otlp_headers, "",
          "request headers, key=value,key2=value2, values percent-encoded "
          "(e.g. Authorization=Bearer%20TOKEN) "
          "[OTEL_EXPORTER_OTLP_PROFILES_HEADERS; else "
          "OTEL_EXPORTER_OTLP_HEADERS]");
ABSL_FLAG(std::string, otlp_compression, "",
          "gzip or none; default gzip "
          "[OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION; else "
          "OTEL_EXPORTER_OTLP_COMPRESSION]");
ABSL_FLAG(std::string, otlp_timeout, "",
          "timeout of one export request in milliseconds; default 10000 "
          "[OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT; else "
          "OTEL_EXPORTER_OTLP_TIMEOUT]");
ABSL_FLAG(std::string, otlp_certificate, "",
          "PEM CA bundle to verify an https endpoint; default the system's "
          "[OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE; else "
          "OTEL_EXPORTER_OTLP_CERTIFICATE]");
ABSL_FLAG(std::string, otlp_client_certificate, "",
          "PEM client certificate for mutual TLS "
          "[OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE; else "
          "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE]");
ABSL_FLAG(std::string, otlp_client_key, "",
          "PEM key of --otlp-client-certificate "
          "[OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY; else "
          "OTEL_EXPORTER_OTLP_CLIENT_KEY]");
ABSL_FLAG(std::string, otlp_spool_dir, "",
          "directory for OTLP requests waiting for the endpoint (survives "
          "restarts; not the Pyroscope sink's --spool-dir); empty: keep "
          "them in memory [RINGPROF_OTLP_SPOOL_DIR]");
ABSL_FLAG(std::string, otlp_service_name, "",
          "service.name of the OTLP resource; default --application-name, "
          "else the emitter's service name [OTEL_SERVICE_NAME]");
ABSL_FLAG(bool, otlp_process_pid, false,
          "send process.pid as a resource attribute; Pyroscope v2.2.1 makes "
          "it a series label (one series per process) and refuses it "
          "behind an OpenTelemetry Collector [RINGPROF_OTLP_PROCESS_PID]");
ABSL_FLAG(std::string, otlp_resource_attributes, "",
          "extra resource attributes, key=value,..., percent-encoded values, "
          "e.g. service.version=1.4,deployment.environment.name=prod "
          "[OTEL_RESOURCE_ATTRIBUTES]");

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

const bool kFlagEnvironment = RegisterFlagEnvironment({
    {"otlp_endpoint", "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT"},
    {"otlp_headers", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS"},
    {"otlp_compression", "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION"},
    {"otlp_timeout", "OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT"},
    {"otlp_certificate", "OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE"},
    {"otlp_client_certificate",
     "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE"},
    {"otlp_client_key", "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY"},
    {"otlp_spool_dir", "RINGPROF_OTLP_SPOOL_DIR"},
    {"otlp_service_name", "OTEL_SERVICE_NAME"},
    {"otlp_process_pid", "RINGPROF_OTLP_PROCESS_PID"},
    {"otlp_resource_attributes", "OTEL_RESOURCE_ATTRIBUTES"},
});

// The flag (or its signal-specific variable), else the generic variable.
std::string FlagOrGeneric(const absl::Flag<std::string>& flag,
                          const char* generic) {
  std::string value = absl::GetFlag(flag);
  if (value.empty()) {
    if (const char* env = std::getenv(generic)) value = env;
  }
  return std::string(absl::StripAsciiWhitespace(value));
}

absl::Status Invalid(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
}

absl::Status TransportFromFlags(shipping::UploaderOptions* upload) {
  absl::StatusOr<Attributes> headers = ParseKeyValueList(
      FlagOrGeneric(FLAGS_otlp_headers, "OTEL_EXPORTER_OTLP_HEADERS"),
      "header");
  if (!headers.ok()) {
    return Invalid("--otlp-headers / OTEL_EXPORTER_OTLP_*HEADERS",
                   headers.status().message());
  }
  upload->extra_headers = std::move(*headers);
  const std::string compression = absl::AsciiStrToLower(
      FlagOrGeneric(FLAGS_otlp_compression, "OTEL_EXPORTER_OTLP_COMPRESSION"));
  if (compression != "" && compression != "gzip" && compression != "none") {
    return Invalid("--otlp-compression / OTEL_EXPORTER_OTLP_*COMPRESSION",
                   "gzip or none");
  }
  upload->gzip_body = compression != "none";
  const std::string timeout =
      FlagOrGeneric(FLAGS_otlp_timeout, "OTEL_EXPORTER_OTLP_TIMEOUT");
  int64_t timeout_ms = 10000;
  if (!timeout.empty() &&
      (!absl::SimpleAtoi(timeout, &timeout_ms) || timeout_ms < 100)) {
    return Invalid("--otlp-timeout / OTEL_EXPORTER_OTLP_*TIMEOUT",
                   "milliseconds, at least 100");
  }
  upload->timeout_ms = timeout_ms;
  upload->connect_timeout_ms = std::min<int64_t>(timeout_ms, 3000);
  upload->ca_file =
      FlagOrGeneric(FLAGS_otlp_certificate, "OTEL_EXPORTER_OTLP_CERTIFICATE");
  upload->client_cert_file = FlagOrGeneric(
      FLAGS_otlp_client_certificate, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE");
  upload->client_key_file =
      FlagOrGeneric(FLAGS_otlp_client_key, "OTEL_EXPORTER_OTLP_CLIENT_KEY");
  return absl::OkStatus();
}

}  // namespace

std::string ResolveEndpoint(const std::string& signal,
                            const std::string& generic) {
  if (!signal.empty()) return signal;
  if (generic.empty()) return "";
  return absl::StrCat(generic, absl::EndsWith(generic, "/") ? "" : "/",
                      "v1development/profiles");
}

absl::StatusOr<std::optional<OtlpSinkOptions>> OtlpSinkOptionsFromFlags() {
  const char* generic = std::getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  OtlpSinkOptions o;
  shipping::UploaderOptions& upload = o.queue.upload;
  upload.server_url = ResolveEndpoint(
      std::string(
          absl::StripAsciiWhitespace(absl::GetFlag(FLAGS_otlp_endpoint))),
      generic != nullptr ? std::string(absl::StripAsciiWhitespace(generic))
                         : "");
  if (upload.server_url.empty()) return std::nullopt;
  if (absl::Status s = shipping::ValidateServerUrl(upload.server_url);
      !s.ok()) {
    return Invalid("--otlp-endpoint / OTEL_EXPORTER_OTLP_*ENDPOINT",
                   s.message());
  }
  if (absl::Status s = TransportFromFlags(&upload); !s.ok()) return s;
  absl::StatusOr<shipping::SeriesLabelConfig> labels =
      shipping::SeriesLabelConfigFromFlags();
  if (!labels.ok()) return labels.status();
  o.queue.labels = std::move(*labels);
  const std::string service = absl::GetFlag(FLAGS_otlp_service_name);
  if (!service.empty()) o.queue.labels.application_name = service;
  if (absl::Status s = shipping::QueueOptionsFromFlags(&o.queue); !s.ok()) {
    return s;
  }
  o.queue.spool_dir = absl::GetFlag(FLAGS_otlp_spool_dir);
  absl::StatusOr<Attributes> attributes = ParseKeyValueList(
      absl::GetFlag(FLAGS_otlp_resource_attributes), "resource attribute");
  if (!attributes.ok()) {
    return Invalid("--otlp-resource-attributes / OTEL_RESOURCE_ATTRIBUTES",
                   attributes.status().message());
  }
  o.resource_attributes = std::move(*attributes);
  o.process_pid = absl::GetFlag(FLAGS_otlp_process_pid);
  return o;
}

}  // namespace otlp

absl::StatusOr<std::unique_ptr<ProfileSink>> MakeOtlpSinkFromFlags() {
  absl::StatusOr<std::optional<otlp::OtlpSinkOptions>> options =
      otlp::OtlpSinkOptionsFromFlags();
  if (!options.ok()) return options.status();
  if (!options->has_value()) return nullptr;
  if (absl::Status s = shipping::StartMetricsServerFromFlags(); !s.ok()) {
    return s;
  }
  const std::string url =
      shipping::RedactUrl((*options)->queue.upload.server_url);
  if (!absl::StrContains(url.substr(url.find("://") + 3), "/")) {
    Log(LogLevel::kWarning,
        absl::StrCat("the OTLP endpoint ", url,
                     " has no path; OTLP/HTTP receivers take profiles at "
                     "/v1development/profiles (the path is used as given)"));
  }
  absl::StatusOr<std::unique_ptr<shipping::PyroscopeSink>> sink =
      otlp::MakeOtlpSink(std::move(**options));
  if (!sink.ok()) return sink.status();
  LogInfo(absl::StrCat("shipping profiles to ", url, " (OTLP/HTTP protobuf)"));
  return std::unique_ptr<ProfileSink>(std::move(*sink));
}

}  // namespace collector
}  // namespace ringprof
