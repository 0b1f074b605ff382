#include "ringfile/stress_record.h"

#include "ringfile/format.h"

namespace ringprof {
namespace ringfile {
namespace testing {
namespace {

constexpr uint32_t kMaxStressFrames = 128;

uint64_t Mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

uint64_t FrameFor(uint32_t thread, uint64_t seq, uint32_t k) {
  return Mix((uint64_t{thread} << 48) ^ (seq << 8) ^ k);
}

uint64_t Checksum(const AllocSample& head, const uint64_t* frames) {
  uint64_t sum = Mix(head.tid) ^ Mix(head.requested_size + 1) ^
                 Mix(head.frame_count + 2) ^ Mix(head.weight_bytes + 3);
  for (uint32_t k = 0; k < head.frame_count; ++k) {
    sum = Mix(sum ^ frames[k]);
  }
  return sum;
}

}  // namespace

bool AppendStressRecord(RingWriter& writer, uint32_t thread, uint64_t seq,
                        uint32_t max_frames) {
  uint64_t frames[kMaxStressFrames];
  if (max_frames > kMaxStressFrames) max_frames = kMaxStressFrames;
  AllocSample head = {};
  head.tid = thread;
  head.requested_size = seq;
  head.frame_count =
      static_cast<uint16_t>(Mix(seq * 31 + thread) % (max_frames + 1));
  head.weight_bytes = Mix(seq ^ 0x5555);
  for (uint32_t k = 0; k < head.frame_count; ++k) {
    frames[k] = FrameFor(thread, seq, k);
  }
  head.address = Checksum(head, frames);
  return writer.TryAppend(RecordType::kAllocSample, &head, sizeof(head), frames,
                          head.frame_count * 8u, thread);
}

bool CheckStressRecord(const RecordView& record, uint32_t* thread,
                       uint64_t* seq) {
  if (record.type != RecordType::kAllocSample) return false;
  absl::StatusOr<AllocSampleView> view = DecodeAllocSample(record);
  if (!view.ok()) return false;
  const AllocSample& head = view->head;
  if (head.weight_bytes != Mix(head.requested_size ^ 0x5555)) return false;
  for (uint32_t k = 0; k < head.frame_count; ++k) {
    if (view->frames[k] != FrameFor(head.tid, head.requested_size, k)) {
      return false;
    }
  }
  if (head.address != Checksum(head, view->frames.data())) return false;
  *thread = head.tid;
  *seq = head.requested_size;
  return true;
}

}  // namespace testing
}  // namespace ringfile
}  // namespace ringprof
