#include "collector/shipping/pyroscope_flags.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collector/base/file.h"
#include "collector/base/flag_environment.h"
#include "collector/shipping/http_uploader.h"
#include "collector/shipping/metrics_server.h"

ABSL_FLAG(std::string, server_address, "",
          "Pyroscope URL, e.g. http://pyroscope:4040; enables shipping "
          "[PYROSCOPE_SERVER_ADDRESS]");
ABSL_FLAG(std::string, application_name, "",
          "service_name label; default: the emitter's service name "
          "[PYROSCOPE_APPLICATION_NAME]");
ABSL_FLAG(std::string, tags, "",
          "extra series labels, k=v,k2=v2 [PYROSCOPE_TAGS]");
ABSL_FLAG(std::string, basic_auth_user, "",
          "HTTP basic auth user [PYROSCOPE_BASIC_AUTH_USER]");
ABSL_FLAG(std::string, basic_auth_password, "",
          "HTTP basic auth password; prefer the _file form, command lines "
          "are visible in ps [PYROSCOPE_BASIC_AUTH_PASSWORD]");
ABSL_FLAG(std::string, basic_auth_password_file, "",
          "file holding the basic auth password "
          "[PYROSCOPE_BASIC_AUTH_PASSWORD_FILE]");
ABSL_FLAG(std::string, auth_token, "",
          "bearer token; prefer the _file form [PYROSCOPE_AUTH_TOKEN]");
ABSL_FLAG(std::string, auth_token_file, "",
          "file holding the bearer token [PYROSCOPE_AUTH_TOKEN_FILE]");
ABSL_FLAG(std::string, tenant_id, "",
          "X-Scope-OrgID for multi-tenant Pyroscope [PYROSCOPE_TENANT_ID]");
ABSL_FLAG(std::string, http_headers, "",
          "extra request headers, Name=value,Name2=value2 "
          "[PYROSCOPE_HTTP_HEADERS]");
ABSL_FLAG(std::string, ca_file, "",
          "PEM CA bundle to verify an https server [PYROSCOPE_CA_FILE]");
ABSL_FLAG(std::string, spool_dir, "",
          "directory for profiles waiting for the server (survives "
          "restarts); empty: keep them in memory [RINGPROF_SPOOL_DIR]");
ABSL_FLAG(std::string, spool_max_bytes, "256M",
          "bound on the spool (or memory backlog); oldest dropped first "
          "[RINGPROF_SPOOL_MAX_BYTES]");
ABSL_FLAG(bool, legacy_ingest, false,
          "use the legacy /ingest API instead of the Push API "
          "[RINGPROF_LEGACY_INGEST]");
ABSL_FLAG(absl::Duration, upload_timeout, absl::Seconds(10),
          "timeout of one upload request [RINGPROF_UPLOAD_TIMEOUT]");
ABSL_FLAG(std::string, max_request_bytes, "2M",
          "bound on one upload as Pyroscope's rate limiter counts it (labels "
          "+ uncompressed pprof); keep it at or below the server's "
          "ingestion_burst_size_mb [RINGPROF_MAX_REQUEST_BYTES]");
ABSL_FLAG(std::string, upload_rate, "4M",
          "sustained upload rate in bytes per second as Pyroscope counts "
          "them (labels + uncompressed pprof), after a burst of "
          "--max-request-bytes; keep it at or below the server's "
          "ingestion_rate_mb (per tenant: share it between collectors); 0: "
          "not paced [RINGPROF_UPLOAD_RATE]");
ABSL_FLAG(int, upload_attempts, 5,
          "uploads of one profile the server may answer 408/429/5xx before "
          "it is given up [RINGPROF_UPLOAD_ATTEMPTS]");
ABSL_FLAG(bool, pid_label, false,
          "add a pid series label (one series per process; Pyroscope's "
          "default series limit is 5000 per tenant) [RINGPROF_PID_LABEL]");
ABSL_FLAG(std::string, service_repository, "",
          "service_repository label for source-code integration, e.g. "
          "https://github.com/org/repo [PYROSCOPE_SERVICE_REPOSITORY]");
ABSL_FLAG(std::string, service_git_ref, "",
          "service_git_ref label (commit or branch) "
          "[PYROSCOPE_SERVICE_GIT_REF]");
ABSL_FLAG(std::string, service_root_path, "",
          "service_root_path label (path of the source root inside the "
          "repository) [PYROSCOPE_SERVICE_ROOT_PATH]");
ABSL_FLAG(int, metrics_port, 0,
          "serve Prometheus /metrics on this port; 0: off "
          "[RINGPROF_METRICS_PORT]");
