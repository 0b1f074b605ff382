#include "collector/shipping/pyroscope_sink.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "collector/base/metrics.h"
#include "collector/pprof/request_budget.h"
#include "collector/pprof/sample_labels.h"
#include "collector/shipping/codec.h"
#include "collector/shipping/histogram.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

constexpr int64_t kNsPerMs = 1000000;
constexpr int64_t kLogInterval = int64_t{60} * 1000000000;

}  // namespace

// One set per sink kind: the Pyroscope sink's names start "ringprof_", the
// OTLP sink's "ringprof_otlp_" (PyroscopeSinkOptions::metric_prefix).
struct ShippingMetrics {
  ShippingMetrics(std::string name_prefix, std::string server)
      : prefix(std::move(name_prefix)),
        help_prefix(server == "Pyroscope" ? ""
                                          : absl::StrCat(server, " sink: ")) {}
  std::string Name(const char* name) const { return prefix + name; }
  std::string Help(const char* help) const { return help_prefix + help; }

  const std::string prefix;
  const std::string help_prefix;
  Counter& submitted =
      Metrics::Get().GetCounter(Name("profiles_submitted_total"),
                                Help("Window profiles handed to the sink."));
  Counter& sent = Metrics::Get().GetCounter(
      Name("profiles_sent_total"), Help("Profiles the server accepted."));
  Counter& failed = Metrics::Get().GetCounter(
      Name("profiles_failed_total"),
      Help("Profiles the server refused for good: a status retrying cannot "
           "fix, or a retryable answer to every allowed attempt."));
  Counter& trimmed = Metrics::Get().GetCounter(
      Name("profiles_trimmed_total"),
      Help("Profiles whose smallest stacks were folded into [trimmed] to keep "
           "the request under the ingestion burst (--max-request-bytes)."));
  Counter& labels_dropped = Metrics::Get().GetCounter(
      Name("labels_dropped_total"),
      Help("Workload labels left out of a series (invalid name, a name the "
           "collector owns, already set, empty value, or no room left), and "
           "sample label names removed beyond Pyroscope's 30 label names."));
  Counter& invalid = Metrics::Get().GetCounter(
      Name("profiles_invalid_total"),
      Help("Profiles not sent because they break Pyroscope's validation "
           "rules."));
  Counter& spooled = Metrics::Get().GetCounter(
      Name("profiles_spooled_total"),
      Help("Profiles written to the backlog after an upload could not be "
           "made."));
  Counter& expired = Metrics::Get().GetCounter(
      Name("profiles_expired_total"),
      Help("Profiles discarded because they fell out of Pyroscope's "
           "ingestion window before they could be sent."));
  Counter& dropped = Metrics::Get().GetCounter(
      Name("profiles_dropped_total"),
      Help("Profiles discarded because the backlog or inbox bound was "
           "reached, or a spool file was unreadable."));
  Counter& retries = Metrics::Get().GetCounter(
      Name("upload_retries_total"),
      Help("Uploads that failed in a retryable way (5xx, 408, 429, "
           "network)."));
  Counter& upload_bytes = Metrics::Get().GetCounter(
      Name("upload_bytes_total"), Help("Request body bytes of sent profiles."));
  Gauge& backlog_bytes = Metrics::Get().GetGauge(
      Name("spool_bytes"),
      Help("Bytes in the backlog (disk spool or memory)."));
  Gauge& backlog_profiles = Metrics::Get().GetGauge(
      Name("spool_profiles"), Help("Profiles in the backlog."));
  Histogram upload_seconds{
      Name("upload_duration_seconds"),
      Help("Duration of upload requests, any outcome."),
      {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}};
};

ShippingMetrics* MetricsFor(const std::string& prefix,
                            const std::string& server) {
  static std::mutex mu;
  static auto* const by_prefix =
      new std::map<std::string, std::unique_ptr<ShippingMetrics>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<ShippingMetrics>& m = (*by_prefix)[prefix];
  if (m == nullptr) m = std::make_unique<ShippingMetrics>(prefix, server);
  return m.get();
}

