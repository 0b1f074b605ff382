// PyroscopeSink against the local Pyroscope receiver
// (tests/pyroscope_receiver), which enforces Pyroscope's ingestion rules.
// Every wait is a poll of the receiver's or the sink's recorded state with a
// deadline; nothing depends on sleeping "long enough".
#include "collector/shipping/pyroscope_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collector/base/metrics.h"
#include "collector/shipping/testing/receiver_fixture.h"
#include "collector/shipping/testing/synthetic_profiles.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

using testing::AcceptedProfile;
using testing::AlignedWindowStartNs;
using ::testing::AllOf;
using ::testing::Contains;
using testing::CounterDelta;
using testing::CountSpoolFiles;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::MakeWindowProfile;
using ::testing::Not;
using ::testing::Pair;
using testing::Receiver;
using testing::WaitFor;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kWaitMs = 20000;

std::unique_ptr<Receiver> StartReceiver(
    const std::vector<std::string>& args = {}) {
  absl::StatusOr<std::unique_ptr<Receiver>> r = Receiver::Start(args);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

std::vector<AcceptedProfile> Accepted(Receiver& r) {
  absl::StatusOr<std::vector<AcceptedProfile>> a = r.Accepted();
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : std::vector<AcceptedProfile>{};
}

bool HasAccepted(Receiver& r, size_t n) { return Accepted(r).size() >= n; }

PyroscopeSinkOptions BaseOptions(const std::string& url) {
  PyroscopeSinkOptions o;
  o.upload.server_url = url;
  o.upload.timeout_ms = 5000;
  o.initial_backoff_ms = 20;
  o.max_backoff_ms = 200;
  o.labels.tags = {{"env", "test"}};
  o.labels.host_labels = {{"hostname", "testhost"}};
  return o;
}

std::unique_ptr<PyroscopeSink> MakeSink(PyroscopeSinkOptions options) {
  absl::StatusOr<std::unique_ptr<PyroscopeSink>> sink =
      PyroscopeSink::Create(std::move(options));
  EXPECT_TRUE(sink.ok()) << sink.status();
  return sink.ok() ? std::move(*sink) : nullptr;
}

int64_t FlushDeadline(int64_t seconds) {
  return MonotonicNowNs() + seconds * kSecond;
}

// The time_nanos of accepted profiles in arrival order.
std::vector<int64_t> Times(const std::vector<AcceptedProfile>& accepted) {
  std::vector<int64_t> t;
  for (const auto& a : accepted) t.push_back(a.time_nanos);
  return t;
}

// Windows [start + i*10s) for i in [0, n), oldest first.
std::vector<int64_t> WindowStarts(int n) {
  std::vector<int64_t> starts;
  for (int i = n; i >= 1; --i) starts.push_back(AlignedWindowStartNs(i));
  return starts;
}

void SubmitCpu(PyroscopeSink& sink, int64_t from, uint32_t pid = 100) {
  sink.Submit(MakeWindowProfile(ProfileKind::kCpu, "svc", pid, from,
                                from + 10 * kSecond));
}

TEST(PyroscopeSinkTest, HappyPathSendsEverySeriesAndTypeEveryWindow) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  CounterDelta sent("ringprof_profiles_sent_total");
  auto sink = MakeSink(BaseOptions(receiver->url()));
  ASSERT_NE(sink, nullptr);

  const std::vector<int64_t> windows = WindowStarts(3);
  for (int64_t from : windows) {
    for (uint32_t pid : {101u, 102u}) {
      for (ProfileKind kind : {ProfileKind::kCpu, ProfileKind::kMemory}) {
        sink->Submit(
            MakeWindowProfile(kind, "svc", pid, from, from + 10 * kSecond));
      }
    }
  }
  ASSERT_TRUE(sink->Flush(FlushDeadline(20)).ok());
  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 12u);
  EXPECT_EQ(sent(), 12u);

  std::set<std::string> ids;
  const std::regex uuid4(
      "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (size_t i = 0; i < accepted.size(); ++i) {
    const AcceptedProfile& a = accepted[i];
    const bool cpu = a.labels.at("__name__") == "process_cpu";
    // Submission order is preserved: window, pid, type.
    EXPECT_EQ(a.time_nanos, windows[i / 4]);
    EXPECT_EQ(a.duration_nanos, 10 * kSecond);
    EXPECT_EQ(a.labels.at("__name__"), (i % 2 == 0) ? "process_cpu" : "memory");
    EXPECT_EQ(a.labels.at("__session_id__"),
              (i % 4 < 2) ? "0000000000000065" : "0000000000000066");
    EXPECT_EQ(a.labels.count("pid"), 0u);
    EXPECT_EQ(a.labels.at("service_name"), "svc");
    EXPECT_EQ(a.labels.at("hostname"), "testhost");
    EXPECT_EQ(a.labels.at("env"), "test");
    if (cpu) {
      EXPECT_EQ(a.labels.count("__delta__"), 0u);
      EXPECT_THAT(a.sample_types, ElementsAre("cpu:nanoseconds"));
      EXPECT_EQ(a.period_type, "cpu:nanoseconds");
    } else {
      EXPECT_EQ(a.labels.at("__delta__"), "false");
      EXPECT_THAT(a.sample_types,
                  ElementsAre("alloc_objects:count", "alloc_space:bytes"));
      EXPECT_EQ(a.period_type, "space:bytes");
    }
    EXPECT_TRUE(a.gzipped);
    EXPECT_EQ(a.api, "push");
    EXPECT_TRUE(std::regex_match(a.id, uuid4)) << a.id;
    ids.insert(a.id);
  }
  EXPECT_EQ(ids.size(), 12u);
  const std::string metrics = Metrics::Get().RenderText();
  EXPECT_THAT(metrics,
              HasSubstr("# TYPE ringprof_upload_duration_seconds histogram\n"));
  EXPECT_THAT(metrics,
              HasSubstr("# TYPE ringprof_profiles_sent_total counter\n"));
}