ABSL_FLAG(std::string, metrics_address, "127.0.0.1",
          "address for /metrics [RINGPROF_METRICS_ADDRESS]");

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

// Each flag is also the environment variable its help names
// (flag_environment.h).
const bool kFlagEnvironment = RegisterFlagEnvironment({
    {"server_address", "PYROSCOPE_SERVER_ADDRESS"},
    {"application_name", "PYROSCOPE_APPLICATION_NAME"},
    {"tags", "PYROSCOPE_TAGS"},
    {"basic_auth_user", "PYROSCOPE_BASIC_AUTH_USER"},
    {"basic_auth_password", "PYROSCOPE_BASIC_AUTH_PASSWORD"},
    {"basic_auth_password_file", "PYROSCOPE_BASIC_AUTH_PASSWORD_FILE"},
    {"auth_token", "PYROSCOPE_AUTH_TOKEN"},
    {"auth_token_file", "PYROSCOPE_AUTH_TOKEN_FILE"},
    {"tenant_id", "PYROSCOPE_TENANT_ID"},
    {"http_headers", "PYROSCOPE_HTTP_HEADERS"},
    {"ca_file", "PYROSCOPE_CA_FILE"},
    {"spool_dir", "RINGPROF_SPOOL_DIR"},
    {"spool_max_bytes", "RINGPROF_SPOOL_MAX_BYTES"},
    {"legacy_ingest", "RINGPROF_LEGACY_INGEST"},
    {"upload_timeout", "RINGPROF_UPLOAD_TIMEOUT"},
    {"max_request_bytes", "RINGPROF_MAX_REQUEST_BYTES"},
    {"upload_rate", "RINGPROF_UPLOAD_RATE"},
    {"upload_attempts", "RINGPROF_UPLOAD_ATTEMPTS"},
    {"pid_label", "RINGPROF_PID_LABEL"},
    {"service_repository", "PYROSCOPE_SERVICE_REPOSITORY"},
    {"service_git_ref", "PYROSCOPE_SERVICE_GIT_REF"},
    {"service_root_path", "PYROSCOPE_SERVICE_ROOT_PATH"},
    {"metrics_port", "RINGPROF_METRICS_PORT"},
    {"metrics_address", "RINGPROF_METRICS_ADDRESS"},
});

// A secret file is read once, at startup, and must be a regular file of at
// most 64 KiB: a FIFO or a device (/dev/zero) would hang or never end. It
// may be empty only where `may_be_empty` (no secret is then in use).
absl::StatusOr<std::string> ReadSecretFile(const std::string& path,
                                           const char* what,
                                           bool may_be_empty) {
  constexpr size_t kMaxSecretBytes = 64 * 1024;
  absl::StatusOr<std::string> read = ReadRegularFile(path, kMaxSecretBytes);
  if (!read.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read the ", what, " file: ", read.status().message()));
  }
  std::string secret = std::move(*read);
  // Files written by editors and `echo` end with a newline.
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) {
    secret.pop_back();
  }
  if (secret.empty() && !may_be_empty) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", what, " file ", path, " is empty"));
  }
  if (secret.find_first_of("\r\n", 0) != std::string::npos ||
      secret.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", what, " file ", path, " holds more than one line"));
  }
  return secret;
}

// A secret from its flag, or from its file flag (the file wins).
absl::StatusOr<std::string> Secret(const absl::Flag<std::string>& flag,
                                   const absl::Flag<std::string>& file_flag,
                                   const char* what,
                                   bool may_be_empty = false) {
  const std::string file = absl::GetFlag(file_flag);
  absl::StatusOr<std::string> secret =
      file.empty() ? absl::GetFlag(flag)
                   : ReadSecretFile(file, what, may_be_empty);
  // Not passed on to a program `ringprof run` starts.
  const std::string variable =
      FlagVariableOf(absl::GetFlagReflectionHandle(flag).Name());
  if (!variable.empty()) unsetenv(variable.c_str());
  return secret;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseHeaders(
    const std::string& text) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (absl::string_view item :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      // Never echo the item: it may hold a secret value.
      return absl::InvalidArgumentError(
          absl::StrCat("extra header #", headers.size() + 1,
                       " is not of the form Name=value"));
    }
    headers.emplace_back(
        std::string(absl::StripAsciiWhitespace(item.substr(0, eq))),
        std::string(absl::StripAsciiWhitespace(item.substr(eq + 1))));
  }
  return headers;
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(const std::string& text) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  uint64_t multiplier = 1;
  if (!t.empty()) {
    switch (absl::ascii_toupper(static_cast<unsigned char>(t.back()))) {
      case 'K':
        multiplier = uint64_t{1} << 10;
        break;
      case 'M':
        multiplier = uint64_t{1} << 20;
        break;
      case 'G':
        multiplier = uint64_t{1} << 30;
        break;
    }
    if (multiplier != 1) t.remove_suffix(1);
  }
  uint64_t n;
  if (!absl::SimpleAtoi(t, &n) || n == 0 ||
      n > (uint64_t{1} << 50) / multiplier) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid size \"", text, "\" (bytes, or with a K/M/G suffix)"));
  }
  return n * multiplier;
}