namespace {

std::string Describe(const SpoolRecord& record) {
  std::string service, name;
  for (const auto& label : record.labels()) {
    if (label.name() == "service_name") service = label.value();
    if (label.name() == "__name__") name = label.value();
  }
  return absl::StrCat(name, "/", service);
}

int64_t Jittered(int64_t backoff_ms) {
  // "Equal jitter": half fixed, half random, so retries of many collectors
  // spread out but none retries sooner than half the backoff.
  thread_local std::mt19937_64 engine{std::random_device{}()};
  std::uniform_int_distribution<int64_t> dist(0, backoff_ms / 2);
  return backoff_ms - backoff_ms / 2 + dist(engine);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PyroscopeSink>> PyroscopeSink::Create(
    PyroscopeSinkOptions options) {
  // Registers every metric up front so /metrics shows zeros.
  ShippingMetrics* metrics =
      MetricsFor(options.metric_prefix, options.server_name);
  absl::StatusOr<std::unique_ptr<HttpUploader>> uploader =
      HttpUploader::Create(options.upload);
  if (!uploader.ok()) return uploader.status();
  std::unique_ptr<Backlog> backlog;
  if (options.spool_dir.empty()) {
    backlog = std::make_unique<MemoryBacklog>(options.spool_max_bytes);
  } else {
    absl::StatusOr<std::unique_ptr<DiskSpool>> spool =
        DiskSpool::Open(options.spool_dir, options.spool_max_bytes);
    if (!spool.ok()) return spool.status();
    if (!(*spool)->empty()) {
      Log(LogLevel::kInfo,
          absl::StrCat("replaying ", (*spool)->size(), " spooled profiles (",
                       (*spool)->bytes(), " bytes) from ", options.spool_dir));
    }
    backlog = std::move(*spool);
  }
  return std::unique_ptr<PyroscopeSink>(new PyroscopeSink(
      std::move(options), std::move(*uploader), std::move(backlog), metrics));
}

PyroscopeSink::PyroscopeSink(PyroscopeSinkOptions options,
                             std::unique_ptr<HttpUploader> uploader,
                             std::unique_ptr<Backlog> backlog,
                             ShippingMetrics* metrics)
    : options_(std::move(options)),
      metrics_(metrics),
      uploader_(std::move(uploader)),
      log_(kLogInterval),
      outstanding_(backlog->size()),
      backlog_(std::move(backlog)),
      pacer_(options_.upload_bytes_per_second, options_.max_request_bytes) {
  PublishGauges();
  thread_ = std::thread([this] { Run(); });
}

PyroscopeSink::~PyroscopeSink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  abort_at_ns_.store(0, std::memory_order_relaxed);
  wake_.notify_all();
  thread_.join();
}

void PyroscopeSink::Submit(WindowProfile profile) {
  M().submitted.Add(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (inbox_.size() >= options_.inbox_max_profiles) {
      inbox_.pop_front();
      M().dropped.Add(1);
      log_.Log(LogLevel::kError, "inbox",
               "upload thread is behind; dropped the oldest queued profile");
    }
    inbox_.push_back(std::move(profile));
  }
  wake_.notify_one();
}

absl::Status PyroscopeSink::Flush(int64_t deadline_monotonic_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = ++flush_requested_;
  // Leave time to spool an upload aborted at the deadline.
  const int64_t now = MonotonicNowNs();
  const int64_t margin = std::min<int64_t>(
      500 * kNsPerMs, std::max<int64_t>(0, deadline_monotonic_ns - now) / 4);
  abort_at_ns_.store(deadline_monotonic_ns - margin, std::memory_order_relaxed);
  wake_.notify_all();
  const auto deadline = std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(deadline_monotonic_ns));
  idle_.wait_until(lock, deadline, [&] { return flush_done_ >= ticket; });
  if (flush_done_ >= ticket) return absl::OkStatus();
  // Uploads may resume if the caller keeps the sink.
  if (!stop_) abort_at_ns_.store(INT64_MAX, std::memory_order_relaxed);
  return absl::DeadlineExceededError(
      absl::StrCat(outstanding_ + inbox_.size(),
                   " profiles neither sent nor persisted by the deadline",
                   backlog_->persistent() ? "" : " (no spool directory)"));
}

