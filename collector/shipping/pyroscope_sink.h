// PyroscopeSink: ships WindowProfiles to Grafana Pyroscope without losing
// them when the server is away.
//
// Submit validates nothing and never blocks on the network: it hands the
// profile to a bounded inbox and returns. One upload thread then, per
// profile: builds the series labels (labels.h), checks labels and pprof
// against Pyroscope's rules (invalid → counted, logged, never sent; already
// outside the ingestion window → counted as expired), and uploads it
// (http_uploader.h).
//
// Failure handling:
//  - A rejection retrying cannot fix (4xx other than 408/429) drops that
//    profile; it is counted and logged with the server's message, at most
//    once a minute per status.
//  - The server is away (connection refused, DNS, TLS, timeout, 502, 503,
//    504): the profile and everything queued after it go to the backlog (a
//    disk spool when a directory is configured, else memory) and uploads
//    pause: exponential backoff with jitter, or the server's Retry-After,
//    whichever is longer, never more than max_backoff_ms. While the backlog
//    is not empty new profiles go behind it. Replay sends the oldest first
//    and skips (counts as expired) those whose time_nanos would be outside
//    Pyroscope's ingestion window by the time they arrive.
//  - The server answered this profile with another retryable status (408,
//    429, 500...): the profile counts an attempt and goes to the back of
//    the backlog, so later profiles go ahead after one pause (that
//    profile's own backoff: it doubles with its attempts, not with the
//    refusals of other profiles); after
//    max_attempts it is given up (counted as failed, logged with the
//    server's message). One bad profile never holds the queue.
//  - Uploads are paced to the server's sustained ingestion rate
//    (upload_pacer.h): when every process's profile of a window is ready
//    at once they go out at upload_bytes_per_second after the burst,
//    instead of being answered 429 and retried.
//  - Before queueing, a profile whose request would exceed
//    max_request_bytes (Pyroscope's ingestion burst, see
//    collector/pprof/request_budget.h)
//    is trimmed to fit.
//  - The backlog is bounded in bytes; when full the oldest are dropped and
//    counted. A disk spool left by an earlier run is replayed on start.
//  - Delivery is at-least-once: a request that timed out may have been
//    ingested. Its retry carries the same RawSample.ID, but Pyroscope
//    replaces that ID with its own, so such a profile is stored twice.
//
// Thread-safety: Submit and Flush from one thread (the collector's
// processing thread), per ProfileSink; all other work happens on the upload
// thread. Destruction stops the upload thread promptly (an in-flight request
// is aborted) and spools whatever is still queued.
#ifndef RINGPROF_COLLECTOR_SHIPPING_PYROSCOPE_SINK_H_
#define RINGPROF_COLLECTOR_SHIPPING_PYROSCOPE_SINK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/base/clock.h"
#include "collector/base/log.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/shipping/backlog.h"
#include "collector/shipping/http_uploader.h"
#include "collector/shipping/labels.h"
#include "collector/shipping/upload_pacer.h"
#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {
namespace shipping {

// Turns a validated profile into the request body the record carries
// (SpoolRecord.body), for a sink that speaks another protocol through this
// one's queue, spool and retries (the OTLP sink, collector/otlp). `labels`
// are the profile's series labels, `pprof` its parsed payload, `id` the
// record's UUID (stable across retries). An error counts the profile as
// invalid.
using BodyEncoder = std::function<absl::StatusOr<std::string>(
    const WindowProfile& profile, const Labels& labels,
    const perftools::profiles::Profile& pprof, const std::string& id)>;

struct PyroscopeSinkOptions {
  UploaderOptions upload;
  SeriesLabelConfig labels;
  // Disk spool directory; empty keeps the backlog in memory.
  std::string spool_dir;
  uint64_t spool_max_bytes = 256ull << 20;
  // Profiles waiting for the upload thread; beyond this Submit drops the
  // oldest (counted): the upload thread is stuck on disk I/O.
  size_t inbox_max_profiles = 4096;
  int64_t initial_backoff_ms = 1000;
  // Also the cap on a server's Retry-After.
  int64_t max_backoff_ms = 60000;
  // Uploads of one profile the server may answer with a retryable status
  // before the profile is given up.
  int max_attempts = 5;
  // Bound on one request as Pyroscope's rate limiter counts it (labels +
  // uncompressed pprof): its default ingestion_burst_size_mb.
  size_t max_request_bytes = size_t{2} << 20;
  // Sustained upload rate (labels + uncompressed pprof per second, as the
  // server counts it; its ingestion_rate_mb, default 4 MiB/s); the burst
  // is max_request_bytes. 0: not paced.
  uint64_t upload_bytes_per_second = uint64_t{4} << 20;
  PyroscopeLimits limits;
  // Unset: Pyroscope's Push (or /ingest) request, made at upload time.
  BodyEncoder encode_body;
  // With encode_body: reads the body of a 2xx answer; a non-empty result
  // says the server refused part of the request for good (OTLP's partial
  // success): the profile counts as sent and as failed, and the result is
  // logged.
  std::function<std::string(const std::string& response_body)> check_response;
  // Metric names are this + "profiles_sent_total" etc.; the help of the
  // metrics and the log lines name `server_name`.
  std::string metric_prefix = "ringprof_";
  std::string server_name = "Pyroscope";
  // A backlog profile is sent only if it is still this far inside the
  // ingestion window (transit time, clock skew).
  int64_t expiry_margin_ns = int64_t{60} * 1000000000;
};

struct ShippingMetrics;

class PyroscopeSink final : public ProfileSink {
 public:
  // Opens the backlog (InvalidArgument/FailedPrecondition when the spool
  // directory is unusable or locked by another collector) and starts the
  // upload thread, which replays any existing spool first.
  static absl::StatusOr<std::unique_ptr<PyroscopeSink>> Create(
      PyroscopeSinkOptions options);
  ~PyroscopeSink() override;

