#include "collector/shipping/http_uploader.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "collector/base/clock.h"
#include "collector/base/gzip.h"
#include "collector/base/log.h"
#include "collector/shipping/codec.h"
#include "proto/push.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

constexpr size_t kMaxLoggedBodyBytes = 512;

bool IsLegacyAppNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '.' || c == '-' || c == '/';
}

// '{' and '=' would parse, but read as a second label set or tag.
bool IsLegacyValueTerminator(char c) {
  return c == ',' || c == '}' || c == '{' || c == '=';
}

struct Response {
  std::string body;
  std::string retry_after;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* response = static_cast<Response*>(user);
  // Keep what a message needs; drain the rest.
  const size_t room =
      64 * 1024 - std::min<size_t>(response->body.size(), 64 * 1024);
  response->body.append(data, std::min(room, size * n));
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  absl::string_view line(data, size * n);
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    line.remove_prefix(sizeof("retry-after:") - 1);
    static_cast<Response*>(user)->retry_after =
        std::string(absl::StripAsciiWhitespace(line));
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* abort_at = static_cast<const std::atomic<int64_t>*>(user);
  return MonotonicNowNs() >= abort_at->load(std::memory_order_relaxed) ? 1 : 0;
}

// The Connect error message when the body is a Connect error, else the body.
std::string ServerMessage(const std::string& body) {
  // {"code":"invalid_argument","message":"..."}: a light scan is enough for
  // a log line; a full JSON parser is not worth a dependency here.
  const size_t key = body.find("\"message\"");
  if (key != std::string::npos) {
    size_t start = body.find('"', body.find(':', key) + 1);
    if (start != std::string::npos) {
      std::string msg;
      for (size_t i = start + 1; i < body.size() && body[i] != '"'; ++i) {
        if (body[i] == '\\' && i + 1 < body.size()) ++i;
        msg += body[i];
      }
      return msg;
    }
  }
  std::string text = body.substr(0, kMaxLoggedBodyBytes);
  for (char& c : text) {
    if (!absl::ascii_isprint(static_cast<unsigned char>(c))) c = ' ';
  }
  return std::string(absl::StripAsciiWhitespace(text));
}

// The legacy `name` query as Pyroscope's labelset.Parse reads it
// (api/model/labelset): the application name may only hold
// [A-Za-z0-9_.\-/]; a tag value ends at ',' or '}'. Workload-derived names
// are repaired here ('_'); --application-name and --tags were checked at
// startup (LegacyNameProblem).
std::string LegacyName(const SpoolRecord& record) {
  std::string app = "unknown_service";
  std::vector<std::string> tags;
  for (const auto& label : record.labels()) {
    if (label.name() == "service_name") {
      app = label.value();
    } else if (label.name() != "__name__" && label.name() != "__delta__") {
      std::string value = label.value();
      for (char& c : value) {
        if (IsLegacyValueTerminator(c)) c = '_';
      }
      tags.push_back(absl::StrCat(label.name(), "=", value));
    }
  }
  for (char& c : app) {
    if (!IsLegacyAppNameChar(c)) c = '_';
  }
  return absl::StrCat(app, "{", absl::StrJoin(tags, ","), "}");
}

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string RedactUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host_start = scheme + 3;
  const size_t path = url.find('/', host_start);
  const size_t at =
      url.rfind('@', path == std::string::npos ? url.size() : path);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

int64_t ParseRetryAfterMs(const std::string& value, int64_t now_unix_s) {
  constexpr int64_t kMaxSeconds = int64_t{1} << 40;  // no overflow below
  int64_t seconds;
  if (absl::SimpleAtoi(value, &seconds)) {
    return seconds < 0 ? -1 : std::min(seconds, kMaxSeconds) * 1000;
  }
  if (!value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c));
      })) {
    return kMaxSeconds * 1000;  // digits beyond int64
  }
  const time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return -1;
  return std::min<int64_t>(kMaxSeconds,
                           std::max<int64_t>(0, int64_t{when} - now_unix_s)) *
         1000;
}

