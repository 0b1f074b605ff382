#include "ringfile/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "boost/interprocess/mapped_region.hpp"
#include "ringfile/clock.h"
#include "ringfile/guarded_memory.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the ring file format is little-endian");

namespace ringprof {
namespace ringfile {
namespace {

namespace bip = boost::interprocess;

bool IsPowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string FixedString(const char* field, size_t size) {
  return std::string(field, strnlen(field, size));
}

// Lets boost::interprocess::mapped_region map a descriptor we opened
// ourselves: Boost's file_mapping opens the path with a plain blocking
// open(2) and cannot add O_NOFOLLOW or O_NONBLOCK, so a FIFO or symlink
// planted at the path could hang or redirect the collector.
class DescriptorMapping {
 public:
  explicit DescriptorMapping(int fd) : fd_(fd) {}
  bip::mapping_handle_t get_mapping_handle() const {
    bip::mapping_handle_t handle;
    handle.handle = fd_;
    handle.is_xsi = false;
    return handle;
  }
  bip::mode_t get_mode() const { return bip::read_only; }

 private:
  int fd_;
};

absl::StatusOr<bip::mapped_region> MapReadOnly(int fd, uint64_t size) {
  try {
    return bip::mapped_region(DescriptorMapping(fd), bip::read_only, 0,
                              static_cast<size_t>(size));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("mmap failed: ", e.what()));
  }
}

// Validates a ready header and returns the information it carries.
absl::StatusOr<FileInfo> ValidateHeader(const FileHeader& header,
                                        uint64_t actual_size) {
  if (header.version != kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unsupported ring file version %u (this reader knows version %u)",
        header.version, kFormatVersion));
  }
  if (header.header_size != kHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "header_size %u, want %u", header.header_size, kHeaderSize));
  }
  if (header.ring_count == 0 || header.ring_count > kMaxRings) {
    return absl::DataLossError(absl::StrFormat("ring_count %u outside [1, %u]",
                                               header.ring_count, kMaxRings));
  }
  if (!IsPowerOfTwo(header.slots_per_ring) ||
      header.slots_per_ring < kMinSlotsPerRing ||
      header.slots_per_ring > kMaxSlotsPerRing) {
    return absl::DataLossError(absl::StrFormat(
        "slots_per_ring %u is not a power of two in [%u, %u]",
        header.slots_per_ring, kMinSlotsPerRing, kMaxSlotsPerRing));
  }
  if (header.slot_size < kMinSlotSize || header.slot_size > kMaxSlotSize ||
      header.slot_size % kSlotAlignment != 0) {
    return absl::DataLossError(absl::StrFormat(
        "slot_size %u is not a multiple of %u in [%u, %u]", header.slot_size,
        kSlotAlignment, kMinSlotSize, kMaxSlotSize));
  }
  if (header.control_offset != kHeaderSize) {
    return absl::DataLossError(absl::StrFormat(
        "control_offset %u, want %u", header.control_offset, kHeaderSize));
  }
  const uint64_t slots_offset = SlotsOffsetFor(header.ring_count);
  if (header.slots_offset != slots_offset) {
    return absl::DataLossError(
        absl::StrFormat("slots_offset %u, want %u for %u rings",
                        header.slots_offset, slots_offset, header.ring_count));
  }
  const uint64_t file_size =
      FileSizeFor(header.ring_count, header.slots_per_ring, header.slot_size);
  if (header.file_size != file_size || file_size > kMaxFileSize) {
    return absl::DataLossError(absl::StrFormat(
        "file_size %u in header, want %u (at most %u) for the ring sizes",
        header.file_size, file_size, kMaxFileSize));
  }
  if (actual_size < file_size) {
    return absl::DataLossError(absl::StrFormat(
        "file truncated: %u bytes, header says %u", actual_size, file_size));
  }
  FileInfo info;
  info.version = header.version;
  info.file_size = file_size;
  info.ring_count = header.ring_count;
  info.slots_per_ring = header.slots_per_ring;
  info.slot_size = header.slot_size;
  info.pid = header.pid;
  info.process_start_ticks = header.process_start_ticks;
  info.created_monotonic_ns = header.created_monotonic_ns;
  info.created_realtime_ns = header.created_realtime_ns;
  info.service_name = FixedString(header.service_name, kServiceNameSize);
  info.executable = FixedString(header.executable, kExecutableSize);
  return info;
}

