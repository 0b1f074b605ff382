#include "collector/shipping/testing/receiver_fixture.h"

#include <curl/curl.h>
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

extern char** environ;

namespace ringprof {
namespace collector {
namespace shipping {
namespace testing {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

absl::StatusOr<ListValue> ParseList(const std::string& json) {
  ListValue list;
  auto status = google::protobuf::util::JsonStringToMessage(json, &list);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("bad JSON from receiver: ", json));
  }
  return list;
}

std::string Str(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? "" : it->second.string_value();
}

int64_t Num(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end()
             ? 0
             : static_cast<int64_t>(it->second.number_value());
}

}  // namespace

bool WaitFor(const std::function<bool()>& done, int64_t timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (true) {
    if (done()) return true;
    if (NowMs() >= deadline) return done();
    usleep(20000);
  }
}

std::string MakeTempDir(const std::string& prefix) {
  const char* base = getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(base ? base : "/tmp", "/", prefix, "XXXXXX");
  return mkdtemp(&tmpl[0]) ? tmpl : "";
}

int CountSpoolFiles(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      n += absl::EndsWith(e->d_name, ".rpspool") ? 1 : 0;
    }
    closedir(d);
  }
  return n;
}

absl::StatusOr<std::unique_ptr<Receiver>> Receiver::Start(
    const std::vector<std::string>& args) {
  std::unique_ptr<Receiver> r(new Receiver());
  r->dir_ = MakeTempDir("receiver");
  const std::string ready = r->dir_ + "/ready.json";
  std::vector<std::string> argv = {"/usr/bin/python3",
                                   "tests/pyroscope_receiver/receiver.py",
                                   "--ready-file", ready,
                                   "--exit-with-parent"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(&a[0]);
  cargv.push_back(nullptr);
  if (posix_spawn(&r->pid_, cargv[0], nullptr, nullptr, cargv.data(),
                  environ) != 0) {
    return absl::InternalError("cannot spawn the receiver");
  }
  std::string info;
  const bool started = WaitFor(
      [&] {
        std::ifstream in(ready);
        if (!in) return false;
        std::stringstream ss;
        ss << in.rdbuf();
        info = ss.str();
        return true;
      },
      30000);
  if (!started) return absl::DeadlineExceededError("receiver did not start");
  Struct s;
  if (!google::protobuf::util::JsonStringToMessage(info, &s).ok()) {
    return absl::InternalError(absl::StrCat("bad ready file: ", info));
  }
  r->url_ = Str(s, "url");
  r->control_url_ = absl::StrCat("http://127.0.0.1:", Num(s, "control_port"));
  return r;
}

Receiver::~Receiver() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

absl::StatusOr<std::string> Receiver::Control(const std::string& method,
                                              const std::string& path,
                                              const std::string& body) {
  CURL* curl = curl_easy_init();
  std::string out;
  const std::string url = control_url_ + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK || status != 200) {
    return absl::InternalError(
        absl::StrCat("receiver control ", path, " failed: ", status));
  }
  return out;
}

absl::Status Receiver::Down() { return Control("POST", "/down", "").status(); }
absl::Status Receiver::Up() { return Control("POST", "/up", "").status(); }
absl::Status Receiver::Fault(const std::string& fault_json) {
  return Control("POST", "/fault", fault_json).status();
}

absl::StatusOr<std::vector<AcceptedProfile>> Receiver::Accepted() {
  absl::StatusOr<std::string> json = Control("GET", "/accepted", "");
  if (!json.ok()) return json.status();
  absl::StatusOr<ListValue> list = ParseList(*json);
  if (!list.ok()) return list.status();
  std::vector<AcceptedProfile> out;
  for (const Value& v : list->values()) {
    const Struct& s = v.struct_value();
    AcceptedProfile p;
    for (const auto& [k, lv] :
         s.fields().at("labels").struct_value().fields()) {
      p.labels[k] = lv.string_value();
    }
    p.id = Str(s, "id");
    p.tenant = Str(s, "tenant");
    p.api = Str(s, "api");
    for (const Value& t : s.fields().at("sample_types").list_value().values()) {
      p.sample_types.push_back(t.string_value());
    }
    p.period_type = Str(s, "period_type");
    // JSON numbers are doubles: unix nanoseconds are exact only when they
    // are multiples of 256 ns, which whole seconds are (tests use those).
    p.time_nanos = Num(s, "time_nanos");
    p.duration_nanos = Num(s, "duration_nanos");
    p.num_samples = Num(s, "num_samples");
    p.received_ns = Num(s, "received_ns");
    p.from_ns = Num(s, "from_ns");
    p.until_ns = Num(s, "until_ns");
    p.gzipped =
        s.fields().count("gzipped") && s.fields().at("gzipped").bool_value();
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<RejectedRequest>> Receiver::Rejected() {
  absl::StatusOr<std::string> json = Control("GET", "/rejected", "");
  if (!json.ok()) return json.status();
  absl::StatusOr<ListValue> list = ParseList(*json);
  if (!list.ok()) return list.status();
  std::vector<RejectedRequest> out;
  for (const Value& v : list->values()) {
    const Struct& s = v.struct_value();
    RejectedRequest r;
    r.status = static_cast<int>(Num(s, "status"));
    r.message = Str(s, "message");
    r.id = Str(s, "id");
    r.fault = s.fields().count("fault") && s.fields().at("fault").bool_value();
    r.received_ns = Num(s, "received_ns");
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<ReceiverStats> Receiver::Stats() {
  absl::StatusOr<std::string> json = Control("GET", "/stats", "");
  if (!json.ok()) return json.status();
  Struct s;
  if (!google::protobuf::util::JsonStringToMessage(*json, &s).ok()) {
    return absl::InternalError(*json);
  }
  return ReceiverStats{Num(s, "accepted"), Num(s, "rejected"),
                       Num(s, "requests")};
}

}  // namespace testing
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
