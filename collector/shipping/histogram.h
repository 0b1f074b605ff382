// A Prometheus histogram built from Metrics counters and a gauge, using the
// naming convention collector/base/metrics.cc renders as one histogram family:
// `<name>_bucket{le="..."}`, `<name>_sum`, `<name>_count`.
//
// Thread-safety: Observe may be called from any thread; the sum is updated
// with a CAS loop, the buckets with relaxed atomic adds (a scrape may see a
// bucket and the count from slightly different moments).
#ifndef RINGPROF_COLLECTOR_SHIPPING_HISTOGRAM_H_
#define RINGPROF_COLLECTOR_SHIPPING_HISTOGRAM_H_

#include <atomic>
#include <string>
#include <vector>

#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace shipping {

class Histogram {
 public:
  // `bounds`: ascending upper bounds; +Inf is added.
  Histogram(const std::string& name, const std::string& help,
            std::vector<double> bounds);
  void Observe(double value);

 private:
  std::vector<double> bounds_;
  std::vector<Counter*> buckets_;  // one per bound, then +Inf
  Gauge* sum_;
  Counter* count_;
  std::atomic<double> sum_value_{0};
};

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_HISTOGRAM_H_
