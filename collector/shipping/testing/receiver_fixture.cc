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
#include "collector/shipping/testing/receiver_records.pb.h"
#include "google/protobuf/util/json_util.h"

extern char** environ;

namespace ringprof {
namespace collector {
namespace shipping {
namespace testing {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

template <typename Message>
absl::StatusOr<Message> ParseJson(const std::string& text) {
  Message m;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(text, &m, options).ok()) {
    return absl::InternalError(absl::StrCat("bad JSON from receiver: ", text));
  }
  return m;
}

absl::StatusOr<json::ReceiverEntries> ParseEntries(
    const std::string& json_list) {
  return ParseJson<json::ReceiverEntries>(
      absl::StrCat("{\"entries\": ", json_list, "}"));
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
                                   "--ready-file", ready, "--exit-with-parent"};
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
  absl::StatusOr<json::ReadyInfo> ready_info = ParseJson<json::ReadyInfo>(info);
  if (!ready_info.ok()) return ready_info.status();
  r->url_ = ready_info->url();
  r->control_url_ =
      absl::StrCat("http://127.0.0.1:", ready_info->control_port());
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
  absl::StatusOr<std::string> body = Control("GET", "/accepted", "");
  if (!body.ok()) return body.status();
  absl::StatusOr<json::ReceiverEntries> entries = ParseEntries(*body);
  if (!entries.ok()) return entries.status();
  std::vector<AcceptedProfile> out;
  for (const json::ReceiverEntry& e : entries->entries()) {
    AcceptedProfile p;
    for (const auto& l : e.label_list()) p.labels[l.name()] = l.value();
    p.id = e.id();
    p.tenant = e.tenant();
    p.api = e.api();
    p.sample_types.assign(e.sample_types().begin(), e.sample_types().end());
    p.period_type = e.period_type();
    p.time_nanos = e.time_nanos();
    p.duration_nanos = e.duration_nanos();
    p.num_samples = e.num_samples();
    p.received_ns = e.received_ns();
    p.from_ns = e.from_ns();
    p.until_ns = e.until_ns();
    p.gzipped = e.gzipped();
    p.uncompressed_size = e.uncompressed_size();
    for (const auto& l : e.stored_label_list()) {
      p.stored_labels[l.name()] = l.value();
    }
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<std::vector<RejectedRequest>> Receiver::Rejected() {
  absl::StatusOr<std::string> body = Control("GET", "/rejected", "");
  if (!body.ok()) return body.status();
  absl::StatusOr<json::ReceiverEntries> entries = ParseEntries(*body);
  if (!entries.ok()) return entries.status();
  std::vector<RejectedRequest> out;
  for (const json::ReceiverEntry& e : entries->entries()) {
    RejectedRequest r;
    r.status = static_cast<int>(e.status());
    r.message = e.message();
    r.id = e.id();
    r.fault = e.fault();
    r.received_ns = e.received_ns();
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<ReceiverStats> Receiver::Stats() {
  absl::StatusOr<std::string> body = Control("GET", "/stats", "");
  if (!body.ok()) return body.status();
  absl::StatusOr<json::ReceiverStats> stats =
      ParseJson<json::ReceiverStats>(*body);
  if (!stats.ok()) return stats.status();
  return ReceiverStats{stats->accepted(), stats->rejected(), stats->requests()};
}

}  // namespace testing
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