uint64_t LoadWord(const uint64_t* word) {
  return __atomic_load_n(word, __ATOMIC_RELAXED);
}

// One slot's seqlock copy, run under GuardedCall: a truncation of the file
// turns the loads into a SIGBUS that GuardedCall reports as a failure.
struct SlotCopy {
  const uint8_t* slot;
  uint64_t committed;  // the sequence of the record we want
  uint32_t max_payload;
  uint64_t* buffer;
  uint64_t before = 0;  // sequence before the copy
  uint64_t after = 0;   // and after (valid when before == committed)
  uint64_t type_and_size = 0;
};

void CopySlot(void* p) {
  SlotCopy& c = *static_cast<SlotCopy*>(p);
  const auto* header = reinterpret_cast<const SlotHeader*>(c.slot);
  const auto* words = reinterpret_cast<const uint64_t*>(c.slot + 8);
  c.before = header->sequence.load(std::memory_order_acquire);
  if (c.before != c.committed) return;
  c.type_and_size = LoadWord(&words[0]);
  const uint32_t payload_size = static_cast<uint32_t>(c.type_and_size >> 32);
  if (payload_size <= c.max_payload) {
    const size_t word_count = (payload_size + 7) / 8;
    for (size_t w = 0; w < word_count; ++w) {
      c.buffer[w] = LoadWord(&words[1 + w]);
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  c.after = header->sequence.load(std::memory_order_relaxed);
}

absl::Status TruncatedUnderUs() {
  return absl::DataLossError(
      "ring file truncated while being read (SIGBUS caught); the file is "
      "abandoned");
}

// Per-ring reader state.
struct RingCursor {
  uint64_t position = 0;      // next record index to read
  uint64_t dropped_seen = 0;  // RingControl::dropped at the last poll
  bool stalling = false;      // `position` was uncommitted at stall_since_ns
  uint64_t stall_since_ns = 0;
  bool drained = false;  // position reached next_index at last poll
};

class MappedRingReader final : public RingReader {
 public:
  MappedRingReader(int fd, bip::mapped_region region, FileInfo info)
      : fd_(fd),
        region_(std::move(region)),
        base_(static_cast<const uint8_t*>(region_.get_address())),
        info_(std::move(info)),
        cursors_(info_.ring_count),
        buffer_((info_.slot_size - kSlotHeaderSize) / sizeof(uint64_t)) {}

  ~MappedRingReader() override { close(fd_); }

  const FileInfo& info() const override { return info_; }

  absl::Status Poll(const PollOptions& options, RecordVisitor& visitor,
                    PollStats& stats) override;

  bool Finished() const override { return finished_; }

  std::vector<uint64_t> Positions() const override {
    std::vector<uint64_t> out;
    for (const RingCursor& cursor : cursors_) out.push_back(cursor.position);
    return out;
  }

  absl::Status Resume(absl::Span<const uint64_t> positions) override;

 private:
  absl::Status DrainRing(uint32_t ring, const PollOptions& options,
                         uint64_t now_ns, uint32_t& budget,
                         RecordVisitor& visitor, PollStats& stats);

  const FileHeader& header() const {
    return *reinterpret_cast<const FileHeader*>(base_);
  }
  const RingControl& control(uint32_t ring) const {
    return reinterpret_cast<const RingControl*>(base_ + kHeaderSize)[ring];
  }
  const uint8_t* slot(uint32_t ring, uint64_t index) const {
    return base_ + SlotsOffsetFor(info_.ring_count) +
           (uint64_t{ring} * info_.slots_per_ring +
            (index & (info_.slots_per_ring - 1))) *
               info_.slot_size;
  }

  const int fd_;
  bip::mapped_region region_;
  const uint8_t* const base_;
  const FileInfo info_;
  std::vector<RingCursor> cursors_;
  std::vector<uint64_t> buffer_;  // one slot's payload, 8-byte aligned
  uint32_t next_first_ring_ = 0;
  bool finished_ = false;
  bool broken_ = false;
};

absl::Status MappedRingReader::Resume(absl::Span<const uint64_t> positions) {
  if (broken_) return absl::FailedPreconditionError("reader is unusable");
  if (positions.size() != info_.ring_count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%u saved positions for a file of %u rings",
                        positions.size(), info_.ring_count));
  }
  std::vector<uint64_t> dropped(info_.ring_count);
  for (uint32_t ring = 0; ring < info_.ring_count; ++ring) {
    const RingControl& ctl = control(ring);
    uint64_t next_index = 0;
    if (!GuardedLoadAcquire(reinterpret_cast<const uint64_t*>(&ctl.next_index),
                            &next_index) ||
        !GuardedLoadAcquire(reinterpret_cast<const uint64_t*>(&ctl.dropped),
                            &dropped[ring])) {
      broken_ = true;
      return TruncatedUnderUs();
    }
    if (positions[ring] > next_index) {
      return absl::InvalidArgumentError(
          absl::StrFormat("ring %u: saved position %u is beyond next_index %u",
                          ring, positions[ring], next_index));
    }
  }
  for (uint32_t ring = 0; ring < info_.ring_count; ++ring) {
    RingCursor& cursor = cursors_[ring];
    cursor = RingCursor();
    cursor.position = positions[ring];
    cursor.dropped_seen = dropped[ring];
  }
  return absl::OkStatus();
}

