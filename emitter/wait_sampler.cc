#include "emitter/wait_sampler.h"

#include <errno.h>

#include "emitter/libc_features.h"
#include "emitter/module_map.h"
#include "emitter/sampler.h"
#include "emitter/session.h"
#include "emitter/thread_events.h"
#include "emitter/thread_state.h"

namespace ringprof {
namespace emitter {

uint32_t g_wait_profiles = 0;
bool g_glibc_lock_words = false;

namespace {

uint64_t g_sample_ns[3] = {0, 0, 0};  // by WaitKind

uint64_t WaitSeed() {
  const uint64_t seed =
      reinterpret_cast<uintptr_t>(&tls_thread_state) * 0xbf58476d1ce4e5b9ull ^
      MonotonicNowNs() ^ (uint64_t{CurrentTid()} << 29);
  return seed == 0 ? 1 : seed;
}

__attribute__((noinline)) void RecordWait(ringfile::WaitKind kind,
                                          uint64_t now_ns, uint64_t wait_ns,
                                          uint64_t sample_ns) {
  PrefetchRecordSlot();
  RecordThreadNameIfChanged();
  const int max_frames = MaxFrames();
  uint64_t* frames =
      static_cast<uint64_t*>(__builtin_alloca(sizeof(uint64_t) * max_frames));
  bool truncated = false;
  // Skips RecordWait and SampleWait: the interposer is the leaf.
  const int frame_count = CaptureStack(frames, max_frames, 2, &truncated);
  if (frame_count == 0) return;
  // Without _dl_find_object (glibc < 2.35) the module map's lookups take
  // the loader's lock, and a wait may end in a signal handler: the objects
  // of this stack are then recorded by the next allocation sample or the
  // periodic re-emission instead.
  const bool lock_free_lookups = HaveDlFindObject();
  if (lock_free_lookups) NoteStackModules(frames, frame_count);
  const SampleTags tags = TagsForSample(now_ns);

  ringfile::WaitSample sample;
  sample.monotonic_ns = now_ns;
  sample.tid = CurrentTid();
  sample.frame_count = static_cast<uint16_t>(frame_count);
  sample.flags = truncated ? ringfile::kSampleTruncated : 0;
  sample.wait_ns = wait_ns;
  sample.sample_ns = sample_ns;
  sample.tag_set = tags.tag_set;
  sample.kind = static_cast<uint16_t>(kind);
  sample.reserved = 0;
  sample.span_id = tags.span_id;
  AppendRecord(ringfile::RecordType::kWaitSample, &sample, sizeof(sample),
               frames, static_cast<uint32_t>(sizeof(uint64_t) * frame_count));
  if (lock_free_lookups) MaybeReemitModules(now_ns);
}

}  // namespace

void StartWaitProfiles(uint64_t mutex_sample_ns, uint64_t block_sample_ns,
                       bool glibc_lock_words) {
  using ringfile::WaitKind;
  g_glibc_lock_words = glibc_lock_words;
  g_sample_ns[static_cast<int>(WaitKind::kLock)] = mutex_sample_ns;
  g_sample_ns[static_cast<int>(WaitKind::kBlock)] = block_sample_ns;
  g_wait_profiles =
      (mutex_sample_ns > 0 ? 1u << static_cast<int>(WaitKind::kLock) : 0) |
      (block_sample_ns > 0 ? 1u << static_cast<int>(WaitKind::kBlock) : 0);
}

__attribute__((noinline)) void SampleWait(ringfile::WaitKind kind,
                                          uint64_t start_ns) {
  const uint64_t now_ns = MonotonicNowNs();
  if (now_ns <= start_ns) return;
  const uint64_t wait_ns = now_ns - start_ns;
  const uint64_t sample_ns = g_sample_ns[static_cast<int>(kind)];
  ThreadState& thread = tls_thread_state;
  if (thread.in_emitter != 0 || sample_ns == 0) return;
  if (thread.wait_rng == 0) thread.wait_rng = WaitSeed();
  if (!KeepWait(wait_ns, sample_ns, thread.wait_rng)) return;
  if (!Enabled()) return;
  const int saved_errno = errno;
  {
    ReentryGuard guard;
    if (guard.entered()) RecordWait(kind, now_ns, wait_ns, sample_ns);
  }
  errno = saved_errno;
}

}  // namespace emitter
}  // namespace ringprof
