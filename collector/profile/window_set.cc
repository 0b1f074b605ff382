#include "collector/profile/window_set.h"

#include <algorithm>
#include <iterator>

namespace ringprof {
namespace collector {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

WindowSet::Window& WindowSet::At(int64_t unix_ns) {
  const int64_t index = std::max(FloorDiv(unix_ns, window_ns_), first_open_);
  Window& window = windows_[index];
  window.first_event_unix_ns = std::min(window.first_event_unix_ns, unix_ns);
  window.last_event_unix_ns = std::max(window.last_event_unix_ns, unix_ns);
  return window;
}

void WindowSet::Contributes(Window& window, uint32_t ring, uint64_t index) {
  if (window.min_index.size() <= ring) {
    window.min_index.resize(ring + 1, UINT64_MAX);
  }
  window.min_index[ring] = std::min(window.min_index[ring], index);
}

void WindowSet::CloseBefore(int64_t unix_ns, bool idle,
                            absl::FunctionRef<void(const Closed&)> close) {
  const bool final_flush = unix_ns == INT64_MAX;
  if (idle) FillIdle(unix_ns);
  while (!windows_.empty()) {
    auto it = windows_.begin();
    const int64_t from = it->first * window_ns_;
    if (from + window_ns_ > unix_ns && !final_flush) break;
    const bool last = final_flush && std::next(it) == windows_.end();
    close({it->first, from, Until(it->first, it->second, last), last,
           it->second});
    first_open_ = it->first + 1;
    windows_.erase(it);
  }
}

void WindowSet::LowerPositions(std::vector<uint64_t>& positions) const {
  for (const auto& [index, window] : windows_) {
    for (size_t ring = 0;
         ring < window.min_index.size() && ring < positions.size(); ++ring) {
      positions[ring] = std::min(positions[ring], window.min_index[ring]);
    }
  }
}

void WindowSet::ResumeAt(int64_t unix_ns) {
  if (unix_ns != INT64_MIN) first_open_ = FloorDiv(unix_ns, window_ns_);
}

void WindowSet::FillIdle(int64_t unix_ns) {
  int64_t first = first_open_;
  if (first == INT64_MIN) {
    if (windows_.empty()) return;
    first = windows_.begin()->first;
  }
  // Up to the last complete window, or at the end up to the last one.
  int64_t last = unix_ns == INT64_MAX
                     ? (windows_.empty() ? first - 1 : windows_.rbegin()->first)
                     : FloorDiv(unix_ns, window_ns_) - 1;
  // Bounded: timestamps are the workload's (a corrupt one must not make us
  // build millions of windows); a longer idle stretch keeps its ends.
  last = std::min(last, first + kMaxIdleWindows);
  for (int64_t index = first; index <= last; ++index) {
    windows_.try_emplace(index);
  }
}

int64_t WindowSet::Until(int64_t index, const Window& window,
                         bool final_window) const {
  const int64_t from = index * window_ns_;
  const int64_t until = from + window_ns_;
  if (!final_window) return until;
  return std::min(until,
                  std::max(from + 1, window.last_event_unix_ns + tick_ns_));
}

}  // namespace collector
}  // namespace ringprof