absl::Status MappedRingReader::Poll(const PollOptions& options,
                                    RecordVisitor& visitor, PollStats& stats) {
  if (broken_) {
    return absl::FailedPreconditionError(
        "ring file reader is unusable after an earlier error");
  }
  // A file truncated under the mapping would turn our next load into
  // SIGBUS; check first (FORMAT.md, "Reader obligations").
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    broken_ = true;
    return absl::ErrnoToStatus(errno, "fstat on ring file");
  }
  if (static_cast<uint64_t>(st.st_size) < info_.file_size) {
    broken_ = true;
    return absl::DataLossError(
        absl::StrFormat("ring file truncated to %d bytes (header says %u)",
                        st.st_size, info_.file_size));
  }

  // Read the flag before the cursors: if the process had ended by now, every
  // record it appended is behind the next_index values loaded below.
  uint32_t flags = 0;
  if (!GuardedLoadAcquire(reinterpret_cast<const uint32_t*>(&header().flags),
                          &flags)) {
    broken_ = true;
    return TruncatedUnderUs();
  }
  const bool ended = (flags & kFlagProcessEnded) != 0;
  const uint64_t now_ns =
      options.now_ns != 0 ? options.now_ns : ClockNs(CLOCK_MONOTONIC);
  uint32_t budget = options.max_records;
  const uint32_t first = next_first_ring_;
  next_first_ring_ = (next_first_ring_ + 1) % info_.ring_count;
  bool all_drained = true;
  for (uint32_t k = 0; k < info_.ring_count; ++k) {
    const uint32_t ring = (first + k) % info_.ring_count;
    absl::Status status =
        DrainRing(ring, options, now_ns, budget, visitor, stats);
    if (!status.ok()) {
      broken_ = true;
      return status;
    }
    all_drained = all_drained && cursors_[ring].drained;
  }
  finished_ = ended && all_drained;
  return absl::OkStatus();
}

