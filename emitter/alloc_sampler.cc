#include "emitter/alloc_sampler.h"

#include <atomic>
#include <cstdint>

#include "emitter/environment_facts.h"
#include "emitter/free_tracker.h"
#include "emitter/live_set.h"
#include "emitter/module_map.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "emitter/thread_events.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

// Process-wide cap on timing samples (RINGPROF_MAX_SAMPLES_PER_SEC): a
// counter per one-second window. Racy at window boundaries by a few samples,
// which is all a cap needs.
std::atomic<uint64_t> g_timing_window{0};
std::atomic<uint32_t> g_timing_count{0};

bool TakeTimingBudget(uint64_t now_ns) {
  const uint64_t window = now_ns / 1000000000ull;
  uint64_t current = g_timing_window.load(std::memory_order_relaxed);
  if (current != window && g_timing_window.compare_exchange_strong(
                               current, window, std::memory_order_relaxed)) {
    g_timing_count.store(0, std::memory_order_relaxed);
  }
  return g_timing_count.fetch_add(1, std::memory_order_relaxed) <
         static_cast<uint32_t>(SessionConfig().max_samples_per_sec);
}

uint64_t ThreadSeed() {
  return reinterpret_cast<uintptr_t>(&tls_thread_state) *
             0x9e3779b97f4a7c15ull ^
         MonotonicNowNs() ^ (uint64_t{CurrentTid()} << 32);
}

}  // namespace

__attribute__((noinline)) void SampleAllocation(void* address, size_t size) {
  SamplerState& state = tls_thread_state.sampler;
  if (!Enabled()) {
    // Off (RINGPROF_DISABLE, no ring file, after exit) or not started yet:
    // no clock read, no random draw, and the next visit only after another
    // T bytes. A disabled emitter must cost what a pass-through interposer
    // costs, also where a clock read is a system call (gVisor).
    ParkCountdown(state, SessionSamplerParams());
    return;
  }
  const uint64_t seed = state.rng == 0 ? ThreadSeed() : 0;  // first time only
  const SampleDecision decision = OnCountdownExpired(
      state, SessionSamplerParams(), size, MonotonicNowNs, seed);
  if (!decision.sample) return;
  ReentryGuard guard;
  if (!guard.entered()) {
    // An allocation made by the emitter itself, or by a signal handler that
    // interrupted it: recording it could deadlock or recurse.
    if (!decision.timing_only) CountLostSample(decision.weight_bytes);
    return;
  }
  if (decision.timing_only && !TakeTimingBudget(decision.now_ns)) return;

  // The ring slot and the live-set index slot written below are likely
  // cold: their loads overlap the stack walk instead of following it.
  PrefetchRecordSlot();
  if (!decision.timing_only && FreeTrackingOn()) {
    LiveSetPrefetch(reinterpret_cast<uintptr_t>(address));
  }
  RecordThreadNameIfChanged();

  const int max_frames = MaxFrames();
  uint64_t* frames =
      static_cast<uint64_t*>(__builtin_alloca(sizeof(uint64_t) * max_frames));
  bool truncated = false;
  // Skips this function; the interposed entry point (malloc, calloc, ...)
  // stays as the leaf frame.
  const int frame_count = CaptureStack(frames, max_frames, 1, &truncated);
  if (frame_count == 0) {
    if (!decision.timing_only) CountLostSample(decision.weight_bytes);
    return;
  }

  NoteStackModules(frames, frame_count);  // before the sample needing them
  const SampleTags tags = TagsForSample(decision.now_ns);  // likewise

  ringfile::AllocSample sample;
  sample.monotonic_ns = decision.now_ns;
  sample.tid = CurrentTid();
  sample.frame_count = static_cast<uint16_t>(frame_count);
  sample.flags = (truncated ? ringfile::kSampleTruncated : 0) |
                 (decision.timing_only ? ringfile::kSampleTimingOnly : 0);
  sample.requested_size = size;
  sample.weight_bytes = decision.timing_only ? 0 : decision.weight_bytes;
  sample.address = reinterpret_cast<uintptr_t>(address);
  sample.tag_set = tags.tag_set;
  sample.reserved = 0;
  sample.span_id = tags.span_id;
  // Entered into the live set whether or not the append succeeds: the
  // set's sweeps re-send what the ring lost.
  const uint32_t entry =
      decision.timing_only ? kNoEntry : ReserveLiveEntry(sample.address);
  if (entry == kNoEntry && !decision.timing_only) {
    sample.flags |= ringfile::kSampleUntracked;
  }
  const bool recorded = AppendRecord(
      ringfile::RecordType::kAllocSample, &sample, sizeof(sample), frames,
      static_cast<uint32_t>(sizeof(uint64_t) * frame_count));
  if (!recorded && !decision.timing_only) {
    // Not in the file (another thread is creating it right now, or the
    // slot was busy): its weight still counts, as a LostSamples record.
    CountLostSample(decision.weight_bytes);
  }
  if (entry != kNoEntry) {
    LiveSetPublish(entry, sample.monotonic_ns, sample.tid, sample.flags,
                   sample.requested_size, sample.weight_bytes, sample.address,
                   frames, sample.frame_count);
  }

  FlushLostSamples();
  // The environment facts go with each copy of the module map.
  if (MaybeReemitModules(decision.now_ns)) EmitEnvironmentFacts();
  MaybeSweepLiveSet(decision.now_ns);
}

}  // namespace emitter
}  // namespace ringprof