absl::StatusOr<SeriesLabelConfig> SeriesLabelConfigFromFlags() {
  SeriesLabelConfig labels;
  labels.application_name = absl::GetFlag(FLAGS_application_name);
  absl::StatusOr<Labels> tags = ParseTags(absl::GetFlag(FLAGS_tags));
  if (!tags.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tags / PYROSCOPE_TAGS: ", tags.status().message()));
  }
  labels.tags = std::move(*tags);
  if (!labels.application_name.empty()) {
    if (absl::Status s =
            ValidateLabelValue("service_name", labels.application_name);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--application-name / PYROSCOPE_APPLICATION_NAME: ", s.message()));
    }
  }
  labels.host_labels = HostLabelsFromEnvironment();
  for (const auto& [flag, env, label] :
       {std::make_tuple(&FLAGS_service_repository,
                        "PYROSCOPE_SERVICE_REPOSITORY", "service_repository"),
        std::make_tuple(&FLAGS_service_git_ref, "PYROSCOPE_SERVICE_GIT_REF",
                        "service_git_ref"),
        std::make_tuple(&FLAGS_service_root_path, "PYROSCOPE_SERVICE_ROOT_PATH",
                        "service_root_path")}) {
    const std::string value = absl::GetFlag(*flag);
    if (value.empty()) continue;
    if (absl::Status s = ValidateLabelValue(label, value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(env, ": ", s.message()));
    }
    for (const auto& tag : labels.tags) {
      if (tag.first == label) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, " is given both as a tag and by ", env, "; give it once"));
      }
    }
    labels.source_labels.emplace_back(label, value);
  }
  labels.pid_label = absl::GetFlag(FLAGS_pid_label);
  return labels;
}

absl::Status QueueOptionsFromFlags(PyroscopeSinkOptions* options) {
  PyroscopeSinkOptions& o = *options;
  absl::StatusOr<uint64_t> spool_bytes =
      ParseByteSize(absl::GetFlag(FLAGS_spool_max_bytes));
  if (!spool_bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--spool-max-bytes / RINGPROF_SPOOL_MAX_BYTES: ",
                     spool_bytes.status().message()));
  }
  o.spool_max_bytes = *spool_bytes;

  absl::StatusOr<uint64_t> request_bytes =
      ParseByteSize(absl::GetFlag(FLAGS_max_request_bytes));
  // 4K still holds the labels and a profile folded to one "[trimmed]" stack.
  if (!request_bytes.ok() || *request_bytes < 4 * 1024) {
    return absl::InvalidArgumentError(
        "--max-request-bytes / RINGPROF_MAX_REQUEST_BYTES: a size of at "
        "least 4K (K/M/G suffixes)");
  }
  o.max_request_bytes = *request_bytes;
  const std::string rate_text = absl::GetFlag(FLAGS_upload_rate);
  absl::StatusOr<uint64_t> rate = absl::StripAsciiWhitespace(rate_text) == "0"
                                      ? uint64_t{0}
                                      : ParseByteSize(rate_text);
  if (!rate.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--upload-rate / RINGPROF_UPLOAD_RATE: ", rate.status().message()));
  }
  o.upload_bytes_per_second = *rate;
  const int attempts = absl::GetFlag(FLAGS_upload_attempts);
  if (attempts < 1 || attempts > 100) {
    return absl::InvalidArgumentError(
        "--upload-attempts must be between 1 and 100");
  }
  o.max_attempts = attempts;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<PyroscopeSinkOptions>>