TEST(PyroscopeSinkTest, OutageSpoolsThenReplaysEveryWindowOnceInOrder) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  const std::string spool = MakeTempDir("spool");
  CounterDelta spooled("ringprof_profiles_spooled_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.spool_dir = spool;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);

  const std::vector<int64_t> windows = WindowStarts(6);
  SubmitCpu(*sink, windows[0]);
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 1); }, kWaitMs));

  ASSERT_TRUE(receiver->Down().ok());
  for (int i = 1; i < 5; ++i) {
    SubmitCpu(*sink, windows[i]);
    // One window at a time, as the collector would submit them.
    ASSERT_TRUE(WaitFor([&] { return CountSpoolFiles(spool) == i; }, kWaitMs))
        << "window " << i << " was not spooled";
  }
  // The counter moves just after the file's rename: wait for it too.
  EXPECT_TRUE(WaitFor([&] { return spooled() == 4u; }, kWaitMs))
      << "spooled " << spooled();
  ASSERT_TRUE(receiver->Up().ok());
  SubmitCpu(*sink, windows[5]);
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 6); }, kWaitMs));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());

  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  EXPECT_EQ(Times(accepted), windows);  // each exactly once, in order
  EXPECT_EQ(CountSpoolFiles(spool), 0);
  EXPECT_EQ(sink->OutstandingForTest(), 0u);
}

TEST(PyroscopeSinkTest, TinySpoolDropsOldestAndCountsThem) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver->Down().ok());
  const std::string spool = MakeTempDir("spool");
  CounterDelta dropped("ringprof_profiles_dropped_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.spool_dir = spool;
  // One synthetic CPU profile compresses to well under 2 KiB and over 500
  // bytes: at most a few fit.
  options.spool_max_bytes = 2048;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);

  const std::vector<int64_t> windows = WindowStarts(8);
  for (int64_t from : windows) SubmitCpu(*sink, from);
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  const int kept = CountSpoolFiles(spool);
  ASSERT_GE(kept, 1);
  ASSERT_LT(kept, 8);
  EXPECT_EQ(dropped(), static_cast<uint64_t>(8 - kept));

  ASSERT_TRUE(receiver->Up().ok());
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, kept); }, kWaitMs));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  // The newest survive, in order.
  EXPECT_EQ(Times(Accepted(*receiver)),
            std::vector<int64_t>(windows.end() - kept, windows.end()));
}