absl::Status MappedRingReader::DrainRing(uint32_t ring,
                                         const PollOptions& options,
                                         uint64_t now_ns, uint32_t& budget,
                                         RecordVisitor& visitor,
                                         PollStats& stats) {
  RingCursor& cursor = cursors_[ring];
  const RingControl& ctl = control(ring);
  uint64_t dropped = 0;
  if (!GuardedLoadAcquire(reinterpret_cast<const uint64_t*>(&ctl.dropped),
                          &dropped)) {
    return TruncatedUnderUs();
  }
  if (dropped < cursor.dropped_seen) {
    return absl::DataLossError(
        absl::StrFormat("ring %u: dropped counter went backwards (%u < %u)",
                        ring, dropped, cursor.dropped_seen));
  }
  stats.writer_dropped += dropped - cursor.dropped_seen;
  cursor.dropped_seen = dropped;

  // Loads and validates next_index; if the writers lapped us, every record
  // older than one ring behind it has had its slot reused (or is having it
  // reused): count them lost and jump.
  uint64_t next_index = 0;
  auto load_next_index = [&]() -> absl::Status {
    if (!GuardedLoadAcquire(reinterpret_cast<const uint64_t*>(&ctl.next_index),
                            &next_index)) {
      return TruncatedUnderUs();
    }
    if (next_index > kMaxRecordIndex) {
      return absl::DataLossError(absl::StrFormat(
          "ring %u: next_index %u is impossibly large", ring, next_index));
    }
    if (next_index < cursor.position) {
      return absl::DataLossError(
          absl::StrFormat("ring %u: next_index went backwards (%u < %u)", ring,
                          next_index, cursor.position));
    }
    if (next_index - cursor.position > info_.slots_per_ring) {
      stats.lost += next_index - info_.slots_per_ring - cursor.position;
      cursor.position = next_index - info_.slots_per_ring;
      cursor.stalling = false;
    }
    return absl::OkStatus();
  };
  absl::Status status = load_next_index();
  if (!status.ok()) return status;

  const uint32_t max_payload = info_.slot_size - kSlotHeaderSize;
  // Bounds the work of one call even when writers outpace us forever (each
  // re-load of next_index above may extend the loop).
  uint64_t slots_left = 2 * uint64_t{info_.slots_per_ring};
  while (cursor.position < next_index && budget > 0 && slots_left-- > 0) {
    const uint64_t index = cursor.position;
    const uint64_t committed = kCommittedSequence(index);
    // Seqlock copy: read the sequence, copy, fence, re-read the sequence.
    SlotCopy copy{slot(ring, index), committed, max_payload, buffer_.data()};
    if (!GuardedCall(copy.slot, info_.slot_size, CopySlot, &copy)) {
      return TruncatedUnderUs();
    }
    const uint64_t before = copy.before;
    if (before > committed) {
      // A later lap took the slot: this record was overwritten, or its
      // writer gave up because the later lap got there first. The writers
      // are at least a lap ahead: catch up with them instead of chasing
      // them slot by slot.
      ++stats.lost;
      ++cursor.position;
      cursor.stalling = false;
      status = load_next_index();
      if (!status.ok()) return status;
      continue;
    }
    if (before != committed) {
      // Not committed yet: being written, or its writer gave up / stalled /
      // died. Wait for it, up to the stall timeout.
      if (!options.writer_dead) {
        if (!cursor.stalling) {
          cursor.stalling = true;
          cursor.stall_since_ns = now_ns;
          break;
        }
        if (now_ns - cursor.stall_since_ns <= options.stall_timeout_ns ||
            now_ns < cursor.stall_since_ns) {
          break;
        }
      }
      ++stats.lost;
      ++cursor.position;
      cursor.stalling = false;
      continue;
    }
    cursor.stalling = false;

    const uint32_t type = static_cast<uint32_t>(copy.type_and_size);
    const uint32_t payload_size =
        static_cast<uint32_t>(copy.type_and_size >> 32);
    const bool size_ok = payload_size <= max_payload;
    ++cursor.position;
    if (copy.after != before) {
      ++stats.lost;  // torn: overwritten while we copied
      continue;
    }
    // A stable committed slot with an impossible frame was not written by
    // a RingWriter.
    if (!size_ok) {
      return absl::DataLossError(
          absl::StrFormat("ring %u record %u: payload_size %u exceeds %u", ring,
                          index, payload_size, max_payload));
    }
    if (type == 0) {
      return absl::DataLossError(
          absl::StrFormat("ring %u record %u: record type 0", ring, index));
    }
    if (!IsKnownRecordType(type)) {
      ++stats.unknown_types;
      continue;
    }
    RecordView view;
    view.type = static_cast<RecordType>(type);
    view.ring = ring;
    view.index = index;
    view.payload = absl::MakeConstSpan(
        reinterpret_cast<const uint8_t*>(buffer_.data()), payload_size);
    visitor.OnRecord(view);
    ++stats.delivered;
    --budget;
  }
  cursor.drained = cursor.position == next_index;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Decoding.

}  // namespace

