// The shipping flags (defined in pyroscope_flags.cc) turned into options.
// Each flag falls back to an environment variable when not given on the
// command line: the Pyroscope SDKs' PYROSCOPE_* names where one exists,
// else RINGPROF_<FLAG NAME> (README.md has the table). Secrets may come
// from files (--basic-auth-password-file, --auth-token-file: read once,
// regular files of at most 64 KiB); no secret is ever a flag default, so
// --help never shows one, and no error message quotes one. The secret
// environment variables are removed once read, so a program `ringprof run`
// starts does not inherit them.
#ifndef RINGPROF_COLLECTOR_SHIPPING_PYROSCOPE_FLAGS_H_
#define RINGPROF_COLLECTOR_SHIPPING_PYROSCOPE_FLAGS_H_

#include <optional>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/shipping/pyroscope_sink.h"

ABSL_DECLARE_FLAG(std::string, server_address);
ABSL_DECLARE_FLAG(std::string, application_name);
ABSL_DECLARE_FLAG(std::string, tags);
ABSL_DECLARE_FLAG(std::string, basic_auth_user);
ABSL_DECLARE_FLAG(std::string, basic_auth_password);
ABSL_DECLARE_FLAG(std::string, basic_auth_password_file);
ABSL_DECLARE_FLAG(std::string, auth_token);
ABSL_DECLARE_FLAG(std::string, auth_token_file);
ABSL_DECLARE_FLAG(std::string, tenant_id);
ABSL_DECLARE_FLAG(std::string, http_headers);
ABSL_DECLARE_FLAG(std::string, ca_file);
ABSL_DECLARE_FLAG(std::string, spool_dir);
ABSL_DECLARE_FLAG(std::string, spool_max_bytes);
ABSL_DECLARE_FLAG(bool, legacy_ingest);
ABSL_DECLARE_FLAG(absl::Duration, upload_timeout);
ABSL_DECLARE_FLAG(std::string, max_request_bytes);
ABSL_DECLARE_FLAG(int, upload_attempts);
ABSL_DECLARE_FLAG(bool, pid_label);
ABSL_DECLARE_FLAG(std::string, service_repository);
ABSL_DECLARE_FLAG(std::string, service_git_ref);
ABSL_DECLARE_FLAG(std::string, service_root_path);
ABSL_DECLARE_FLAG(int, metrics_port);
ABSL_DECLARE_FLAG(std::string, metrics_address);

namespace ringprof {
namespace collector {

// Builds the sink from --server-address and the other shipping flags (each
// falls back to its PYROSCOPE_* environment variable; see
// collector/shipping/README.md). Returns nullptr when no server is
// configured; InvalidArgument for bad tags, headers, URLs or unreadable
// secret files (messages never contain secrets). Also starts the /metrics
// endpoint when --metrics-port is set (see metrics_server.h).
absl::StatusOr<std::unique_ptr<ProfileSink>> MakePyroscopeSinkFromFlags();

namespace shipping {

// std::nullopt when no server address is configured; InvalidArgument for
// bad tags, headers, sizes, URLs or unreadable secret files.
absl::StatusOr<std::optional<PyroscopeSinkOptions>>
PyroscopeSinkOptionsFromFlags();

// What every sink that ships through PyroscopeSink shares (the OTLP sink
// too): the series labels from --application-name, --tags, the source-code
// flags, --pid-label and the host's environment; and the queue's bounds
// from --spool-max-bytes, --max-request-bytes and --upload-attempts.
// InvalidArgument naming the flag.
absl::StatusOr<SeriesLabelConfig> SeriesLabelConfigFromFlags();
absl::Status QueueOptionsFromFlags(PyroscopeSinkOptions* options);

// Starts the process-wide /metrics server (metrics_server.h) from
// --metrics-port / --metrics-address once; later calls are no-ops. OK and
// no server when the port is 0 (the default).
absl::Status StartMetricsServerFromFlags();

// "1048576", "512K", "64M", "1G" (binary multiples).
absl::StatusOr<uint64_t> ParseByteSize(const std::string& text);

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_PYROSCOPE_FLAGS_H_