size_t PyroscopeSink::OutstandingForTest() {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_ + inbox_.size();
}

bool PyroscopeSink::Prepare(WindowProfile profile, SpoolRecord* record) {
  SeriesLabels series = BuildSeriesLabels(options_.labels, profile);
  if (!series.dropped.empty()) {
    M().labels_dropped.Add(series.dropped.size());
    std::string names;
    for (const DroppedLabel& d : series.dropped) {
      absl::StrAppend(&names, names.empty() ? "" : "; ", "\"", d.name,
                      "\": ", d.reason);
    }
    log_.Log(
        LogLevel::kWarning, "dropped-labels",
        absl::StrCat("left ", series.dropped.size(), " workload labels of pid ",
                     profile.pid, " out of its series (", names, ")"));
  }
  const Labels& labels = series.labels;
  auto invalid = [&](absl::string_view key, absl::string_view why) {
    M().invalid.Add(1);
    ++Tally(profile.from_unix_ns, profile.until_unix_ns).invalid;
    log_.Log(LogLevel::kError, std::string(key),
             absl::StrCat("not sending a ", KindName(profile.kind),
                          " profile of pid ", profile.pid, ": ", why));
    return false;
  };
  if (absl::Status s = ValidateSeriesLabels(labels); !s.ok()) {
    return invalid("invalid-labels", s.message());
  }
  absl::StatusOr<std::shared_ptr<const perftools::profiles::Profile>> fitted =
      FitRequestBudget(labels, std::move(profile.profile), profile);
  if (!fitted.ok()) return invalid("over-budget", fitted.status().message());
  std::shared_ptr<const perftools::profiles::Profile> pprof =
      *std::move(fitted);
  absl::Status valid = ValidatePprof(*pprof, options_.limits, UnixNowNs());
  if (!valid.ok()) {
    if (!absl::IsOutOfRange(valid)) {
      return invalid("invalid-pprof", valid.message());
    }
    M().expired.Add(1);
    ++Tally(profile.from_unix_ns, profile.until_unix_ns).expired;
    log_.Log(
        LogLevel::kWarning, "expired",
        absl::StrCat("not sending a ", KindName(profile.kind),
                     " profile of pid ", profile.pid, ": ", valid.message()));
    return false;
  }
  pprof = FitPromotedLabels(labels, std::move(pprof), profile);
  for (auto& [name, value] : labels) {
    types::v1::LabelPair* pair = record->add_labels();
    pair->set_name(name);
    pair->set_value(value);
  }
  record->set_id(NewUuidV4());
  if (options_.encode_body) {
    absl::StatusOr<std::string> body =
        options_.encode_body(profile, labels, *pprof, record->id());
    if (!body.ok()) return invalid("encode", body.status().message());
    record->set_body(std::move(*body));
  } else {
    record->set_pprof(pprof->SerializeAsString());
  }
  record->set_from_unix_ns(profile.from_unix_ns);
  record->set_until_unix_ns(profile.until_unix_ns);
  record->set_time_nanos(pprof->time_nanos());
  return true;
}

