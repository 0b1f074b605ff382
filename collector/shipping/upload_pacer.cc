#include "collector/shipping/upload_pacer.h"

#include <algorithm>
#include <cmath>

namespace ringprof {
namespace collector {
namespace shipping {

UploadPacer::UploadPacer(uint64_t bytes_per_second, uint64_t burst_bytes)
    : rate_per_ns_(static_cast<double>(bytes_per_second) / 1e9),
      burst_(static_cast<double>(std::max<uint64_t>(burst_bytes, 1))),
      tokens_(burst_) {}

void UploadPacer::Refill(int64_t now_ns) {
  if (last_ns_ >= 0 && now_ns > last_ns_) {
    tokens_ =
        std::min(burst_, tokens_ + static_cast<double>(now_ns - last_ns_) *
                                       rate_per_ns_);
  }
  if (now_ns > last_ns_) last_ns_ = now_ns;
}

int64_t UploadPacer::Reserve(size_t cost, int64_t now_ns) {
  if (rate_per_ns_ <= 0) return 0;
  Refill(now_ns);
  // Above the burst: wait for a full bucket, then go into debt.
  const double need = std::min(static_cast<double>(cost), burst_);
  if (tokens_ >= need) {
    tokens_ -= static_cast<double>(cost);
    return 0;
  }
  return std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil((need - tokens_) / rate_per_ns_)));
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
