// The OTLP sink against the local receiver's /v1development/profiles
// (tests/pyroscope_receiver: Pyroscope v2's OTLP conversion, then its
// ingestion rules). Every wait is a bounded poll.
#include "collector/otlp/otlp_sink.h"

#include <string>
#include <vector>

#include "collector/base/clock.h"
#include "collector/base/metrics.h"
#include "collector/shipping/testing/receiver_fixture.h"
#include "collector/shipping/testing/synthetic_profiles.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/otlp/profiles_service.pb.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

using shipping::testing::AcceptedProfile;
using shipping::testing::AlignedWindowStartNs;
using shipping::testing::CounterDelta;
using shipping::testing::CountSpoolFiles;
using shipping::testing::MakeTempDir;
using shipping::testing::MakeWindowProfile;
using shipping::testing::Receiver;
using shipping::testing::WaitFor;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kWaitMs = 20000;

std::unique_ptr<Receiver> StartReceiver() {
  absl::StatusOr<std::unique_ptr<Receiver>> r = Receiver::Start();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : nullptr;
}

std::vector<AcceptedProfile> Accepted(Receiver& r) {
  absl::StatusOr<std::vector<AcceptedProfile>> a = r.Accepted();
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : std::vector<AcceptedProfile>{};
}

OtlpSinkOptions Options(const Receiver& r) {
  OtlpSinkOptions o;
  o.queue.upload.server_url = r.url() + "/v1development/profiles";
  o.queue.upload.timeout_ms = 5000;
  o.queue.initial_backoff_ms = 20;
  o.queue.max_backoff_ms = 200;
  o.queue.labels.tags = {{"env", "test"}};
  o.queue.labels.host_labels = {{"hostname", "testhost"}};
  o.resource_attributes = {{"service.version", "1.2.3"}};
  o.process_pid = true;
  return o;
}

std::unique_ptr<shipping::PyroscopeSink> MakeSink(OtlpSinkOptions o) {
  absl::StatusOr<std::unique_ptr<shipping::PyroscopeSink>> sink =
      MakeOtlpSink(std::move(o));
  EXPECT_TRUE(sink.ok()) << sink.status();
  return sink.ok() ? std::move(*sink) : nullptr;
}

int64_t Deadline(int64_t seconds) {
  return MonotonicNowNs() + seconds * kSecond;
}

void Submit(ProfileSink& sink, ProfileKind kind, int64_t from) {
  sink.Submit(MakeWindowProfile(kind, "svc", 100, from, from + 10 * kSecond));
}

TEST(OtlpSinkTest, EveryTypeArrivesWithItsResourceAndStoredLabels) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  CounterDelta sent("ringprof_otlp_profiles_sent_total");
  CounterDelta push_sent("ringprof_profiles_sent_total");
  auto sink = MakeSink(Options(*receiver));
  ASSERT_NE(sink, nullptr);
  const int64_t from = AlignedWindowStartNs(1);
  Submit(*sink, ProfileKind::kCpu, from);
  Submit(*sink, ProfileKind::kMemory, from);
  ASSERT_TRUE(sink->Flush(Deadline(20)).ok());

  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  // One OTLP profile per sample type: cpu, alloc_objects, alloc_space.
  ASSERT_EQ(accepted.size(), 3u);
  std::vector<std::string> types;
  for (const AcceptedProfile& a : accepted) {
    EXPECT_EQ(a.api, "otlp");
    EXPECT_TRUE(a.gzipped);
    EXPECT_EQ(a.time_nanos, from);
    EXPECT_EQ(a.duration_nanos, 10 * kSecond);
    ASSERT_EQ(a.sample_types.size(), 1u);
    // The series labels Pyroscope's OTLP conversion gives (before its own
    // label rules, which differ between v1 and v2).
    types.push_back(a.labels.at("__name__") + ":" + a.sample_types[0]);
    EXPECT_EQ(a.labels.at("service_name"), "svc");
    EXPECT_EQ(a.labels.at("host.name"), "testhost");
    EXPECT_EQ(a.labels.at("env"), "test");
    EXPECT_EQ(a.labels.at("service.version"), "1.2.3");
    EXPECT_EQ(a.labels.at("__otel__"), "true");
    // Pyroscope v2.2.1 makes the int process.pid a label too.
    EXPECT_EQ(a.labels.at("process.pid"), "100");
    EXPECT_GT(a.num_samples, 0);
  }
  // Pyroscope stores OpenTelemetry's CPU convention as process_cpu and
  // names other OTLP profiles by their period type.
  EXPECT_THAT(types, UnorderedElementsAre("process_cpu:cpu:nanoseconds",
                                          "memory:alloc_objects:count",
                                          "memory:alloc_space:bytes"));
  EXPECT_EQ(sent(), 2u);  // window profiles, as for the Pyroscope sink
  EXPECT_EQ(push_sent(), 0u);
}