TEST(PyroscopeSinkTest, HonoursRetryAfterOn429) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(
      receiver->Fault(R"({"status": 429, "retry_after": 1, "count": 1})").ok());
  CounterDelta retries("ringprof_upload_retries_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.max_backoff_ms = 5000;  // the cap on Retry-After
  auto sink = MakeSink(options);  // 20 ms backoff
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 1); }, kWaitMs));

  auto rejected = receiver->Rejected();
  ASSERT_TRUE(rejected.ok());
  ASSERT_EQ(rejected->size(), 1u);
  const AcceptedProfile accepted = Accepted(*receiver)[0];
  EXPECT_EQ(accepted.id, (*rejected)[0].id);  // the same profile, retried
  // Retry-After: 1 overrides the 20 ms backoff.
  EXPECT_GE(accepted.received_ns - (*rejected)[0].received_ns,
            kSecond * 95 / 100);
  EXPECT_EQ(retries(), 1u);
}

TEST(PyroscopeSinkTest, RetriesA5xxBurstAndKeepsOrder) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver->Fault(R"({"status": 503, "count": 4})").ok());
  CounterDelta retries("ringprof_upload_retries_total");
  CounterDelta failed("ringprof_profiles_failed_total");
  auto sink = MakeSink(BaseOptions(receiver->url()));
  ASSERT_NE(sink, nullptr);
  const std::vector<int64_t> windows = WindowStarts(3);
  for (int64_t from : windows) SubmitCpu(*sink, from);
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 3); }, kWaitMs));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  EXPECT_EQ(Times(Accepted(*receiver)), windows);
  EXPECT_EQ(retries(), 4u);
  EXPECT_EQ(failed(), 0u);
}

TEST(PyroscopeSinkTest, SlowServerTimesOutAndIsRetriedWithTheSameId) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver->Fault(R"({"delay_ms": 2000, "count": 1})").ok());
  CounterDelta retries("ringprof_upload_retries_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.upload.timeout_ms = 300;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 1); }, kWaitMs));
  EXPECT_GE(retries(), 1u);
  // The slow request may still complete on the server after the client gave
  // up (at-least-once delivery); every copy carries the same ID.
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 2); }, kWaitMs));
  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  std::set<std::string> ids;
  for (const auto& a : accepted) ids.insert(a.id);
  EXPECT_EQ(ids.size(), 1u);
}

// Captures everything written to stderr while alive.
class StderrCapture {
 public:
  StderrCapture() : path_(MakeTempDir("stderr") + "/stderr.txt") {
    fflush(stderr);
    saved_ = dup(2);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() { Restore(); }
  std::string Restore() {
    if (saved_ >= 0) {
      fflush(stderr);
      dup2(saved_, 2);
      close(saved_);
      saved_ = -1;
    }
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

int CountOccurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(PyroscopeSinkTest, WrongTenantIsAClearErrorLoggedOnceWithoutHotLoop) {
  auto receiver =
      StartReceiver({"--tenant", "team-a", "--basic-auth", "user:s3cr3t-pass"});
  ASSERT_NE(receiver, nullptr);
  CounterDelta failed("ringprof_profiles_failed_total");
  CounterDelta retries("ringprof_upload_retries_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.upload.tenant_id = "team-b";
  options.upload.basic_auth_user = "user";
  options.upload.basic_auth_password = "s3cr3t-pass";
  StderrCapture capture;
  {
    auto sink = MakeSink(options);
    ASSERT_NE(sink, nullptr);
    for (int64_t from : WindowStarts(3)) SubmitCpu(*sink, from);
    ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  }
  const std::string log = capture.Restore();
  auto stats = receiver->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 3);  // one request per profile, no retry loop
  EXPECT_EQ(stats->accepted, 0);
  EXPECT_EQ(failed(), 3u);
  EXPECT_EQ(retries(), 0u);
  EXPECT_EQ(CountOccurrences(log, "Pyroscope rejected"), 1) << log;
  EXPECT_THAT(log, HasSubstr("HTTP 401: unknown tenant"));
  EXPECT_THAT(log, Not(HasSubstr("s3cr3t-pass")));

  // The right tenant and credentials get through.
  options.upload.tenant_id = "team-a";
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  const auto accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].tenant, "team-a");
}

TEST(PyroscopeSinkTest, LogsOneConciseLinePerWindow) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  StderrCapture capture;
  {
    auto sink = MakeSink(BaseOptions(receiver->url()));
    ASSERT_NE(sink, nullptr);
    for (int64_t from : WindowStarts(3)) {
      for (ProfileKind kind : {ProfileKind::kCpu, ProfileKind::kMemory}) {
        sink->Submit(
            MakeWindowProfile(kind, "svc", 7, from, from + 10 * kSecond));
      }
    }
    ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  }
  const std::string log = capture.Restore();
  EXPECT_EQ(CountOccurrences(log, "ringprof: window "), 3) << log;
  EXPECT_EQ(CountOccurrences(log, "+10s UTC: 2 profiles sent ("), 3) << log;
}

