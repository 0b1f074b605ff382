#include "collector/profile/tick_picker.h"

#include <algorithm>

namespace ringprof {
namespace collector {

TickPicker::TickPicker(const Options& options) : options_(options) {
  if (options_.tick_ns == 0) options_.tick_ns = 1;
}

void TickPicker::Add(uint32_t tid, uint64_t timestamp_ns, uint32_t payload) {
  const uint64_t tick = options_.tick_ns;
  const uint64_t maxd = options_.max_distance_ns;
  // The first tick that can pick this sample.
  const uint64_t first_tick =
      timestamp_ns > maxd ? (timestamp_ns - maxd + tick - 1) / tick : 0;
  if (!started_) {
    started_ = true;
    first_undecided_tick_ = first_tick;
  } else if (!decided_any_) {
    first_undecided_tick_ = std::min(first_undecided_tick_, first_tick);
  } else if (timestamp_ns + maxd < first_undecided_tick_ * tick) {
    ++late_samples_;  // every tick it could win is decided already
    return;
  }
  last_timestamp_ns_ = std::max(last_timestamp_ns_, timestamp_ns);

  std::deque<Sample>& samples = threads_[tid].samples;
  if (samples.empty() || samples.back().timestamp_ns <= timestamp_ns) {
    samples.push_back({timestamp_ns, payload});
    return;
  }
  auto pos = std::upper_bound(
      samples.begin(), samples.end(), timestamp_ns,
      [](uint64_t t, const Sample& s) { return t < s.timestamp_ns; });
  samples.insert(pos, {timestamp_ns, payload});
}

void TickPicker::Advance(uint64_t watermark_ns, const PickFn& pick) {
  if (!started_ || watermark_ns < options_.max_distance_ns) return;
  DecideUntil((watermark_ns - options_.max_distance_ns) / options_.tick_ns + 1,
              pick);
}

void TickPicker::Finish(const PickFn& pick) {
  if (!started_) return;
  DecideUntil(
      (last_timestamp_ns_ + options_.max_distance_ns) / options_.tick_ns + 1,
      pick);
}

void TickPicker::DecideUntil(uint64_t end_tick, const PickFn& pick) {
  if (end_tick <= first_undecided_tick_) return;
  std::vector<uint8_t> picked;
  if (options_.report_empty_ticks) {
    picked.assign(end_tick - first_undecided_tick_, 0);
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    DecideThread(it->first, it->second, end_tick, pick,
                 options_.report_empty_ticks ? &picked : nullptr);
    if (it->second.samples.empty()) {
      threads_.erase(it++);  // bounded memory with many short-lived threads
    } else {
      ++it;
    }
  }
  if (options_.report_empty_ticks) {
    for (size_t i = 0; i < picked.size(); ++i) {
      if (!picked[i]) {
        pick((first_undecided_tick_ + i) * options_.tick_ns, 0, kNoSample);
      }
    }
  }
  first_undecided_tick_ = end_tick;
  decided_any_ = true;
}

void TickPicker::DecideThread(uint32_t tid, Thread& thread, uint64_t end_tick,
                              const PickFn& pick,
                              std::vector<uint8_t>* picked) {
  const uint64_t tick = options_.tick_ns;
  const uint64_t maxd = options_.max_distance_ns;
  std::deque<Sample>& s = thread.samples;
  const size_t n = s.size();
  size_t next = 0;  // first sample later than the current tick
  uint64_t k = first_undecided_tick_;
  while (k < end_tick) {
    const uint64_t t = k * tick;
    while (next < n && s[next].timestamp_ns <= t) ++next;
    size_t best = n;
    uint64_t best_distance = 0;
    if (next > 0 && t - s[next - 1].timestamp_ns <= maxd) {
      best = next - 1;
      best_distance = t - s[next - 1].timestamp_ns;
    }
    if (next < n && s[next].timestamp_ns - t <= maxd &&
        (best == n || s[next].timestamp_ns - t < best_distance)) {
      best = next;
    }
    if (best != n) {
      pick(t, tid, s[best].payload);
      if (picked != nullptr) (*picked)[k - first_undecided_tick_] = 1;
      ++k;
      continue;
    }
    if (next == n) break;
    // Nothing near this tick: jump to the first tick the next sample reaches.
    const uint64_t ts = s[next].timestamp_ns;
    const uint64_t reach = ts > maxd ? (ts - maxd + tick - 1) / tick : 0;
    k = std::max(k + 1, reach);
  }
  // Samples no undecided tick can pick any more.
  const uint64_t horizon = end_tick * tick;
  while (!s.empty() && s.front().timestamp_ns + maxd < horizon) s.pop_front();
}

}  // namespace collector
}  // namespace ringprof