PyroscopeSinkOptionsFromFlags() {
  PyroscopeSinkOptions o;
  o.upload.server_url = absl::GetFlag(FLAGS_server_address);
  if (o.upload.server_url.empty()) return std::nullopt;
  if (absl::Status s = ValidateServerUrl(o.upload.server_url); !s.ok()) {
    return s;
  }

  absl::StatusOr<SeriesLabelConfig> labels = SeriesLabelConfigFromFlags();
  if (!labels.ok()) return labels.status();
  o.labels = std::move(*labels);

  o.upload.basic_auth_user = absl::GetFlag(FLAGS_basic_auth_user);
  // Without a user, an empty password file is no basic auth at all: a
  // Kubernetes Secret for a server without authentication (the deploy
  // kit's) mounts its empty key as an empty file.
  absl::StatusOr<std::string> password =
      Secret(FLAGS_basic_auth_password, FLAGS_basic_auth_password_file,
             "basic auth password", o.upload.basic_auth_user.empty());
  if (!password.ok()) return password.status();
  o.upload.basic_auth_password = std::move(*password);
  absl::StatusOr<std::string> token =
      Secret(FLAGS_auth_token, FLAGS_auth_token_file, "auth token");
  if (!token.ok()) return token.status();
  o.upload.bearer_token = std::move(*token);
  if (!o.upload.bearer_token.empty() &&
      (!o.upload.basic_auth_user.empty() ||
       !o.upload.basic_auth_password.empty())) {
    return absl::InvalidArgumentError(
        "give either basic auth or an auth token, not both");
  }
  o.upload.tenant_id = absl::GetFlag(FLAGS_tenant_id);
  auto headers = ParseHeaders(absl::GetFlag(FLAGS_http_headers));
  if (!headers.ok()) return headers.status();
  o.upload.extra_headers = std::move(*headers);
  o.upload.ca_file = absl::GetFlag(FLAGS_ca_file);

  o.spool_dir = absl::GetFlag(FLAGS_spool_dir);
  o.upload.legacy_ingest = absl::GetFlag(FLAGS_legacy_ingest);
  if (o.upload.legacy_ingest) {
    Labels all = o.labels.tags;
    all.insert(all.end(), o.labels.source_labels.begin(),
               o.labels.source_labels.end());
    if (std::string problem = LegacyNameProblem(o.labels.application_name, all);
        !problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--legacy-ingest: ", problem));
    }
  }
  if (absl::Status s = QueueOptionsFromFlags(&o); !s.ok()) return s;
  const absl::Duration timeout = absl::GetFlag(FLAGS_upload_timeout);
  if (timeout < absl::Milliseconds(100)) {
    return absl::InvalidArgumentError("--upload-timeout must be >= 100ms");
  }
  o.upload.timeout_ms = absl::ToInt64Milliseconds(timeout);
  o.upload.connect_timeout_ms = std::min<int64_t>(o.upload.timeout_ms, 3000);
  return o;
}

absl::Status StartMetricsServerFromFlags() {
  static std::mutex mu;
  static MetricsServer* server = nullptr;  // lives until exit
  std::lock_guard<std::mutex> lock(mu);
  if (server != nullptr) return absl::OkStatus();
  const int port = absl::GetFlag(FLAGS_metrics_port);
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        "--metrics-port / RINGPROF_METRICS_PORT: a port from 0 (off) to 65535");
  }
  if (port == 0) return absl::OkStatus();
  const std::string address = absl::GetFlag(FLAGS_metrics_address);
  absl::StatusOr<std::unique_ptr<MetricsServer>> started =
      MetricsServer::Start(address, port);
  if (!started.ok()) return started.status();
  server = started->release();
  Log(LogLevel::kInfo, absl::StrCat("serving metrics on http://", address, ":",
                                    server->port(), "/metrics"));
  return absl::OkStatus();
}

}  // namespace shipping

absl::StatusOr<std::unique_ptr<ProfileSink>> MakePyroscopeSinkFromFlags() {
  if (absl::Status s = shipping::StartMetricsServerFromFlags(); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::optional<shipping::PyroscopeSinkOptions>> options =
      shipping::PyroscopeSinkOptionsFromFlags();
  if (!options.ok()) return options.status();
  if (!options->has_value()) return nullptr;
  const std::string url = shipping::RedactUrl((*options)->upload.server_url);
  const bool legacy = (*options)->upload.legacy_ingest;
  absl::StatusOr<std::unique_ptr<shipping::PyroscopeSink>> sink =
      shipping::PyroscopeSink::Create(std::move(**options));
  if (!sink.ok()) return sink.status();
  LogInfo(absl::StrCat("shipping profiles to ", url,
                       legacy ? " (legacy /ingest)" : " (push API)"));
  return std::unique_ptr<ProfileSink>(std::move(*sink));
}

}  // namespace collector
}  // namespace ringprof