TEST(PyroscopeSinkTest, BearerTokenIsSent) {
  auto receiver = StartReceiver({"--bearer-token", "tok-123"});
  ASSERT_NE(receiver, nullptr);
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.upload.bearer_token = "tok-123";
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  EXPECT_EQ(Accepted(*receiver).size(), 1u);
}

TEST(PyroscopeSinkTest, TlsWithSelfSignedCaPassedByOption) {
  const std::string certs = MakeTempDir("certs");
  auto receiver = StartReceiver({"--self-signed-tls", certs});
  ASSERT_NE(receiver, nullptr);
  ASSERT_EQ(receiver->url().rfind("https://", 0), 0u) << receiver->url();

  // Without the CA the certificate is not trusted: retried, never sent.
  {
    CounterDelta retries("ringprof_upload_retries_total");
    auto sink = MakeSink(BaseOptions(receiver->url()));
    ASSERT_NE(sink, nullptr);
    SubmitCpu(*sink, AlignedWindowStartNs(2));
    ASSERT_TRUE(WaitFor([&] { return retries() >= 1; }, kWaitMs));
  }
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.upload.ca_file = certs + "/ca.pem";
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  EXPECT_EQ(Accepted(*receiver).size(), 1u);
}

TEST(PyroscopeSinkTest, ShutdownDuringOutageSpoolsAndNextSinkReplays) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver->Down().ok());
  const std::string spool = MakeTempDir("spool");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.spool_dir = spool;
  const std::vector<int64_t> windows = WindowStarts(4);
  {
    auto sink = MakeSink(options);
    ASSERT_NE(sink, nullptr);
    for (int64_t from : windows) SubmitCpu(*sink, from);
    // What the collector does on SIGTERM: flush with a deadline, then exit.
    const int64_t start = MonotonicNowNs();
    ASSERT_TRUE(sink->Flush(start + 3 * kSecond).ok());
    EXPECT_LT(MonotonicNowNs() - start, 3 * kSecond);
  }
  EXPECT_EQ(CountSpoolFiles(spool), 4);

  ASSERT_TRUE(receiver->Up().ok());
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 4); }, kWaitMs));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  EXPECT_EQ(Times(Accepted(*receiver)), windows);
  EXPECT_EQ(CountSpoolFiles(spool), 0);
}

TEST(PyroscopeSinkTest, SpoolIsLockedAgainstASecondCollector) {
  const std::string spool = MakeTempDir("spool");
  PyroscopeSinkOptions options = BaseOptions("http://127.0.0.1:9");
  options.spool_dir = spool;
  auto first = MakeSink(options);
  ASSERT_NE(first, nullptr);
  absl::StatusOr<std::unique_ptr<PyroscopeSink>> second =
      PyroscopeSink::Create(options);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(PyroscopeSinkTest, SpooledProfilesOutsideTheIngestionWindowExpire) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver->Down().ok());
  const std::string spool = MakeTempDir("spool");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.spool_dir = spool;
  {
    auto sink = MakeSink(options);
    ASSERT_NE(sink, nullptr);
    for (int64_t from : WindowStarts(3)) SubmitCpu(*sink, from);
    ASSERT_TRUE(sink->Flush(FlushDeadline(5)).ok());
  }
  ASSERT_EQ(CountSpoolFiles(spool), 3);
  ASSERT_TRUE(receiver->Up().ok());
  // A server whose window is only 5 s wide: everything spooled is too old.
  CounterDelta expired("ringprof_profiles_expired_total");
  options.limits.max_age_ns = 5 * kSecond;
  options.expiry_margin_ns = 0;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(WaitFor([&] { return CountSpoolFiles(spool) == 0; }, kWaitMs));
  EXPECT_EQ(expired(), 3u);
  auto stats = receiver->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 0);  // expired data is never sent
}