TEST(OtlpSinkTest, UnreachableEndpointSpoolsAndTheNextSinkDeliversAll) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  const std::string spool = MakeTempDir("otlp_spool");
  OtlpSinkOptions options = Options(*receiver);
  options.queue.spool_dir = spool;
  ASSERT_TRUE(receiver->Down().ok());
  {
    auto sink = MakeSink(options);
    ASSERT_NE(sink, nullptr);
    for (int i = 4; i >= 1; --i)
      Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(i));
    // Persisted counts as flushed: everything is in the disk spool.
    ASSERT_TRUE(sink->Flush(Deadline(10)).ok());
    EXPECT_EQ(CountSpoolFiles(spool), 4);
  }
  EXPECT_TRUE(Accepted(*receiver).empty());
  ASSERT_TRUE(receiver->Up().ok());
  auto sink = MakeSink(options);  // a restarted collector
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(
      WaitFor([&] { return Accepted(*receiver).size() >= 4; }, kWaitMs));
  ASSERT_TRUE(sink->Flush(Deadline(10)).ok());
  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 4u);
  for (int i = 0; i < 4; ++i) {  // oldest first, each once
    EXPECT_EQ(accepted[i].time_nanos, AlignedWindowStartNs(4 - i));
  }
  EXPECT_EQ(CountSpoolFiles(spool), 0);
}

TEST(OtlpSinkTest, RefusalsAreRetriedAndRejectionsCounted) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  CounterDelta retries("ringprof_otlp_upload_retries_total");
  CounterDelta failed("ringprof_otlp_profiles_failed_total");
  auto sink = MakeSink(Options(*receiver));
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(receiver->Fault(R"({"status": 503, "count": 2})").ok());
  Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(3));
  ASSERT_TRUE(
      WaitFor([&] { return Accepted(*receiver).size() == 1; }, kWaitMs));
  EXPECT_EQ(retries(), 2u);

  ASSERT_TRUE(receiver->Fault(R"({"status": 400, "count": 1})").ok());
  Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(2));
  Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(1));
  ASSERT_TRUE(sink->Flush(Deadline(20)).ok());
  EXPECT_EQ(failed(), 1u);
  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 2u);
  EXPECT_EQ(accepted[1].time_nanos, AlignedWindowStartNs(1));
}

TEST(OtlpSinkTest, UncompressedAndWithoutPidByDefault) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  OtlpSinkOptions options = Options(*receiver);
  options.queue.upload.gzip_body = false;
  options.process_pid = OtlpSinkOptions().process_pid;
  auto sink = MakeSink(options);
  ASSERT_NE(sink, nullptr);
  Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(1));
  ASSERT_TRUE(sink->Flush(Deadline(20)).ok());
  const std::vector<AcceptedProfile> accepted = Accepted(*receiver);
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_FALSE(accepted[0].gzipped);
  EXPECT_EQ(accepted[0].labels.count("process.pid"), 0u);
}

TEST(OtlpSinkTest, PartialSuccessCountsAsFailedToo) {
  auto receiver = StartReceiver();
  ASSERT_NE(receiver, nullptr);
  CounterDelta sent("ringprof_otlp_profiles_sent_total");
  CounterDelta failed("ringprof_otlp_profiles_failed_total");
  auto sink = MakeSink(Options(*receiver));
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(receiver
                  ->Fault(R"({"partial_success": {"rejected_profiles": 1,
                              "error_message": "too many samples"}})")
                  .ok());
  Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(2));
  Submit(*sink, ProfileKind::kCpu, AlignedWindowStartNs(1));
  ASSERT_TRUE(sink->Flush(Deadline(20)).ok());
  EXPECT_EQ(sent(), 2u);
  EXPECT_EQ(failed(), 1u);  // the first answer only
}

TEST(PartialRejection, ReadsTheResponse) {
  ::opentelemetry::proto::collector::profiles::v1development::
      ExportProfilesServiceResponse response;
  EXPECT_EQ(PartialRejection(response.SerializeAsString()), "");
  response.mutable_partial_success()->set_error_message("just a warning");
  EXPECT_EQ(PartialRejection(response.SerializeAsString()), "");
  response.mutable_partial_success()->set_rejected_profiles(2);
  response.mutable_partial_success()->set_error_message("bad\nstack");
  EXPECT_EQ(PartialRejection(response.SerializeAsString()),
            "2 of its OTLP profiles rejected (bad stack)");
  EXPECT_EQ(PartialRejection("not a protobuf \xff\xff"), "");
}

TEST(UuidBytes, SixteenBytesOrNothing) {
  EXPECT_EQ(UuidBytes("00112233-4455-6677-8899-aabbccddeeff"),
            std::string("\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc"
                        "\xdd\xee\xff",
                        16));
  EXPECT_EQ(UuidBytes("not-a-uuid"), "");
  EXPECT_EQ(UuidBytes("00112233-4455-6677-8899-aabbccddeefg"), "");
}

}  // namespace
}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