const char* RecordTypeName(RecordType type) {
  switch (type) {
    case RecordType::kAllocSample:
      return "AllocSample";
    case RecordType::kFreeSampled:
      return "FreeSampled";
    case RecordType::kCpuSample:
      return "CpuSample";
    case RecordType::kModuleMap:
      return "ModuleMap";
    case RecordType::kModuleUnmap:
      return "ModuleUnmap";
    case RecordType::kThreadName:
      return "ThreadName";
    case RecordType::kLabel:
      return "Label";
    case RecordType::kLostSamples:
      return "LostSamples";
    case RecordType::kProcessEnd:
      return "ProcessEnd";
    case RecordType::kThreadExit:
      return "ThreadExit";
    case RecordType::kLiveSweepEnd:
      return "LiveSweepEnd";
    case RecordType::kLiveSample:
      return "LiveSample";
    case RecordType::kTagSet:
      return "TagSet";
    case RecordType::kWaitSample:
      return "WaitSample";
    case RecordType::kEnvironmentFact:
      return "EnvironmentFact";
  }
  return "unknown";
}

namespace {

// Checks the type and that the payload holds at least the fixed part, then
// copies the fixed part out.
template <typename Head>
absl::Status DecodeHead(const RecordView& record, RecordType want, Head& head) {
  if (record.type != want) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: record has type %u", RecordTypeName(want),
                        static_cast<uint32_t>(record.type)));
  }
  if (record.payload.size() < sizeof(Head)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: payload_size %u is shorter than %u", RecordTypeName(want),
        record.payload.size(), sizeof(Head)));
  }
  memcpy(&head, record.payload.data(), sizeof(Head));
  return absl::OkStatus();
}

template <typename Head>
absl::StatusOr<Head> DecodeFixedOnly(const RecordView& record,
                                     RecordType want) {
  Head head;
  absl::Status status = DecodeHead(record, want, head);
  if (!status.ok()) return status;
  if (record.payload.size() != sizeof(Head)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: payload_size %u, want %u", RecordTypeName(want),
                        record.payload.size(), sizeof(Head)));
  }
  return head;
}

// Frames follow a fixed part whose size is a multiple of 8: they are
// 8-byte aligned whenever the payload is (the reader's buffer always is).
absl::StatusOr<absl::Span<const uint64_t>> DecodeFrames(
    const RecordView& record, RecordType want, size_t head_size,
    uint16_t frame_count) {
  const size_t tail = record.payload.size() - head_size;
  if (tail != size_t{frame_count} * sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: frame_count %u does not match the %u bytes after the header",
        RecordTypeName(want), frame_count, tail));
  }
  const uint8_t* frames = record.payload.data() + head_size;
  if (reinterpret_cast<uintptr_t>(frames) % alignof(uint64_t) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: payload is not 8-byte aligned", RecordTypeName(want)));
  }
  return absl::MakeConstSpan(reinterpret_cast<const uint64_t*>(frames),
                             frame_count);
}

}  // namespace

absl::StatusOr<AllocSampleView> DecodeAllocSample(const RecordView& record) {
  AllocSampleView view;
  absl::Status status = DecodeHead(record, RecordType::kAllocSample, view.head);
  if (!status.ok()) return status;
  absl::StatusOr<absl::Span<const uint64_t>> frames =
      DecodeFrames(record, RecordType::kAllocSample, sizeof(AllocSample),
                   view.head.frame_count);
  if (!frames.ok()) return frames.status();
  view.frames = *frames;
  return view;
}

absl::StatusOr<CpuSampleView> DecodeCpuSample(const RecordView& record) {
  CpuSampleView view;
  absl::Status status = DecodeHead(record, RecordType::kCpuSample, view.head);
  if (!status.ok()) return status;
  absl::StatusOr<absl::Span<const uint64_t>> frames = DecodeFrames(
      record, RecordType::kCpuSample, sizeof(CpuSample), view.head.frame_count);
  if (!frames.ok()) return frames.status();
  view.frames = *frames;
  return view;
}