absl::StatusOr<std::shared_ptr<const perftools::profiles::Profile>>
PyroscopeSink::FitRequestBudget(
    const Labels& series,
    std::shared_ptr<const perftools::profiles::Profile> pprof,
    const WindowProfile& profile) {
  const size_t label_bytes = RequestCost(series, 0);
  const size_t bytes = pprof->ByteSizeLong();
  if (RequestCost(series, bytes) <= options_.max_request_bytes) return pprof;
  if (label_bytes >= options_.max_request_bytes) {
    return absl::ResourceExhaustedError(
        "its labels alone exceed the request budget");
  }
  absl::StatusOr<perftools::profiles::Profile> fitted =
      FitProfile(*pprof, options_.max_request_bytes - label_bytes);
  if (!fitted.ok()) return fitted.status();
  pprof =
      std::make_shared<const perftools::profiles::Profile>(*std::move(fitted));
  M().trimmed.Add(1);
  log_.Log(
      LogLevel::kInfo, "trimmed",
      absl::StrCat("trimmed a ", KindName(profile.kind), " profile of pid ",
                   profile.pid, " from ", bytes, " to ", pprof->ByteSizeLong(),
                   " bytes to stay under the request budget of ",
                   options_.max_request_bytes,
                   " bytes (Pyroscope's ingestion burst)"));
  return pprof;
}

std::shared_ptr<const perftools::profiles::Profile>
PyroscopeSink::FitPromotedLabels(
    const Labels& series,
    std::shared_ptr<const perftools::profiles::Profile> pprof,
    const WindowProfile& profile) {
  if (SampleLabelsFit(*pprof, series, kMaxLabelsPerSeries)) return pprof;
  auto fitted = std::make_shared<perftools::profiles::Profile>(*pprof);
  const std::vector<std::string> removed =
      FitSampleLabels(series, kMaxLabelsPerSeries, fitted.get());
  M().labels_dropped.Add(removed.size());
  log_.Log(
      LogLevel::kWarning, "dropped-sample-labels",
      absl::StrCat("removed the sample labels ", absl::StrJoin(removed, ", "),
                   " from a ", KindName(profile.kind), " profile of pid ",
                   profile.pid, ": with its ", series.size(),
                   " series labels they exceed the ", kMaxLabelsPerSeries,
                   " label names Pyroscope allows (it makes every sample "
                   "label a series label)"));
  return fitted;
}

void PyroscopeSink::ToBacklog(const SpoolRecord& record) {
  absl::StatusOr<size_t> dropped = backlog_->Append(record);
  if (!dropped.ok()) {
    M().dropped.Add(1);
    log_.Log(LogLevel::kError, "spool-write",
             absl::StrCat("cannot spool a profile, dropped it: ",
                          dropped.status().message()));
    return;
  }
  M().spooled.Add(1);
  ++Tally(record.from_unix_ns(), record.until_unix_ns()).spooled;
  if (*dropped > 0) {
    M().dropped.Add(*dropped);
    log_.Log(
        LogLevel::kWarning, "spool-full",
        absl::StrCat("backlog reached its bound of ", options_.spool_max_bytes,
                     " bytes; dropped the ", *dropped, " oldest profiles"));
  }
}

void PyroscopeSink::MovePendingToBacklog() {
  for (const SpoolRecord& record : pending_) ToBacklog(record);
  pending_.clear();
}

bool PyroscopeSink::Expired(const SpoolRecord& record,
                            int64_t now_unix_ns) const {
  const int64_t t =
      record.time_nanos() != 0 ? record.time_nanos() : record.from_unix_ns();
  return t <
         now_unix_ns - options_.limits.max_age_ns + options_.expiry_margin_ns;
}

