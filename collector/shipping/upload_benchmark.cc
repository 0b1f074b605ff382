// Upload cost for a 10-process × 16-thread workload (tools/bench.d/upload):
//  - bytes per 10 s window on the wire (Push API, gzipped pprof), against
//    the uncompressed pprof bytes of the same window;
//  - collector CPU per upload (the sink's work: validation, labels, gzip,
//    request, curl) measured as process CPU time while the sink sends
//    windows to the local receiver, against the CPU of only encoding the
//    same profiles (validate, serialize, gzip, PushRequest), measured in
//    this run;
//  - the disk spool's zstd compression ratio on the same profiles, with
//    gzip's ratio on the same bytes for comparison.
// Prints one JSON object.
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collector/base/gzip.h"
#include "collector/base/metrics.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/shipping/backlog.h"
#include "collector/shipping/codec.h"
#include "collector/shipping/http_uploader.h"
#include "collector/shipping/pyroscope_sink.h"
#include "collector/shipping/testing/receiver_fixture.h"
#include "collector/shipping/testing/synthetic_profiles.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

constexpr int kProcesses = 10;
constexpr int kThreads = 16;
constexpr int kWindows = 12;
constexpr int64_t kSecond = 1000000000;

double ProcessCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// One window of the workload: per process a CPU and a memory profile whose
// stacks come from 16 threads (no per-thread labels: threads merge into
// the process's series).
std::vector<WindowProfile> Window(int64_t from) {
  std::vector<WindowProfile> out;
  for (int p = 0; p < kProcesses; ++p) {
    testing::SyntheticShape shape;
    shape.distinct_stacks = kThreads * 24;
    shape.stack_depth = 28;
    shape.functions = 600;
    shape.seed = static_cast<uint64_t>(from / kSecond);
    for (ProfileKind kind : {ProfileKind::kCpu, ProfileKind::kMemory}) {
      out.push_back(testing::MakeWindowProfile(
          kind, "bench", static_cast<uint32_t>(1000 + p), from,
          from + 10 * kSecond, shape));
    }
  }
  return out;
}

int Main() {
  std::vector<std::vector<WindowProfile>> windows;
  uint64_t pprof_bytes = 0;
  for (int w = kWindows; w >= 1; --w) {
    windows.push_back(Window(testing::AlignedWindowStartNs(w)));
    for (const auto& p : windows.back()) {
      pprof_bytes += p.profile->ByteSizeLong();
    }
  }
  const int uploads = kWindows * kProcesses * 2;

  // Baseline: encoding only.
  UploaderOptions encode_options;
  encode_options.server_url = "http://127.0.0.1:9";
  auto encoder = HttpUploader::Create(encode_options);
  if (!encoder.ok()) return 1;
  uint64_t encoded_bytes = 0;
  const double encode_start = ProcessCpuSeconds();
  for (const auto& window : windows) {
    for (const auto& p : window) {
      if (!ValidatePprof(*p.profile, {}, UnixNowNs()).ok()) return 2;
      SpoolRecord r;
      r.set_pprof(p.profile->SerializeAsString());
      r.set_id(NewUuidV4());
      encoded_bytes += (*encoder)->BuildBody(r).size();
    }
  }
  const double encode_cpu = ProcessCpuSeconds() - encode_start;

  // Uploads to the local receiver.
  // The client is measured, not a rate-limited server: no token bucket.
  auto receiver = testing::Receiver::Start({"--ingestion-rate-mb", "0"});
  if (!receiver.ok()) {
    std::fprintf(stderr, "%s\n", receiver.status().ToString().c_str());
    return 3;
  }
  PyroscopeSinkOptions options;
  options.upload.server_url = (*receiver)->url();
  options.upload_bytes_per_second = 0;  // the client's cost, not the pacing
  Counter& sent_bytes =
      Metrics::Get().GetCounter("ringprof_upload_bytes_total", "");
  auto sink = PyroscopeSink::Create(options);
  if (!sink.ok()) return 4;
  const uint64_t bytes_before = sent_bytes.value();
  const double upload_start = ProcessCpuSeconds();
  const int64_t wall_start = MonotonicNowNs();
  for (auto& window : windows) {
    for (auto p : window) (*sink)->Submit(std::move(p));
    // One window at a time, as the collector submits them.
    if (!(*sink)->Flush(MonotonicNowNs() + 60 * kSecond).ok()) return 5;
  }
  const double upload_cpu = ProcessCpuSeconds() - upload_start;
  const double upload_wall = (MonotonicNowNs() - wall_start) / 1e9;
  const uint64_t wire_bytes = sent_bytes.value() - bytes_before;
  auto accepted = (*receiver)->Stats();
  if (!accepted.ok() || accepted->accepted != uploads) return 6;
  sink->reset();

  // Spool compression.
  std::string dir = testing::MakeTempDir("bench_spool");
  auto spool = DiskSpool::Open(dir, uint64_t{1} << 34);
  if (!spool.ok()) return 7;
  uint64_t record_bytes = 0, gzip_bytes = 0;
  for (const auto& window : windows) {
    for (const auto& p : window) {
      SpoolRecord r;
      for (const auto& [k, v] : p.labels) {
        auto* l = r.add_labels();
        l->set_name(k);
        l->set_value(v);
      }
      r.set_pprof(p.profile->SerializeAsString());
      r.set_id(NewUuidV4());
      r.set_from_unix_ns(p.from_unix_ns);
      r.set_until_unix_ns(p.until_unix_ns);
      const std::string serialized = r.SerializeAsString();
      record_bytes += serialized.size();
      gzip_bytes += GzipCompress(serialized).size();
      if (!(*spool)->Append(r).ok()) return 8;
    }
  }
  const uint64_t spool_bytes = (*spool)->bytes();
  while (!(*spool)->empty()) (*spool)->PopFront();

  std::printf(
      "{\"processes\": %d, \"threads\": %d, \"windows\": %d, \"uploads\": %d,"
      " \"pprof_bytes_per_window\": %.0f, \"wire_bytes_per_window\": %.0f,"
      " \"encoded_bytes_per_window\": %.0f,"
      " \"upload_cpu_ms_per_upload\": %.3f, \"encode_cpu_ms_per_upload\": %.3f,"
      " \"upload_wall_ms_per_upload\": %.3f,"
      " \"spool_record_bytes\": %llu, \"spool_zstd_bytes\": %llu,"
      " \"spool_gzip_bytes\": %llu}\n",
      kProcesses, kThreads, kWindows, uploads,
      static_cast<double>(pprof_bytes) / kWindows,
      static_cast<double>(wire_bytes) / kWindows,
      static_cast<double>(encoded_bytes) / kWindows, 1e3 * upload_cpu / uploads,
      1e3 * encode_cpu / uploads, 1e3 * upload_wall / uploads,
      static_cast<unsigned long long>(record_bytes),
      static_cast<unsigned long long>(spool_bytes),
      static_cast<unsigned long long>(gzip_bytes));
  return 0;
}

}  // namespace
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

int main() { return ringprof::collector::shipping::Main(); }