absl::StatusOr<FreeSampled> DecodeFreeSampled(const RecordView& record) {
  return DecodeFixedOnly<FreeSampled>(record, RecordType::kFreeSampled);
}

absl::StatusOr<ModuleMapView> DecodeModuleMap(const RecordView& record) {
  ModuleMapView view;
  absl::Status status = DecodeHead(record, RecordType::kModuleMap, view.head);
  if (!status.ok()) return status;
  const ModuleMap& head = view.head;
  if (head.build_id_size > kMaxBuildIdSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ModuleMap: build_id_size %u exceeds %u",
                        head.build_id_size, kMaxBuildIdSize));
  }
  const size_t tail = record.payload.size() - sizeof(ModuleMap);
  if (head.path_size != tail) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ModuleMap: path_size %u does not match the %u bytes after the header",
        head.path_size, tail));
  }
  if (head.size == 0 || head.start + head.size < head.start) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ModuleMap: bad range start=%#x size=%u", head.start, head.size));
  }
  view.path = absl::string_view(
      reinterpret_cast<const char*>(record.payload.data()) + sizeof(ModuleMap),
      head.path_size);
  view.build_id =
      absl::MakeConstSpan(record.payload.data() + offsetof(ModuleMap, build_id),
                          head.build_id_size);
  return view;
}

absl::StatusOr<ModuleUnmap> DecodeModuleUnmap(const RecordView& record) {
  return DecodeFixedOnly<ModuleUnmap>(record, RecordType::kModuleUnmap);
}

absl::StatusOr<ThreadNameView> DecodeThreadName(const RecordView& record) {
  ThreadNameView view;
  absl::Status status = DecodeHead(record, RecordType::kThreadName, view.head);
  if (!status.ok()) return status;
  const size_t tail = record.payload.size() - sizeof(ThreadName);
  if (view.head.name_size != tail || tail > kMaxThreadNameSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ThreadName: name_size %u does not match the %u bytes after the "
        "header (at most %u)",
        view.head.name_size, tail, kMaxThreadNameSize));
  }
  view.name = absl::string_view(
      reinterpret_cast<const char*>(record.payload.data()) + sizeof(ThreadName),
      tail);
  return view;
}

absl::StatusOr<EnvironmentFactView> DecodeEnvironmentFact(
    const RecordView& record) {
  EnvironmentFactView view;
  absl::Status status =
      DecodeHead(record, RecordType::kEnvironmentFact, view.head);
  if (!status.ok()) return status;
  const size_t tail = record.payload.size() - sizeof(EnvironmentFact);
  if (view.head.detail_size != tail || tail > kMaxEnvironmentFactDetailSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "EnvironmentFact: detail_size %u does not match the %u bytes after "
        "the header (at most %u)",
        view.head.detail_size, tail, kMaxEnvironmentFactDetailSize));
  }
  if (view.head.kind == 0) {
    return absl::InvalidArgumentError("EnvironmentFact: kind 0");
  }
  view.detail =
      absl::string_view(reinterpret_cast<const char*>(record.payload.data()) +
                            sizeof(EnvironmentFact),
                        tail);
  return view;
}

absl::StatusOr<LabelView> DecodeLabel(const RecordView& record) {
  LabelView view;
  absl::Status status = DecodeHead(record, RecordType::kLabel, view.head);
  if (!status.ok()) return status;
  const size_t tail = record.payload.size() - sizeof(Label);
  if (size_t{view.head.key_size} + view.head.value_size != tail) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Label: key_size %u + value_size %u does not match the %u bytes "
        "after the header",
        view.head.key_size, view.head.value_size, tail));
  }
  const char* text =
      reinterpret_cast<const char*>(record.payload.data()) + sizeof(Label);
  view.key = absl::string_view(text, view.head.key_size);
  view.value =
      absl::string_view(text + view.head.key_size, view.head.value_size);
  return view;
}

absl::StatusOr<LostSamples> DecodeLostSamples(const RecordView& record) {
  return DecodeFixedOnly<LostSamples>(record, RecordType::kLostSamples);
}