bool PyroscopeSink::SendOldest(bool from_backlog) {
  SpoolRecord backlog_record;
  const SpoolRecord* record;
  auto pop = [&] {
    if (from_backlog) {
      backlog_->PopFront();
    } else {
      pending_.pop_front();
    }
  };
  if (from_backlog) {
    absl::StatusOr<SpoolRecord> front = backlog_->Front();
    if (!front.ok()) {
      M().dropped.Add(1);
      log_.Log(LogLevel::kError, "spool-read",
               absl::StrCat("dropping an unreadable spool entry: ",
                            front.status().message()));
      backlog_->PopFront();
      return true;
    }
    backlog_record = std::move(*front);
    record = &backlog_record;
  } else {
    record = &pending_.front();
  }
  WindowTally& tally = Tally(record->from_unix_ns(), record->until_unix_ns());
  if (Expired(*record, UnixNowNs())) {
    M().expired.Add(1);
    ++tally.expired;
    log_.Log(LogLevel::kWarning, "expired",
             absl::StrCat("a ", Describe(*record),
                          " profile is too old for Pyroscope's ingestion "
                          "window; not sending it"));
    pop();
    return true;
  }

  // A prebuilt body (OTLP) stands in for the pprof it was made from.
  size_t cost = record->pprof().size() + record->body().size();
  for (const types::v1::LabelPair& l : record->labels()) {
    cost += l.name().size() + l.value().size();
  }
  const int64_t now = MonotonicNowNs();
  if (const int64_t wait = pacer_.Reserve(cost, now); wait > 0) {
    paced_until_ns_ = now + wait;
    return true;
  }
  const UploadResult result = uploader_->Upload(*record, &abort_at_ns_);
  const std::string what = Describe(*record);  // `record` may move below
  M().upload_seconds.Observe(static_cast<double>(result.duration_ns) / 1e9);
  switch (result.outcome) {
    case UploadResult::Outcome::kSent:
      M().sent.Add(1);
      M().upload_bytes.Add(static_cast<uint64_t>(result.request_bytes));
      ++tally.sent;
      tally.bytes += result.request_bytes;
      if (options_.check_response) {
        const std::string refused =
            options_.check_response(result.response_body);
        if (!refused.empty()) {
          M().failed.Add(1);
          log_.Log(
              LogLevel::kError, "partial",
              absl::StrCat(options_.server_name, " accepted only part of a ",
                           what, " profile: ", refused));
        }
      }
      if (LogEnabled(LogLevel::kDebug)) {
        Log(LogLevel::kDebug,
            absl::StrCat("sent ", Describe(*record), " [",
                         record->from_unix_ns(), ", ", record->until_unix_ns(),
                         ") ", result.request_bytes, " bytes in ",
                         result.duration_ns / kNsPerMs, " ms"));
      }
      pop();
      if (in_outage_) {
        Log(LogLevel::kInfo,
            absl::StrCat(options_.server_name, " is reachable again; ",
                         backlog_->size(), " spooled profiles left to replay"));
        in_outage_ = false;
      }
      backoff_ms_ = 0;
      retry_at_ns_ = 0;
      return true;
    case UploadResult::Outcome::kRejected:
      M().failed.Add(1);
      ++tally.rejected;
      log_.Log(LogLevel::kError, absl::StrCat("rejected-", result.http_status),
               absl::StrCat(options_.server_name, " rejected a ", what,
                            " profile (", result.message,
                            "); dropped it. Check the server address, "
                            "credentials and tenant."));
      pop();
      backoff_ms_ = 0;
      retry_at_ns_ = 0;
      return true;
    case UploadResult::Outcome::kRetryProfile:
      return RetryProfileLater(*record, from_backlog, result, what);
    case UploadResult::Outcome::kRetry:
      break;
  }
  M().retries.Add(1);
  if (!from_backlog) MovePendingToBacklog();
  const int64_t delay_ms = Backoff(result.retry_after_ms);
  const std::string message =
      absl::StrCat("upload of a ", what, " profile failed (", result.message,
                   "); keeping ", backlog_->size(), " profiles in the ",
                   backlog_->persistent() ? "spool" : "memory backlog",
                   ", retrying in ", delay_ms, " ms");
  if (!in_outage_) {
    Log(LogLevel::kWarning, message);
    in_outage_ = true;
  } else {
    log_.Log(LogLevel::kWarning, "retry", message);
  }
  return false;
}