TEST(PyroscopeSinkTest, InvalidProfilesAreReportedAndNeverSent) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  CounterDelta invalid("ringprof_profiles_invalid_total");
  auto sink = MakeSink(BaseOptions(receiver->url()));
  ASSERT_NE(sink, nullptr);
  WindowProfile bad_pprof =
      MakeWindowProfile(ProfileKind::kCpu, "svc", 1, AlignedWindowStartNs(1),
                        AlignedWindowStartNs(0));
  auto broken = std::make_shared<perftools::profiles::Profile>();
  broken->add_string_table("x");  // string_table[0] must be ""
  bad_pprof.profile = std::move(broken);
  sink->Submit(bad_pprof);
  WindowProfile bad_label =
      MakeWindowProfile(ProfileKind::kCpu, "svc", 1, AlignedWindowStartNs(1),
                        AlignedWindowStartNs(0));
  bad_label.labels.emplace_back("thread-name", "t1");
  sink->Submit(bad_label);
  WindowProfile future =
      MakeWindowProfile(ProfileKind::kCpu, "svc", 1, AlignedWindowStartNs(-100),
                        AlignedWindowStartNs(-101));
  sink->Submit(future);
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  EXPECT_EQ(invalid(), 3u);
  auto stats = receiver->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->requests, 0);
}

TEST(PyroscopeSinkTest, HugeRetryAfterIsCappedAtTheMaximumBackoff) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(
      receiver->Fault(R"({"status": 503, "retry_after": 999999999})").ok());
  PyroscopeSinkOptions options = BaseOptions(receiver->url());  // cap 200 ms
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 1); }, kWaitMs));
  auto rejected = receiver->Rejected();
  ASSERT_TRUE(rejected.ok());
  ASSERT_EQ(rejected->size(), 1u);
  EXPECT_LT(Accepted(*receiver)[0].received_ns - (*rejected)[0].received_ns,
            2 * kSecond);
  EXPECT_EQ(ParseRetryAfterMs("999999999999999999999", 0),
            (int64_t{1} << 40) * 1000);
  EXPECT_EQ(ParseRetryAfterMs("-5", 0), -1);
}

// A profile the server keeps answering 500 does not hold the queue: the
// next window's profile goes ahead after one backoff, and the bad one is
// given up after the attempt bound, counted and logged.
TEST(PyroscopeSinkTest, RefusedProfileIsGivenUpAndDoesNotHoldTheQueue) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver
                  ->Fault(R"({"status": 500, "count": 1000,
                              "message": "boom",
                              "when_label": ["service_name", "bad"]})")
                  .ok());
  CounterDelta failed("ringprof_profiles_failed_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.initial_backoff_ms = 100;
  options.max_backoff_ms = 100;
  options.max_attempts = 3;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  const std::vector<int64_t> windows = WindowStarts(2);
  sink->Submit(MakeWindowProfile(ProfileKind::kCpu, "bad", 100, windows[0],
                                 windows[0] + 10 * kSecond));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = receiver->Rejected();
        return r.ok() && !r->empty();
      },
      kWaitMs));
  const int64_t refused_ns = (*receiver->Rejected())[0].received_ns;
  SubmitCpu(*sink, windows[1]);
  ASSERT_TRUE(WaitFor([&] { return HasAccepted(*receiver, 1); }, kWaitMs));
  const AcceptedProfile good = Accepted(*receiver)[0];
  EXPECT_EQ(good.labels.at("service_name"), "svc");
  // One retry interval (100 ms, jittered down to 50) plus slack for a
  // loaded machine; the bad profile's own retries come after it.
  EXPECT_LT(good.received_ns - refused_ns, kSecond);
  ASSERT_TRUE(WaitFor([&] { return failed() == 1; }, kWaitMs));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  auto rejected = receiver->Rejected();
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->size(), 3u);  // max_attempts requests, then given up
  EXPECT_EQ(Accepted(*receiver).size(), 1u);
  EXPECT_EQ(sink->OutstandingForTest(), 0u);
}