  void Submit(WindowProfile profile) override;
  // Returns OK once every submitted profile was sent, rejected, or is in a
  // persistent spool; DeadlineExceeded (with counts) if that did not happen
  // by the deadline. An upload in flight is aborted shortly before the
  // deadline so its profile can still be spooled.
  absl::Status Flush(int64_t deadline_monotonic_ns) override;

  // Profiles submitted but not yet sent, rejected, expired or dropped:
  // inbox + memory queue + backlog.
  size_t OutstandingForTest();

 private:
  PyroscopeSink(PyroscopeSinkOptions options,
                std::unique_ptr<HttpUploader> uploader,
                std::unique_ptr<Backlog> backlog, ShippingMetrics* metrics);
  ShippingMetrics& M() const { return *metrics_; }

  void Run();
  // Labels + validation; false when the profile is invalid or expired.
  bool Prepare(WindowProfile profile, SpoolRecord* record);
  // `pprof` (the pprof of `profile`), or a copy trimmed to the request
  // budget (collector/pprof/request_budget.h); an error when it cannot be.
  absl::StatusOr<std::shared_ptr<const perftools::profiles::Profile>>
  FitRequestBudget(const Labels& series,
                   std::shared_ptr<const perftools::profiles::Profile> pprof,
                   const WindowProfile& profile);
  // `pprof`, or a copy without the sample labels that would take a series
  // past Pyroscope's 30 label names (collector/pprof/sample_labels.h).
  std::shared_ptr<const perftools::profiles::Profile> FitPromotedLabels(
      const Labels& series,
      std::shared_ptr<const perftools::profiles::Profile> pprof,
      const WindowProfile& profile);
  void ToBacklog(const SpoolRecord& record);
  void MovePendingToBacklog();
  bool Expired(const SpoolRecord& record, int64_t now_unix_ns) const;
  // Uploads the oldest outstanding profile; returns false after a retryable
  // failure (backoff set).
  bool SendOldest(bool from_backlog);
  // The server answered `record` (the queue's front) with a retryable
  // status: one more attempt counted, then given up or queued last.
  bool RetryProfileLater(const SpoolRecord& record, bool from_backlog,
                         const UploadResult& result, const std::string& what);
  // Grows the backoff and sets retry_at_ns_; returns the wait in ms.
  int64_t Backoff(int64_t retry_after_ms);
  // The pause after a profile's own refusal: initial_backoff_ms doubled per
  // earlier attempt of that profile (jittered, Retry-After honoured, capped).
  int64_t ProfilePause(int attempts, int64_t retry_after_ms);
  void PublishGauges();
  // Per-window outcome counts, logged as one info line per window once
  // everything submitted so far is settled (sent, rejected, expired).
  struct WindowTally {
    int64_t from_unix_ns = 0;
    int sent = 0, spooled = 0, rejected = 0, invalid = 0, expired = 0;
    int64_t bytes = 0;
  };
  WindowTally& Tally(int64_t from_unix_ns, int64_t until_unix_ns);
  // Logs and forgets the tallies of windows ending before `until_unix_ns`
  // (a later window has started, so they are complete).
  void LogWindowSummaries(int64_t until_unix_ns = INT64_MAX);
  // With mu_ held: when the inbox and memory queue are empty and the
  // backlog is persistent or empty, marks flush `flush_target` done and, if
  // no newer flush is pending, lifts its abort time (returns true then).
  bool CompleteFlushIfCaughtUp(uint64_t flush_target);

  const PyroscopeSinkOptions options_;
  ShippingMetrics* const metrics_;  // shared by the sinks of one prefix
  std::unique_ptr<HttpUploader> uploader_;
  RateLimitedLog log_;

  std::mutex mu_;
  std::condition_variable wake_;     // upload thread: work, stop or flush
  std::condition_variable idle_;     // Flush: the upload thread caught up
  std::deque<WindowProfile> inbox_;  // guarded by mu_
  bool stop_ = false;                // guarded by mu_
  uint64_t flush_requested_ = 0;     // guarded by mu_
  uint64_t flush_done_ = 0;          // guarded by mu_
  size_t outstanding_ = 0;           // guarded by mu_; set by upload thread

  // When an in-flight upload must give up (CLOCK_MONOTONIC ns).
  std::atomic<int64_t> abort_at_ns_{INT64_MAX};

  // Upload thread only.
  std::unique_ptr<Backlog> backlog_;
  std::deque<SpoolRecord> pending_;  // validated, newer than the backlog
  int64_t retry_at_ns_ = 0;          // monotonic; 0 when healthy
  UploadPacer pacer_;
  int64_t paced_until_ns_ = 0;  // monotonic; the pacer's next send time
  int64_t backoff_ms_ = 0;
  bool in_outage_ = false;
  std::map<int64_t, WindowTally> tallies_;  // by until_unix_ns
  int64_t latest_until_ns_ = 0;

  std::thread thread_;
};

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_PYROSCOPE_SINK_H_