int64_t PyroscopeSink::Backoff(int64_t retry_after_ms) {
  backoff_ms_ = backoff_ms_ == 0
                    ? options_.initial_backoff_ms
                    : std::min(backoff_ms_ * 2, options_.max_backoff_ms);
  // Retry-After is honoured, but a server asking for years gets a minute.
  const int64_t delay_ms = std::min(
      std::max(Jittered(backoff_ms_), retry_after_ms), options_.max_backoff_ms);
  retry_at_ns_ = MonotonicNowNs() + delay_ms * kNsPerMs;
  return delay_ms;
}

int64_t PyroscopeSink::ProfilePause(int attempts, int64_t retry_after_ms) {
  // The profile's own attempts set the pause, not the queue's history: a
  // run of refused profiles must not push the next good one further back.
  int64_t pause_ms = options_.initial_backoff_ms;
  for (int i = 1; i < attempts && pause_ms < options_.max_backoff_ms; ++i) {
    pause_ms *= 2;
  }
  pause_ms = std::min(pause_ms, options_.max_backoff_ms);
  const int64_t delay_ms = std::min(
      std::max(Jittered(pause_ms), retry_after_ms), options_.max_backoff_ms);
  retry_at_ns_ = MonotonicNowNs() + delay_ms * kNsPerMs;
  return delay_ms;
}

bool PyroscopeSink::RetryProfileLater(const SpoolRecord& record,
                                      bool from_backlog,
                                      const UploadResult& result,
                                      const std::string& what) {
  M().retries.Add(1);
  SpoolRecord again = record;  // `record` is the queue's front
  again.set_attempts(record.attempts() + 1);
  if (from_backlog) {
    backlog_->PopFront();
  } else {
    pending_.pop_front();
    MovePendingToBacklog();
  }
  if (static_cast<int>(again.attempts()) >= options_.max_attempts) {
    // Nothing of this profile is retried, so nothing waits for it: the
    // next profile is tried at once (a refusal of its own pauses it).
    retry_at_ns_ = 0;
    M().failed.Add(1);
    ++Tally(again.from_unix_ns(), again.until_unix_ns()).rejected;
    log_.Log(
        LogLevel::kError, absl::StrCat("gave-up-", result.http_status),
        absl::StrCat(options_.server_name, " answered a ", what, " profile ",
                     again.attempts(), " times with a retryable status (",
                     result.message, "); gave it up"));
    return false;
  }
  // Behind everything queued: the next profile goes first, after the wait.
  const int64_t delay_ms =
      ProfilePause(again.attempts(), result.retry_after_ms);
  ToBacklog(again);
  log_.Log(
      LogLevel::kWarning, absl::StrCat("retry-", result.http_status),
      absl::StrCat(options_.server_name, " answered a ", what, " profile with ",
                   result.message, " (attempt ", again.attempts(), " of ",
                   options_.max_attempts, "); it goes behind the ",
                   backlog_->size() - 1,
                   " other queued profiles, next upload in ", delay_ms, " ms"));
  return false;
}

void PyroscopeSink::PublishGauges() {
  M().backlog_bytes.Set(static_cast<double>(backlog_->bytes()));
  M().backlog_profiles.Set(static_cast<double>(backlog_->size()));
}

PyroscopeSink::WindowTally& PyroscopeSink::Tally(int64_t from_unix_ns,
                                                 int64_t until_unix_ns) {
  // Bounded: a long outage logs its oldest windows early rather than
  // keeping a tally per window forever.
  if (tallies_.size() >= 64 && tallies_.count(until_unix_ns) == 0) {
    LogWindowSummaries();
  }
  latest_until_ns_ = std::max(latest_until_ns_, until_unix_ns);
  WindowTally& tally = tallies_[until_unix_ns];
  tally.from_unix_ns = from_unix_ns;
  return tally;
}

