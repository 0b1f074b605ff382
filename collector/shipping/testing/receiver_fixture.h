// Test fixture: runs tests/pyroscope_receiver/receiver.py as a subprocess
// and drives its control endpoint (faults, down/up, what it accepted).
//
// Thread-compatible. Needs the receiver and protos in the test's runfiles
// (data = ["//tests/pyroscope_receiver"]).
#ifndef RINGPROF_COLLECTOR_SHIPPING_TESTING_RECEIVER_FIXTURE_H_
#define RINGPROF_COLLECTOR_SHIPPING_TESTING_RECEIVER_FIXTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace testing {

// One profile the receiver accepted (see receiver.py for the fields).
struct AcceptedProfile {
  std::map<std::string, std::string> labels;         // as sent
  std::map<std::string, std::string> stored_labels;  // as Pyroscope stores
  int64_t uncompressed_size = 0;
  std::string id;
  std::string tenant;
  std::string api;  // "push" or "ingest"
  std::vector<std::string> sample_types;
  std::string period_type;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  int64_t num_samples = 0;
  int64_t received_ns = 0;
  int64_t from_ns = 0;   // legacy ingest only
  int64_t until_ns = 0;  // legacy ingest only
  bool gzipped = false;
};

struct RejectedRequest {
  int status = 0;
  std::string message;
  std::string id;  // for injected faults on push requests
  bool fault = false;
  int64_t received_ns = 0;
};

struct ReceiverStats {
  int64_t accepted = 0;
  int64_t rejected = 0;
  int64_t requests = 0;
};

class Receiver {
 public:
  // Starts the receiver with extra command-line flags and waits (≤ 30 s)
  // until it listens.
  static absl::StatusOr<std::unique_ptr<Receiver>> Start(
      const std::vector<std::string>& args = {});
  ~Receiver();  // kills the process

  const std::string& url() const { return url_; }

  absl::Status Down();
  absl::Status Up();
  // `fault_json`: {"status": 429, "retry_after": 1, "count": 2,
  // "delay_ms": 0, "message": "..."}.
  absl::Status Fault(const std::string& fault_json);

  absl::StatusOr<std::vector<AcceptedProfile>> Accepted();
  absl::StatusOr<std::vector<RejectedRequest>> Rejected();
  absl::StatusOr<ReceiverStats> Stats();

 private:
  Receiver() = default;
  absl::StatusOr<std::string> Control(const std::string& method,
                                      const std::string& path,
                                      const std::string& body);
  pid_t pid_ = -1;
  std::string url_;
  std::string control_url_;
  std::string dir_;
};

// Polls `done` every 20 ms until it returns true or `timeout_ms` passes;
// returns its last value. The bounded wait tests use instead of sleeps.
bool WaitFor(const std::function<bool()>& done, int64_t timeout_ms);

// How much a registered counter (collector/base/metrics.h) grew since
// construction: tests look at their own deltas.
class CounterDelta {
 public:
  explicit CounterDelta(std::string name)
      : name_(std::move(name)), start_(Value()) {}
  uint64_t operator()() const { return Value() - start_; }

 private:
  uint64_t Value() const {
    return Metrics::Get().GetCounter(name_, "").value();
  }
  std::string name_;
  uint64_t start_;
};

// A fresh empty directory under TEST_TMPDIR.
std::string MakeTempDir(const std::string& prefix);
// Number of spool files (*.rpspool) in `dir`.
int CountSpoolFiles(const std::string& dir);

}  // namespace testing
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_TESTING_RECEIVER_FIXTURE_H_
