// Process-wide counters and gauges, exported in Prometheus text format by
// the opt-in /metrics endpoint (collector/shipping). Lock-free to update.
//
// Usage: static Counter& c = Metrics::Get().GetCounter("ringprof_x_total",
// "help text"); c.Add(1);  Names follow Prometheus conventions.
#ifndef RINGPROF_COLLECTOR_BASE_METRICS_H_
#define RINGPROF_COLLECTOR_BASE_METRICS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

namespace ringprof {
namespace collector {

class Counter {
 public:
  void Add(uint64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(double v) { bits_.store(v, std::memory_order_relaxed); }
  double value() const { return bits_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> bits_{0};
};

class Metrics {
 public:
  static Metrics& Get();
  // Returns the same object for the same name; references stay valid forever.
  Counter& GetCounter(const std::string& name, const std::string& help);
  Gauge& GetGauge(const std::string& name, const std::string& help);
  // Prometheus text exposition format 0.0.4.
  std::string RenderText() const;

 private:
  struct Entry {
    std::string name, help;
    bool is_counter;
    Counter counter;
    Gauge gauge;
  };
  mutable std::mutex mu_;
  std::deque<Entry> entries_;  // deque: stable addresses
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_METRICS_H_