absl::StatusOr<ProcessEnd> DecodeProcessEnd(const RecordView& record) {
  return DecodeFixedOnly<ProcessEnd>(record, RecordType::kProcessEnd);
}

absl::StatusOr<ThreadExit> DecodeThreadExit(const RecordView& record) {
  return DecodeFixedOnly<ThreadExit>(record, RecordType::kThreadExit);
}

absl::StatusOr<LiveSweepEnd> DecodeLiveSweepEnd(const RecordView& record) {
  return DecodeFixedOnly<LiveSweepEnd>(record, RecordType::kLiveSweepEnd);
}

absl::StatusOr<LiveSampleView> DecodeLiveSample(const RecordView& record) {
  LiveSampleView view;
  absl::Status status = DecodeHead(record, RecordType::kLiveSample, view.head);
  if (!status.ok()) return status;
  absl::StatusOr<absl::Span<const uint64_t>> frames =
      DecodeFrames(record, RecordType::kLiveSample, sizeof(LiveSample),
                   view.head.frame_count);
  if (!frames.ok()) return frames.status();
  view.frames = *frames;
  return view;
}

absl::StatusOr<TagSetView> DecodeTagSet(const RecordView& record) {
  TagSetView view;
  absl::Status status = DecodeHead(record, RecordType::kTagSet, view.head);
  if (!status.ok()) return status;
  const TagSet& head = view.head;
  if (head.id == 0 || head.count > kMaxTagsPerSet) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TagSet: id %u / count %u (want id >= 1, count <= %u)",
                        head.id, head.count, kMaxTagsPerSet));
  }
  const size_t tail = record.payload.size() - sizeof(TagSet);
  const size_t sizes_bytes = size_t{head.count} * sizeof(TagSizes);
  if (tail < sizes_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TagSet: count %u needs %u bytes of sizes, %u follow the header",
        head.count, sizes_bytes, tail));
  }
  const uint8_t* sizes = record.payload.data() + sizeof(TagSet);
  const char* text = reinterpret_cast<const char*>(sizes + sizes_bytes);
  size_t text_size = 0;
  for (uint16_t i = 0; i < head.count; ++i) {
    TagSizes pair;
    memcpy(&pair, sizes + i * sizeof(TagSizes), sizeof(pair));
    if (pair.key_size == 0 || pair.key_size > kMaxTagKeySize ||
        pair.value_size > kMaxTagValueSize) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "TagSet: tag %u has key_size %u, value_size %u (want 1..%u, <= %u)",
          i, pair.key_size, pair.value_size, kMaxTagKeySize, kMaxTagValueSize));
    }
    const size_t at = text_size;
    text_size += size_t{pair.key_size} + pair.value_size;
    if (text_size > tail - sizes_bytes) break;  // reported below
    view.tags.emplace_back(
        absl::string_view(text + at, pair.key_size),
        absl::string_view(text + at + pair.key_size, pair.value_size));
  }
  if (text_size != tail - sizes_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TagSet: key and value sizes add up to %u, %u bytes follow the sizes",
        text_size, tail - sizes_bytes));
  }
  for (size_t i = 0; i < view.tags.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (view.tags[i].first == view.tags[j].first) {
        return absl::InvalidArgumentError("TagSet: a key appears twice");
      }
    }
  }
  return view;
}

absl::StatusOr<WaitSampleView> DecodeWaitSample(const RecordView& record) {
  WaitSampleView view;
  absl::Status status = DecodeHead(record, RecordType::kWaitSample, view.head);
  if (!status.ok()) return status;
  const WaitSample& head = view.head;
  if (head.wait_ns == 0 || head.sample_ns == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("WaitSample: wait_ns %u / sample_ns %u (want >= 1)",
                        head.wait_ns, head.sample_ns));
  }
  if (head.kind != static_cast<uint16_t>(WaitKind::kLock) &&
      head.kind != static_cast<uint16_t>(WaitKind::kBlock)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("WaitSample: kind %u (want 1 or 2)", head.kind));
  }
  absl::StatusOr<absl::Span<const uint64_t>> frames = DecodeFrames(
      record, RecordType::kWaitSample, sizeof(WaitSample), head.frame_count);
  if (!frames.ok()) return frames.status();
  view.frames = *frames;
  return view;
}

