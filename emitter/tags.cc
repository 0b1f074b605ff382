// Application tags (tags.h).
//
// The table: g_nodes[id] holds set `id` as (parent id, key, value), written
// once by the thread that allocates the id and published by the release CAS
// that puts the id into an open-addressing hash slot; readers acquire the
// slot before they look at the node. A node is never changed afterwards, so
// a lookup needs no lock and a signal handler may intern while the thread it
// interrupted is half-way through an insert (it inserts its own node, and
// the interrupted insert then finds it and uses it; its own node is wasted).
#include "emitter/tags.h"

#include <atomic>
#include <cstring>

#include "emitter/fork_child.h"
#include "emitter/large_table.h"
#include "emitter/runtime.h"
#include "emitter/thread_state.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

using ringfile::kMaxTagKeySize;
using ringfile::kMaxTagsPerSet;
using ringfile::kMaxTagValueSize;

constexpr uint32_t kSlots = 2 * kMaxTagSets;  // load factor <= 1/2
static_assert((kSlots & (kSlots - 1)) == 0, "power of two");

struct Node {
  uint64_t hash;
  uint32_t parent;
  uint8_t key_size;
  uint8_t value_size;
  char key[kMaxTagKeySize];
  char value[kMaxTagValueSize];
  // Per ring: the re-emission period (monotonic / kTagSetReemitNs, plus 1)
  // in which this set's TagSet record was last appended there; 0 = never.
  std::atomic<uint32_t> recorded[kRingFileRings];
};

// Index = id; node 0 is never used (id 0 = no tags). Static storage: the
// pages of ids never allocated are never touched.
RINGPROF_LARGE_TABLE Node g_nodes[kMaxTagSets + 1];
std::atomic<uint32_t> g_last_id{0};
RINGPROF_LARGE_TABLE std::atomic<uint32_t> g_slots[kSlots];
std::atomic<uint64_t> g_table_full{0};
std::atomic<uint64_t> g_too_deep{0};

uint64_t HashOf(uint32_t parent, const char* key, size_t key_size,
                const char* value, size_t value_size) {
  // FNV-1a: a few ns for the short strings tags are.
  uint64_t h = 0xcbf29ce484222325ull ^ parent;
  h *= 0x100000001b3ull;
  for (size_t i = 0; i < key_size; ++i) {
    h = (h ^ static_cast<uint8_t>(key[i])) * 0x100000001b3ull;
  }
  h = (h ^ 0x100) * 0x100000001b3ull;  // separator outside the byte range
  for (size_t i = 0; i < value_size; ++i) {
    h = (h ^ static_cast<uint8_t>(value[i])) * 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

bool NodeIs(const Node& node, uint64_t hash, uint32_t parent, const char* key,
            size_t key_size, const char* value, size_t value_size) {
  return node.hash == hash && node.parent == parent &&
         node.key_size == key_size && node.value_size == value_size &&
         memcmp(node.key, key, key_size) == 0 &&
         memcmp(node.value, value, value_size) == 0;
}

// Length of `s` up to `max` bytes, cut back to a UTF-8 character boundary
// when cut.
size_t BoundedLength(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n] != '\0') ++n;
  if (n == max && s[n] != '\0') {
    // The byte at n (not kept) must not be a continuation of one we keep.
    while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xc0) == 0x80) --n;
  }
  return n;
}

// The id of set parent + (key, value), interned now if new; 0 when the
// table is full.
uint32_t Intern(uint32_t parent, const char* key, size_t key_size,
                const char* value, size_t value_size) {
  const uint64_t hash = HashOf(parent, key, key_size, value, value_size);
  uint32_t mine = 0;  // a node this call allocated and filled
  for (uint32_t probe = 0; probe < kSlots; ++probe) {
    std::atomic<uint32_t>& slot = g_slots[(hash + probe) & (kSlots - 1)];
    uint32_t id = slot.load(std::memory_order_acquire);
    while (id == 0) {
      if (mine == 0) {
        mine = g_last_id.fetch_add(1, std::memory_order_relaxed) + 1;
        if (mine > kMaxTagSets) {
          g_last_id.store(kMaxTagSets, std::memory_order_relaxed);
          return 0;
        }
        Node& node = g_nodes[mine];
        node.hash = hash;
        node.parent = parent;
        node.key_size = static_cast<uint8_t>(key_size);
        node.value_size = static_cast<uint8_t>(value_size);
        memcpy(node.key, key, key_size);
        memcpy(node.value, value, value_size);
      }
      if (slot.compare_exchange_strong(id, mine, std::memory_order_release,
                                       std::memory_order_acquire)) {
        return mine;
      }
      // Lost the slot: `id` is the winner's node, compared below.
    }
    if (id <= kMaxTagSets &&
        NodeIs(g_nodes[id], hash, parent, key, key_size, value, value_size)) {
      return id;
    }
  }
  return 0;
}

