#include "collector/shipping/histogram.h"

#include <cstdio>

namespace ringprof {
namespace collector {
namespace shipping {

Histogram::Histogram(const std::string& name, const std::string& help,
                     std::vector<double> bounds)
    : bounds_(std::move(bounds)) {
  Metrics& m = Metrics::Get();
  for (double bound : bounds_) {
    char le[32];
    std::snprintf(le, sizeof(le), "%g", bound);
    buckets_.push_back(
        &m.GetCounter(name + "_bucket{le=\"" + le + "\"}", help));
  }
  buckets_.push_back(&m.GetCounter(name + "_bucket{le=\"+Inf\"}", help));
  sum_ = &m.GetGauge(name + "_sum", help);
  count_ = &m.GetCounter(name + "_count", help);
}

void Histogram::Observe(double value) {
  // Buckets are cumulative: every bucket whose bound is >= value.
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) buckets_[i]->Add(1);
  }
  buckets_.back()->Add(1);
  double sum = sum_value_.load(std::memory_order_relaxed);
  while (!sum_value_.compare_exchange_weak(sum, sum + value,
                                           std::memory_order_relaxed)) {
  }
  sum_->Set(sum + value);
  count_->Add(1);
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
