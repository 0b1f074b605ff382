// HttpUploader: one profile, one HTTP request to Pyroscope, and what the
// answer means for the caller (sent, retry later, or give up).
//
// Protocols:
//  - Push API (default): POST {server}/push.v1.PusherService/Push, Connect
//    unary over HTTP/1.1, Content-Type application/proto, body a
//    push.v1.PushRequest with one series (the record's labels) and one
//    sample (gzipped pprof, the record's UUID).
//  - Legacy: POST {server}/ingest?name=<service_name>{k=v,...}&from=&until=
//    &format=pprof&spyName=ringprof with the gzipped pprof as body, for
//    servers that predate the Push API.
//  - A prebuilt body (SpoolRecord.body, the OTLP sink's): POST
//    {server_url} itself (the full endpoint), Content-Type
//    application/x-protobuf, gzipped with Content-Encoding: gzip when
//    gzip_body is set.
// Classification: 2xx sent; transport failures (refused, DNS, TLS,
// timeout, aborted) and 502/503/504 mean the server is away (kRetry);
// 408, 429 and other 5xx are an answer about this request (kRetryProfile);
// both carry Retry-After when the server gave one. Every other status is a
// rejection that retrying cannot fix. The message is the Connect error
// message (or the body's first 512 bytes).
//
// Secrets (password, token) go to libcurl only; nothing here logs, and
// RedactUrl strips user:password@ from URLs used in messages.
//
// Thread-compatible: one instance per thread (it owns a curl easy handle,
// reused for keep-alive).
#ifndef RINGPROF_COLLECTOR_SHIPPING_HTTP_UPLOADER_H_
#define RINGPROF_COLLECTOR_SHIPPING_HTTP_UPLOADER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/shipping/spool_record.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {

struct UploaderOptions {
  std::string server_url;  // http(s)://host[:port][/prefix]
  bool legacy_ingest = false;
  std::string basic_auth_user;
  std::string basic_auth_password;  // secret
  std::string bearer_token;         // secret
  std::string tenant_id;            // X-Scope-OrgID
  std::vector<std::pair<std::string, std::string>> extra_headers;
  std::string ca_file;  // PEM bundle for https; empty: system store
  // Client certificate and key (PEM) for mutual TLS; empty: none.
  std::string client_cert_file;
  std::string client_key_file;
  // Records with a body: compress it (Content-Encoding: gzip).
  bool gzip_body = true;
  int64_t timeout_ms = 10000;
  int64_t connect_timeout_ms = 3000;
};

struct UploadResult {
  enum class Outcome { kSent, kRetry, kRetryProfile, kRejected };
  Outcome outcome = Outcome::kRetry;
  int http_status = 0;          // 0 when no response
  int64_t retry_after_ms = -1;  // from Retry-After; -1 when absent
  std::string message;          // why, for logs (never contains secrets)
  int64_t request_bytes = 0;
  int64_t duration_ns = 0;
  // The body of a 2xx answer to a prebuilt request body (its first 64 KiB),
  // for PyroscopeSinkOptions::check_response; empty otherwise.
  std::string response_body;
};

class HttpUploader {
 public:
  // InvalidArgument for a URL ValidateServerUrl refuses, or a header that
  // is not "Name: value"-able.
  static absl::StatusOr<std::unique_ptr<HttpUploader>> Create(
      UploaderOptions options);
  ~HttpUploader();

  // Sends one record. The transfer is aborted (outcome kRetry) once
  // CLOCK_MONOTONIC passes `*abort_at_monotonic_ns`, which another thread
  // may lower while the request runs.
  UploadResult Upload(const SpoolRecord& record,
                      const std::atomic<int64_t>* abort_at_monotonic_ns);

  // The request body and URL Upload would send (for tests and benchmarks).
  std::string BuildBody(const SpoolRecord& record) const;
  std::string BuildUrl(const SpoolRecord& record) const;

 private:
  explicit HttpUploader(UploaderOptions options);

  const UploaderOptions options_;
  void* curl_ = nullptr;  // CURL*
};

// Why --application-name / --tags cannot go through the legacy /ingest
// `name` query (Pyroscope's labelset.Parse), or "" when they can.
std::string LegacyNameProblem(
    absl::string_view application_name,
    const std::vector<std::pair<std::string, std::string>>& tags);

// OK for http(s)://[user[:password]@]host[:port][/prefix] with a port in
// 1..65535 and nothing that is not printable ASCII; InvalidArgument naming
// the problem (the URL redacted) otherwise, so a typo is a startup error
// instead of endless retries.
absl::Status ValidateServerUrl(const std::string& url);

// "https://user:secret@host/x" -> "https://host/x".
std::string RedactUrl(const std::string& url);

// Retry-After: delta-seconds or an HTTP-date; -1 when unparsable. Huge
// values saturate (callers cap the wait).
int64_t ParseRetryAfterMs(const std::string& value, int64_t now_unix_s);

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_HTTP_UPLOADER_H_