void PyroscopeSink::LogWindowSummaries(int64_t until_unix_ns) {
  while (!tallies_.empty() && tallies_.begin()->first < until_unix_ns) {
    const int64_t until = tallies_.begin()->first;
    const WindowTally t = tallies_.begin()->second;
    tallies_.erase(tallies_.begin());
    std::string line = absl::StrCat(
        options_.server_name == "Pyroscope" ? "" : options_.server_name + " ",
        "window ",
        absl::FormatTime("%H:%M:%S", absl::FromUnixNanos(t.from_unix_ns),
                         absl::UTCTimeZone()),
        "+", (until - t.from_unix_ns) / 1000000000, "s UTC: ", t.sent,
        " profiles sent (", (t.bytes + 1023) / 1024, " KiB)");
    if (t.spooled > 0) absl::StrAppend(&line, ", ", t.spooled, " spooled");
    if (t.rejected > 0) absl::StrAppend(&line, ", ", t.rejected, " rejected");
    if (t.invalid > 0) absl::StrAppend(&line, ", ", t.invalid, " invalid");
    if (t.expired > 0) absl::StrAppend(&line, ", ", t.expired, " expired");
    Log(LogLevel::kInfo, line);
  }
}

bool PyroscopeSink::CompleteFlushIfCaughtUp(uint64_t flush_target) {
  if (flush_done_ >= flush_target || !inbox_.empty() || !pending_.empty() ||
      !(backlog_->persistent() || backlog_->empty())) {
    return false;
  }
  flush_done_ = flush_target;
  LogWindowSummaries();  // the flush ends the last window
  idle_.notify_all();
  if (flush_target != flush_requested_ || stop_) return false;
  abort_at_ns_.store(INT64_MAX, std::memory_order_relaxed);
  return true;
}

void PyroscopeSink::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::deque<WindowProfile> batch;
    batch.swap(inbox_);
    const bool stopping = stop_;
    const uint64_t flush_target = flush_requested_;
    lock.unlock();

    for (WindowProfile& profile : batch) {
      SpoolRecord record;
      if (!Prepare(std::move(profile), &record)) continue;
      if (!backlog_->empty() || retry_at_ns_ != 0 || stopping) {
        ToBacklog(record);
      } else {
        pending_.push_back(std::move(record));
      }
    }

    const int64_t now = MonotonicNowNs();
    const bool past_abort = now >= abort_at_ns_.load(std::memory_order_relaxed);
    if (stopping || past_abort) MovePendingToBacklog();
    const bool work_left = !pending_.empty() || !backlog_->empty();
    // After a retryable failure the backoff, else the pacer, says when.
    const int64_t send_at = std::max(retry_at_ns_, paced_until_ns_);
    const bool may_send = !stopping && !past_abort && now >= send_at;
    if (work_left && may_send) {
      SendOldest(/*from_backlog=*/!backlog_->empty());
      PublishGauges();
      lock.lock();
      outstanding_ = pending_.size() + backlog_->size();
      // A flush is satisfied once nothing is outside a persistent spool,
      // even while the spool is still being replayed.
      CompleteFlushIfCaughtUp(flush_target);
      continue;
    }
    PublishGauges();

    lock.lock();
    outstanding_ = pending_.size() + backlog_->size();
    if (inbox_.empty() && !work_left) LogWindowSummaries(latest_until_ns_);
    if (CompleteFlushIfCaughtUp(flush_target) && past_abort) {
      continue;  // uploads resume: the flush's abort time no longer applies
    }
    if (stopping) {
      LogWindowSummaries();
      break;
    }
    if (!inbox_.empty() || stop_ || flush_requested_ != flush_target) continue;
    auto woken = [&] {
      return stop_ || !inbox_.empty() || flush_requested_ != flush_target;
    };
    if (work_left && now < send_at && !past_abort) {
      wake_.wait_until(lock,
                       std::chrono::steady_clock::time_point(
                           std::chrono::nanoseconds(send_at)),
                       woken);
    } else {
      wake_.wait(lock, woken);
    }
  }
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