// Appends set `id`'s TagSet record: its pairs outermost first, each key
// once (the innermost push of a key wins).
bool RecordTagSet(uint32_t id, uint64_t now_ns) {
  const Node* chain[kMaxTagsPerSet];
  int depth = 0;
  // A parent is always interned before its child (a smaller id), and a
  // chain is at most kMaxTagsPerSet long; the bounds only make that local.
  uint32_t steps = 0;
  for (uint32_t at = id; at != 0 && at <= kMaxTagSets && steps < kMaxTagsPerSet;
       ++steps) {
    const Node& node = g_nodes[at];
    bool shadowed = false;
    for (int i = 0; i < depth; ++i) {
      shadowed |= chain[i]->key_size == node.key_size &&
                  memcmp(chain[i]->key, node.key, node.key_size) == 0;
    }
    if (!shadowed) {
      if (depth == static_cast<int>(kMaxTagsPerSet)) break;
      chain[depth++] = &node;
    }
    at = node.parent;
  }
  alignas(8) uint8_t payload[ringfile::kMaxTagSetPayload];
  ringfile::TagSet head;
  head.monotonic_ns = now_ns;
  head.id = id;
  head.count = static_cast<uint16_t>(depth);
  head.reserved = 0;
  uint8_t* sizes = payload;
  uint8_t* text = payload + depth * sizeof(ringfile::TagSizes);
  for (int i = depth - 1; i >= 0; --i) {  // outermost first
    const Node& node = *chain[i];
    const ringfile::TagSizes pair = {node.key_size, node.value_size};
    memcpy(sizes, &pair, sizeof(pair));
    sizes += sizeof(pair);
    memcpy(text, node.key, node.key_size);
    text += node.key_size;
    memcpy(text, node.value, node.value_size);
    text += node.value_size;
  }
  return AppendRecord(ringfile::RecordType::kTagSet, &head, sizeof(head),
                      payload, static_cast<uint32_t>(text - payload));
}

}  // namespace

void PushTag(const char* key, const char* value) {
  ThreadState& thread = tls_thread_state;
  const uint32_t depth = thread.tag_depth;
  if (depth >= kMaxTagsPerSet) {
    if (depth != UINT32_MAX) thread.tag_depth = depth + 1;
    g_too_deep.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint32_t current = thread.tag_set;
  uint32_t id = current;
  if (key != nullptr && key[0] != '\0') {
    if (value == nullptr) value = "";
    const size_t key_size = BoundedLength(key, kMaxTagKeySize);
    const size_t value_size = BoundedLength(value, kMaxTagValueSize);
    if (key_size > 0) {
      id = Intern(current, key, key_size, value, value_size);
      if (id == 0) {
        g_table_full.fetch_add(1, std::memory_order_relaxed);
        id = current;
      }
    }
  }
  // A signal handler sampling in between sees the old set or the new one,
  // never a half-updated stack.
  thread.tag_saved[depth] = current;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  thread.tag_set = id;
  thread.tag_depth = depth + 1;
}

void PopTag() {
  ThreadState& thread = tls_thread_state;
  const uint32_t depth = thread.tag_depth;
  if (depth == 0) return;  // unbalanced pop: ignored
  if (depth <= kMaxTagsPerSet) thread.tag_set = thread.tag_saved[depth - 1];
  std::atomic_signal_fence(std::memory_order_seq_cst);
  thread.tag_depth = depth - 1;
}

uint64_t SetSpanId(uint64_t span_id) {
  const uint64_t previous = tls_thread_state.span_id;
  tls_thread_state.span_id = span_id;
  return previous;
}

SampleTags TagsForSample(uint64_t now_ns) {
  const ThreadState& thread = tls_thread_state;
  SampleTags tags = {thread.tag_set, thread.span_id};
  if (tags.tag_set == 0 || tags.tag_set > kMaxTagSets) return tags;
  std::atomic<uint32_t>& recorded =
      g_nodes[tags.tag_set].recorded[CurrentTid() % kRingFileRings];
  const uint32_t period = static_cast<uint32_t>(now_ns / kTagSetReemitNs) + 1;
  if (recorded.load(std::memory_order_relaxed) != period &&
      RecordTagSet(tags.tag_set, now_ns)) {
    recorded.store(period, std::memory_order_relaxed);
  }
  return tags;
}

void ForgetRecordedTagSets() {
  uint32_t last = g_last_id.load(std::memory_order_relaxed);
  if (last > kMaxTagSets) last = kMaxTagSets;
  for (uint32_t id = 1; id <= last; ++id) {
    for (std::atomic<uint32_t>& recorded : g_nodes[id].recorded) {
      StoreIfDifferent<uint32_t>(recorded, 0);
    }
  }
}

TagStats GetTagStats() {
  TagStats stats;
  stats.table_full = g_table_full.load(std::memory_order_relaxed);
  stats.too_deep = g_too_deep.load(std::memory_order_relaxed);
  const uint32_t last = g_last_id.load(std::memory_order_relaxed);
  stats.sets = last > kMaxTagSets ? kMaxTagSets : last;
  return stats;
}

}  // namespace emitter
}  // namespace ringprof
