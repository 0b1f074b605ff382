// WindowSet: one process's open windows, each a wall-clock-aligned
// [index * window_ns, (index + 1) * window_ns) with its aggregates, until
// they close.
//
//   sample at unix_ns --At--> its window (created on first use; data older
//                              than a closed window goes to the oldest open
//                              one, so totals stay right when a record
//                              comes very late)
//   watermark --CloseBefore--> every window that ended, oldest first, with
//                              the end of its profile; then forgotten
//
// A window also remembers, per ring, the smallest record index that
// contributed to it: a checkpoint's read position may not pass a record of
// a window not yet delivered (LowerPositions).
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_WINDOW_SET_H_
#define RINGPROF_COLLECTOR_PROFILE_WINDOW_SET_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/functional/function_ref.h"
#include "collector/profile/window_encoder.h"

namespace ringprof {
namespace collector {

class WindowSet {
 public:
  struct Window {
    WindowAggregates aggregates;
    int64_t first_event_unix_ns = INT64_MAX;
    int64_t last_event_unix_ns = 0;
    // Memory charged for its aggregates (ProcessMemory), given back when
    // it closes.
    uint64_t charged_bytes = 0;
    // Per ring: the smallest record index that contributed.
    std::vector<uint64_t> min_index;
  };

  // A window CloseBefore hands on.
  struct Closed {
    int64_t index;
    int64_t from_unix_ns;  // index * window_ns
    // The window's end, or for the final one a tick after its last event
    // (at least 1 ns after its start).
    int64_t until_unix_ns;
    bool final_window;  // the last window of the process
    const Window& window;
  };

  // Idle windows created at most between two with records.
  static constexpr int64_t kMaxIdleWindows = 360;

  WindowSet(int64_t window_ns, int64_t tick_ns)
      : window_ns_(window_ns), tick_ns_(tick_ns) {}
  WindowSet(const WindowSet&) = delete;
  WindowSet& operator=(const WindowSet&) = delete;

  // The open window for an event at `unix_ns`.
  Window& At(int64_t unix_ns);
  // Notes that record `index` of ring `ring` contributed to `window`.
  static void Contributes(Window& window, uint32_t ring, uint64_t index);

  // Hands every window that ends at or before `unix_ns` to `close`, oldest
  // first, and forgets it; INT64_MAX closes all, the last one final. With
  // `idle`, windows without records between the open ones and `unix_ns`
  // (at most kMaxIdleWindows after the first open one: timestamps are the
  // workload's) are created first, so that a snapshot is handed on for
  // every window.
  void CloseBefore(int64_t unix_ns, bool idle,
                   absl::FunctionRef<void(const Closed&)> close);

  // Lowers positions[ring] to the smallest record index that contributed
  // to a window still open.
  void LowerPositions(std::vector<uint64_t>& positions) const;

  // After a restart: every window before the one of `unix_ns` was
  // delivered by a predecessor.
  void ResumeAt(int64_t unix_ns);

  bool empty() const { return windows_.empty(); }
  int64_t window_ns() const { return window_ns_; }

 private:
  void FillIdle(int64_t unix_ns);
  int64_t Until(int64_t index, const Window& window, bool final_window) const;

  const int64_t window_ns_;
  const int64_t tick_ns_;
  std::map<int64_t, Window> windows_;  // by index
  int64_t first_open_ = INT64_MIN;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_WINDOW_SET_H_
