// UploadPacer: keeps the collector's uploads under Pyroscope's per-tenant
// ingestion rate instead of sending until the server answers 429.
//
// Pyroscope's distributor charges every profile its label bytes plus its
// uncompressed size against a token bucket per tenant: ingestion_rate_mb
// (4 MiB/s) sustained, ingestion_burst_size_mb (2 MiB) burst
// (pkg/distributor/distributor.go rateLimit, pkg/validation/limits.go).
// One collector ships the profiles of every process it follows; at the end
// of a window they are all ready at once. The pacer is the same bucket on
// the client: a profile is sent when the bucket holds its cost, so the
// collector's own traffic never exceeds the rate (several collectors of
// one tenant share the server's bucket: give each a share of the rate).
//
// A cost above the burst is let through when the bucket is full (the debt
// is paid before the next one), so a profile is never held forever.
//
// Thread-safety: not thread-safe (the upload thread owns it). Allocates
// nothing.
#ifndef RINGPROF_COLLECTOR_SHIPPING_UPLOAD_PACER_H_
#define RINGPROF_COLLECTOR_SHIPPING_UPLOAD_PACER_H_

#include <cstddef>
#include <cstdint>

namespace ringprof {
namespace collector {
namespace shipping {

class UploadPacer {
 public:
  // `bytes_per_second` 0 turns pacing off. The bucket starts full.
  UploadPacer(uint64_t bytes_per_second, uint64_t burst_bytes);

  // 0 when `cost` bytes may be sent at `now_ns` (monotonic; the cost is
  // taken from the bucket), else the nanoseconds to wait before asking
  // again (nothing taken).
  int64_t Reserve(size_t cost, int64_t now_ns);

 private:
  void Refill(int64_t now_ns);

  const double rate_per_ns_;
  const double burst_;
  double tokens_;
  int64_t last_ns_ = -1;
};

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_UPLOAD_PACER_H_