absl::StatusOr<std::unique_ptr<RingReader>> RingReader::Open(
    const std::string& path) {
  // O_NONBLOCK: opening a FIFO planted at the path must not hang us.
  const int fd =
      open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is a symbolic link; ring files never are"));
    }
    return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  }
  auto fail = [fd](absl::Status status) {
    close(fd);
    return status;
  };
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return fail(absl::ErrnoToStatus(errno, absl::StrCat("fstat ", path)));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file")));
  }
  const uint64_t actual_size = static_cast<uint64_t>(st.st_size);
  if (actual_size < kHeaderSize) {
    // The writer sizes the file before writing the header: a short file is
    // one being created (or a truncated one; it stays not ready forever).
    return fail(absl::FailedPreconditionError(absl::StrFormat(
        "%s: header not ready (%u bytes, shorter than the header)", path,
        actual_size)));
  }

  // Map the header page alone first: the full size is known only after the
  // header is validated.
  FileHeader header;
  {
    absl::StatusOr<bip::mapped_region> page = MapReadOnly(fd, kHeaderSize);
    if (!page.ok()) return fail(page.status());
    const auto* page_header =
        static_cast<const FileHeader*>(page->get_address());
    // The ready word first (acquire), then a copy of the page; both guarded
    // against a truncation racing this open.
    uint32_t ready_word = 0;
    alignas(FileHeader) uint8_t raw[kHeaderSize];
    if (!GuardedLoadAcquire(
            reinterpret_cast<const uint32_t*>(&page_header->ready),
            &ready_word) ||
        !GuardedCopy(raw, page_header, kHeaderSize)) {
      return fail(absl::DataLossError(
          absl::StrCat(path, ": truncated while its header was read")));
    }
    const auto* mapped = reinterpret_cast<const FileHeader*>(raw);
    const bool ready = ready_word == kReadyMagic;
    // Copy field by field: the struct holds atomics.
    memcpy(header.magic, mapped->magic, sizeof(header.magic));
    if (!ready) {
      static constexpr char kZeros[8] = {};
      if (memcmp(header.magic, kMagic, 8) != 0 &&
          memcmp(header.magic, kZeros, 8) != 0) {
        return fail(absl::DataLossError(
            absl::StrCat(path, ": bad magic, not a ring file")));
      }
      return fail(absl::FailedPreconditionError(
          absl::StrCat(path, ": header not ready yet")));
    }
    if (memcmp(header.magic, kMagic, 8) != 0) {
      return fail(absl::DataLossError(
          absl::StrCat(path, ": bad magic, not a ring file")));
    }
    header.version = mapped->version;
    header.header_size = mapped->header_size;
    header.file_size = mapped->file_size;
    header.ring_count = mapped->ring_count;
    header.slots_per_ring = mapped->slots_per_ring;
    header.slot_size = mapped->slot_size;
    header.control_offset = mapped->control_offset;
    header.slots_offset = mapped->slots_offset;
    header.pid = mapped->pid;
    header.process_start_ticks = mapped->process_start_ticks;
    header.created_monotonic_ns = mapped->created_monotonic_ns;
    header.created_realtime_ns = mapped->created_realtime_ns;
    memcpy(header.service_name, mapped->service_name, kServiceNameSize);
    memcpy(header.executable, mapped->executable, kExecutableSize);
  }
  absl::StatusOr<FileInfo> info = ValidateHeader(header, actual_size);
  if (!info.ok()) {
    return fail(
        absl::Status(info.status().code(),
                     absl::StrCat(path, ": ", info.status().message())));
  }
  absl::StatusOr<bip::mapped_region> region = MapReadOnly(fd, info->file_size);
  if (!region.ok()) return fail(region.status());
  return std::unique_ptr<RingReader>(
      new MappedRingReader(fd, std::move(*region), std::move(*info)));
}

}  // namespace ringfile
}  // namespace ringprof