std::string LegacyNameProblem(
    absl::string_view application_name,
    const std::vector<std::pair<std::string, std::string>>& tags) {
  if (!std::all_of(application_name.begin(), application_name.end(),
                   IsLegacyAppNameChar)) {
    return absl::StrCat("the application name \"", application_name,
                        "\" has a character other than letters, digits and "
                        "_ . - / (the legacy /ingest API refuses it)");
  }
  for (const auto& [name, value] : tags) {
    if (std::any_of(value.begin(), value.end(), IsLegacyValueTerminator)) {
      return absl::StrCat("the value of tag \"", name,
                          "\" contains one of , } { = (the legacy /ingest "
                          "API cannot carry it)");
    }
  }
  return "";
}

absl::Status ValidateServerUrl(const std::string& url) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server address \"", RedactUrl(url), "\" is not usable: ", why));
  };
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://") &&
      !absl::ConsumePrefix(&rest, "https://")) {
    return bad("it must start with http:// or https://");
  }
  for (char c : url) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      return bad("spaces, control and non-ASCII characters are not allowed");
    }
  }
  if (rest.find_first_of("?#") != absl::string_view::npos) {
    return bad("no query or fragment (only a path prefix)");
  }
  absl::string_view authority = rest.substr(0, rest.find('/'));
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  absl::string_view host = authority, port;
  if (absl::StartsWith(authority, "[")) {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return bad("unclosed '['");
    host = authority.substr(0, close + 1);
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return bad("garbage after the IPv6 address");
    }
    port = after;
    if (!after.empty() && port.empty()) return bad("empty port");
  } else if (const size_t colon = authority.rfind(':');
             colon != absl::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return bad("empty port");
  }
  if (host.empty() || host == "[]") return bad("no host");
  if (!port.empty()) {
    int n = 0;
    if (port.size() > 5 || !absl::SimpleAtoi(port, &n) || n < 1 || n > 65535 ||
        !std::all_of(port.begin(), port.end(), [](char c) {
          return absl::ascii_isdigit(static_cast<unsigned char>(c));
        })) {
      return bad("the port must be a number from 1 to 65535");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpUploader>> HttpUploader::Create(
    UploaderOptions options) {
  if (absl::Status s = ValidateServerUrl(options.server_url); !s.ok()) {
    return s;
  }
  while (absl::EndsWith(options.server_url, "/")) options.server_url.pop_back();
  for (const auto& [name, value] : options.extra_headers) {
    const bool bad_name =
        name.empty() || std::any_of(name.begin(), name.end(), [](char c) {
          return !absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
                 c != '-' && c != '_';
        });
    if (bad_name || value.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid extra header \"", name, "\""));
    }
  }
  for (const auto& [file, what] :
       {std::make_pair(&options.ca_file, "CA bundle"),
        std::make_pair(&options.client_cert_file, "client certificate"),
        std::make_pair(&options.client_key_file, "client key")}) {
    if (!file->empty() && access(file->c_str(), R_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", *file, " is not readable"));
    }
  }
  if (options.client_cert_file.empty() != options.client_key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key, and a key its certificate");
  }
  GlobalInitOnce();
  std::unique_ptr<HttpUploader> uploader(new HttpUploader(std::move(options)));
  if (uploader->curl_ == nullptr) {
    return absl::InternalError("curl_easy_init failed");
  }
  return uploader;
}

HttpUploader::HttpUploader(UploaderOptions options)
    : options_(std::move(options)), curl_(curl_easy_init()) {}

HttpUploader::~HttpUploader() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string HttpUploader::BuildUrl(const SpoolRecord& record) const {
  if (!record.body().empty()) return options_.server_url;
  if (!options_.legacy_ingest) {
    return options_.server_url + "/push.v1.PusherService/Push";
  }
  CURL* curl = static_cast<CURL*>(curl_);
  char* name = curl_easy_escape(curl, LegacyName(record).c_str(), 0);
  std::string url = absl::StrCat(options_.server_url, "/ingest?name=", name,
                                 "&from=", record.from_unix_ns() / 1000000000,
                                 "&until=", record.until_unix_ns() / 1000000000,
                                 "&format=pprof&spyName=ringprof");
  curl_free(name);
  return url;
}

std::string HttpUploader::BuildBody(const SpoolRecord& record) const {
  if (!record.body().empty()) {
    return options_.gzip_body ? GzipCompress(record.body()) : record.body();
  }
  std::string gzipped = GzipCompress(record.pprof());
  if (options_.legacy_ingest) return gzipped;
  push::v1::PushRequest request;
  push::v1::RawProfileSeries* series = request.add_series();
  for (const auto& label : record.labels()) *series->add_labels() = label;
  push::v1::RawSample* sample = series->add_samples();
  sample->set_raw_profile(std::move(gzipped));
  sample->set_id(record.id());
  return request.SerializeAsString();
}

UploadResult HttpUploader::Upload(
    const SpoolRecord& record,
    const std::atomic<int64_t>* abort_at_monotonic_ns) {
  UploadResult result;
  const int64_t remaining_ms =
      (abort_at_monotonic_ns->load(std::memory_order_relaxed) -
       MonotonicNowNs()) /
      1000000;
  if (remaining_ms <= 0) {
    result.message = "upload aborted at the deadline";
    return result;
  }
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // keeps the connection cache
  const std::string url = BuildUrl(record);
  const std::string body = BuildBody(record);

  curl_slist* headers = nullptr;
  if (!record.body().empty()) {
    headers =
        curl_slist_append(headers, "Content-Type: application/x-protobuf");
    if (options_.gzip_body) {
      headers = curl_slist_append(headers, "Content-Encoding: gzip");
    }
  } else if (options_.legacy_ingest) {
    headers =
        curl_slist_append(headers, "Content-Type: application/octet-stream");
  } else {
    headers = curl_slist_append(headers, "Content-Type: application/proto");
    headers = curl_slist_append(headers, "Connect-Protocol-Version: 1");
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue pause
  if (!options_.tenant_id.empty()) {
    headers = curl_slist_append(
        headers, absl::StrCat("X-Scope-OrgID: ", options_.tenant_id).c_str());
  }
  for (const auto& [name, value] : options_.extra_headers) {
    headers =
        curl_slist_append(headers, absl::StrCat(name, ": ", value).c_str());
  }

  Response response;
  char error[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "ringprof/0.1");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(
      curl, CURLOPT_TIMEOUT_MS,
      static_cast<long>(std::min(options_.timeout_ms, remaining_ms)));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout_ms));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA,
                   const_cast<std::atomic<int64_t>*>(abort_at_monotonic_ns));
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!options_.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  }
  if (!options_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, options_.client_cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, options_.client_key_file.c_str());
  }
  if (!options_.basic_auth_user.empty() ||
      !options_.basic_auth_password.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERNAME, options_.basic_auth_user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD,
                     options_.basic_auth_password.c_str());
  } else if (!options_.bearer_token.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER,
                     options_.bearer_token.c_str());
  }

  result.request_bytes = static_cast<int64_t>(body.size());
  const int64_t start = MonotonicNowNs();
  const CURLcode rc = curl_easy_perform(curl);
  result.duration_ns = MonotonicNowNs() - start;
  curl_slist_free_all(headers);

  if (rc != CURLE_OK) {
    result.outcome = UploadResult::Outcome::kRetry;
    result.message = absl::StrCat(
        rc == CURLE_ABORTED_BY_CALLBACK ? "upload aborted at the deadline"
                                        : curl_easy_strerror(rc),
        error[0] != '\0' && rc != CURLE_ABORTED_BY_CALLBACK
            ? absl::StrCat(": ", error)
            : "");
    return result;
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  result.http_status = static_cast<int>(status);
  if (status >= 200 && status < 300) {
    result.outcome = UploadResult::Outcome::kSent;
    if (!record.body().empty()) result.response_body = std::move(response.body);
    return result;
  }
  result.message = absl::StrCat("HTTP ", status);
  if (std::string msg = ServerMessage(response.body); !msg.empty()) {
    absl::StrAppend(&result.message, ": ", msg);
  }
  if (status == 408 || status == 429 || status >= 500) {
    result.outcome = status == 502 || status == 503 || status == 504
                         ? UploadResult::Outcome::kRetry
                         : UploadResult::Outcome::kRetryProfile;
    if (!response.retry_after.empty()) {
      result.retry_after_ms =
          ParseRetryAfterMs(response.retry_after, UnixNowNs() / 1000000000);
    }
  } else {
    result.outcome = UploadResult::Outcome::kRejected;
  }
  return result;
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
