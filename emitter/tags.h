// Application tags: a per-thread stack of key/value pairs (and a trace span
// id) that every sample of the thread carries. The public API is
// include/ringprof/ringprof.h; this is the emitter's side of it.
//
// Each distinct tag set is interned once per process in a fixed, lock-free
// table (a set is its parent set plus one pair, so a push is one hash probe)
// and named by a 32-bit id in samples; its TagSet record is appended before
// the first sample of each ring that names it, and again every
// kTagSetReemitNs while samples keep naming it (a reader that lost the
// record learns it again).
//
// Every function is async-signal-safe, lock-free and allocation-free, and
// touches only the calling thread's TLS and the process-wide table.
// Bounds (beyond them nothing fails; see emitter/README.md, "Tags"): keys
// and values are cut to kMaxTagKeySize / kMaxTagValueSize bytes (on a UTF-8
// character boundary); pushes beyond kMaxTagsPerSet open on a thread change
// nothing (their pops pair up); once kMaxTagSets sets exist, a push of a new
// combination keeps the thread's current set.
#ifndef RINGPROF_EMITTER_TAGS_H_
#define RINGPROF_EMITTER_TAGS_H_

#include <cstdint>

#include "emitter/runtime.h"

namespace ringprof {
namespace emitter {

inline constexpr uint32_t kMaxTagSets = 4096;
inline constexpr uint64_t kTagSetReemitNs = 5'000'000'000;

void PushTag(const char* key, const char* value);
void PopTag();
// Returns the previous span id.
uint64_t SetSpanId(uint64_t span_id);

// TagsForSample (what a sample carries) is in runtime.h.

// In a fork child (only thread): the parent's records are not in the
// child's file; record each set again when first used.
void ForgetRecordedTagSets();

// Pushes that found the table full or the thread's stack at its depth
// bound, since start (tests, benchmarks).
struct TagStats {
  uint64_t table_full = 0;
  uint64_t too_deep = 0;
  uint32_t sets = 0;
};
TagStats GetTagStats();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_TAGS_H_
