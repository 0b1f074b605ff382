// Sample timestamps: CLOCK_MONOTONIC, or the cycle counter calibrated against
// it where reading the clock is a system call (sample_clock.h).
//
// The calibration is one record (anchor count and time, nanoseconds per tick,
// the count up to which it may be used) behind a sequence counter.
// Readers never wait: a reader that finds the record being rewritten or out
// of date reads the real clock instead, and at most one thread at a time
// (try-lock) turns such a read into a new anchor. The rate is always taken
// over the whole baseline since the first anchor, so it gets more precise
// the longer the process runs.
#include "emitter/sample_clock.h"

#include <time.h>

#include <atomic>
#include <cstdint>

#include "emitter/arch/arch.h"

namespace ringprof {
namespace emitter {
namespace {

// Extrapolate at most this far from an anchor before taking a new one.
constexpr uint64_t kRecalibrateNs = 50 * 1000 * 1000;
// Do not trust a rate measured over less than this. Early on, while the
// baseline is short, an anchor is trusted for a quarter of its baseline only
// (so a rate error of (read time / baseline) moves a timestamp by at most a
// quarter of one clock read), which keeps the number of real reads in a
// process's first milliseconds small.
constexpr uint64_t kMinBaselineNs = 1000 * 1000;
// An anchor whose clock read took longer than this (preempted in the middle)
// is not precise enough to use.
constexpr uint64_t kMaxAnchorWidthNs = 200 * 1000;

uint64_t ClockNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

std::atomic<bool> g_counter_mode{false};
uint64_t g_clock_read_ns = 0;
uint64_t g_counter_read_ns = 0;
// SampleClockInit's progress: not started, measuring, done (g_clock_read_ns
// and the TSC calibration published).
enum InitState : int { kNotMeasured, kMeasuring, kMeasured };
std::atomic<int> g_init_state{kNotMeasured};

uint64_t ReadCounter() { return arch::ReadCycleCounter(); }

struct Anchor {
  uint64_t count;
  uint64_t ns;
  uint64_t width_ticks;  // how long the clock read took
};

// One clock read bracketed by counter reads; the anchor is the midpoint.
Anchor TakeAnchor() {
  const uint64_t before = ReadCounter();
  const uint64_t ns = ClockNs();
  const uint64_t after = ReadCounter();
  Anchor anchor;
  anchor.count = before + (after - before) / 2;
  anchor.ns = ns;
  anchor.width_ticks = after - before;
  return anchor;
}

// The first anchor: the origin of every rate measurement.
Anchor g_origin;

// The published calibration.
std::atomic<uint32_t> g_sequence{0};
std::atomic<uint64_t> g_base_count{0};
std::atomic<uint64_t> g_base_ns{0};
std::atomic<double> g_ns_per_tick{0};
std::atomic<uint64_t> g_limit_count{0};  // use the record while count < this
std::atomic<bool> g_calibrating{false};

// Reads the real clock; when no other thread is at it, makes the reading a
// new anchor and publishes the calibration through it.
uint64_t Recalibrate() {
  const Anchor anchor = TakeAnchor();
  if (g_calibrating.exchange(true, std::memory_order_acquire)) {
    return anchor.ns;
  }
  const uint64_t baseline_ns = anchor.ns - g_origin.ns;
  const uint64_t baseline_ticks = anchor.count - g_origin.count;
  if (anchor.ns > g_origin.ns && anchor.count > g_origin.count &&
      baseline_ns >= kMinBaselineNs) {
    const double ns_per_tick =
        static_cast<double>(baseline_ns) / static_cast<double>(baseline_ticks);
    const double width_ns =
        static_cast<double>(anchor.width_ticks) * ns_per_tick;
    if (width_ns <= static_cast<double>(kMaxAnchorWidthNs)) {
      const uint64_t window_ns =
          baseline_ns / 4 < kRecalibrateNs ? baseline_ns / 4 : kRecalibrateNs;
      const uint64_t limit =
          anchor.count +
          static_cast<uint64_t>(static_cast<double>(window_ns) / ns_per_tick);
      const uint32_t sequence = g_sequence.load(std::memory_order_relaxed);
      g_sequence.store(sequence + 1, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      g_base_count.store(anchor.count, std::memory_order_relaxed);
      g_base_ns.store(anchor.ns, std::memory_order_relaxed);
      g_ns_per_tick.store(ns_per_tick, std::memory_order_relaxed);
      g_limit_count.store(limit, std::memory_order_relaxed);
      g_sequence.store(sequence + 2, std::memory_order_release);
    }
  }
  g_calibrating.store(false, std::memory_order_release);
  return anchor.ns;
}

uint64_t CounterNowNs() {
  const uint32_t sequence = g_sequence.load(std::memory_order_acquire);
  const uint64_t base_count = g_base_count.load(std::memory_order_relaxed);
  const uint64_t base_ns = g_base_ns.load(std::memory_order_relaxed);
  const double ns_per_tick = g_ns_per_tick.load(std::memory_order_relaxed);
  const uint64_t limit = g_limit_count.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if ((sequence & 1) != 0 ||
      sequence != g_sequence.load(std::memory_order_relaxed)) {
    return ClockNs();  // being rewritten (perhaps by the thread we interrupted)
  }
  const uint64_t count = ReadCounter();
  if (sequence == 0 || count < base_count || count >= limit)
    return Recalibrate();
  return base_ns + static_cast<uint64_t>(
                       static_cast<double>(count - base_count) * ns_per_tick);
}

// Measures a clock read, and calibrates the cycle counter where a read is
// slow.
void Measure() {
  constexpr int kReads = 16;
  const uint64_t start = ClockNs();
  for (int i = 0; i < kReads; ++i) ClockNs();
  const uint64_t end = ClockNs();
  g_clock_read_ns = (end - start) / (kReads + 1);
  if (g_clock_read_ns < arch::kSystemCallClockReadNs ||
      !arch::CycleCounterUsable()) {
    return;
  }
  // One more clock read (a system call here) times a batch of counter
  // reads; its own cost adds 1/64 of a clock read to the result.
  constexpr int kCounterReads = 64;
  for (int i = 0; i < kCounterReads; ++i) ReadCounter();
  g_counter_read_ns = (ClockNs() - end) / kCounterReads;
  if (2 * g_counter_read_ns > g_clock_read_ns) return;
  // The narrowest of a few brackets is the most precise origin.
  g_origin = TakeAnchor();
  for (int i = 0; i < 3; ++i) {
    const Anchor anchor = TakeAnchor();
    if (anchor.width_ticks < g_origin.width_ticks) g_origin = anchor;
  }
  g_counter_mode.store(true, std::memory_order_release);
}

}  // namespace

void SampleClockInit() {
  int state = g_init_state.load(std::memory_order_acquire);
  if (state != kNotMeasured ||
      !g_init_state.compare_exchange_strong(state, kMeasuring,
                                            std::memory_order_acq_rel)) {
    return;
  }
  Measure();
  g_init_state.store(kMeasured, std::memory_order_release);
}

uint64_t SampleClockNowNs() {
  if (g_counter_mode.load(std::memory_order_acquire)) return CounterNowNs();
  if (__builtin_expect(
          g_init_state.load(std::memory_order_relaxed) == kNotMeasured, 0)) {
    SampleClockInit();
    if (g_counter_mode.load(std::memory_order_acquire)) return CounterNowNs();
  }
  return ClockNs();
}

bool ClockReadIsSlow() {
  SampleClockInit();
  return g_clock_read_ns >= arch::kSystemCallClockReadNs;
}

SampleClockInfo GetSampleClockInfo() {
  SampleClockInit();
  SampleClockInfo info;
  info.counter = g_counter_mode.load(std::memory_order_acquire);
  info.clock_read_ns = g_clock_read_ns;
  info.counter_read_ns = g_counter_read_ns;
  return info;
}

}  // namespace emitter
}  // namespace ringprof