// Pyroscope answers 429 forever to a profile larger than its ingestion
// burst; the sink trims it to the request budget instead.
TEST(PyroscopeSinkTest, ProfileOverTheBurstIsTrimmedAndAccepted) {
  auto receiver = StartReceiver({"--ingestion-burst-size-mb", "0.25"});
  ASSERT_NE(receiver, nullptr);
  CounterDelta trimmed("ringprof_profiles_trimmed_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.max_request_bytes = 256 * 1024;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  testing::SyntheticShape big;
  big.distinct_stacks = 4000;
  big.stack_depth = 40;
  big.functions = 3000;
  const int64_t from = AlignedWindowStartNs(1);
  WindowProfile p = MakeWindowProfile(ProfileKind::kMemory, "svc", 100, from,
                                      from + 10 * kSecond, big);
  ASSERT_GT(p.profile->ByteSizeLong(), 256u * 1024);
  sink->Submit(std::move(p));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  const auto accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_LE(accepted[0].uncompressed_size, 256 * 1024);
  EXPECT_LT(accepted[0].num_samples, 4000);
  EXPECT_EQ(trimmed(), 1u);
  auto rejected = receiver->Rejected();
  ASSERT_TRUE(rejected.ok());
  EXPECT_TRUE(rejected->empty());
}

TEST(PyroscopeSinkTest,
     WorkloadLabelsAreSanitizedAndNeverReplaceTheCollectors) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  CounterDelta dropped("ringprof_labels_dropped_total");
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.labels.host_labels = {{"hostname", "testhost"}, {"pod", "real-pod"}};
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  const int64_t from = AlignedWindowStartNs(1);
  WindowProfile p = MakeWindowProfile(ProfileKind::kCpu, "svc", 100, from,
                                      from + 10 * kSecond);
  p.service_name = "bin_caf\xe9";
  p.labels = {{"service_name", "bin_caf\xe9"}};
  p.workload_labels = {{"pod", "evil"},         {"hostname", "evil"},
                       {"__otel__", "true"},    {"9lives", "x"},
                       {"k8s.cluster", "prod"}, {"team", "caf\xe9"}};
  sink->Submit(std::move(p));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  const auto accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 1u);
  const auto& labels = accepted[0].stored_labels;
  EXPECT_EQ(labels.at("pod"), "real-pod");
  EXPECT_EQ(labels.at("hostname"), "testhost");
  EXPECT_EQ(labels.at("k8s.cluster"), "prod");
  EXPECT_EQ(labels.at("team"), "caf\xEF\xBF\xBD");
  EXPECT_EQ(labels.at("service_name"), "bin_caf\xEF\xBF\xBD");
  EXPECT_EQ(labels.count("__otel__"), 0u);
  EXPECT_EQ(dropped(), 4u);
}

TEST(PyroscopeSinkTest, LegacyIngestMode) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  PyroscopeSinkOptions options = BaseOptions(receiver->url());
  options.upload.legacy_ingest = true;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  const int64_t from = AlignedWindowStartNs(1);
  SubmitCpu(*sink, from);
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  const auto accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_EQ(accepted[0].api, "ingest");
  EXPECT_EQ(accepted[0].from_ns, from);
  EXPECT_EQ(accepted[0].until_ns, from + 10 * kSecond);
  EXPECT_EQ(accepted[0].labels.at("service_name"), "svc");
  EXPECT_EQ(accepted[0].labels.at("env"), "test");
  EXPECT_EQ(accepted[0].labels.at("__session_id__"), "0000000000000064");

  // A workload-derived service name the legacy parser would refuse is
  // repaired; a tag value with ',' would be cut, so it is repaired too.
  WindowProfile odd =
      MakeWindowProfile(ProfileKind::kCpu, "x", 100, from, from + 10 * kSecond);
  odd.service_name = "my app:v2";
  odd.labels = {{"service_name", "my app:v2"}};
  odd.workload_labels = {{"route", "a,b}c"}};
  sink->Submit(std::move(odd));
  ASSERT_TRUE(sink->Flush(FlushDeadline(10)).ok());
  ASSERT_EQ(Accepted(*receiver).size(), 2u);
  EXPECT_EQ(Accepted(*receiver)[1].labels.at("service_name"), "my_app_v2");
  EXPECT_EQ(Accepted(*receiver)[1].labels.at("route"), "a_b_c");
}

TEST(PyroscopeSinkTest, FlushWithoutSpoolDuringOutageReportsWhatIsLost) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  ASSERT_TRUE(receiver->Down().ok());
  auto sink = MakeSink(BaseOptions(receiver->url()));  // memory backlog
  ASSERT_NE(sink, nullptr);
  SubmitCpu(*sink, AlignedWindowStartNs(1));
  const absl::Status status = sink->Flush(MonotonicNowNs() + kSecond / 2);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("1 profiles"));
  EXPECT_THAT(status.message(), HasSubstr("no spool directory"));
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
