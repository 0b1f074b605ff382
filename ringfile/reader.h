// RingReader: reads a ring file written by another process.
//
// The file is untrusted: every length, offset and count is bounds-checked;
// a corrupt or truncated file yields an absl::Status naming the problem,
// never a crash, hang or unbounded allocation. Torn records (overwritten
// while being copied) are detected with a seqlock re-check and counted as
// lost, as are gaps (lapped records, records of a writer that died or stalled
// mid-append, records the writer dropped).
//
// Thread-compatible: one thread uses a reader at a time.
#ifndef RINGPROF_RINGFILE_READER_H_
#define RINGPROF_RINGFILE_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ringfile/format.h"

namespace ringprof {
namespace ringfile {

// A validated copy of the header.
struct FileInfo {
  uint32_t version = 0;
  uint64_t file_size = 0;
  uint32_t ring_count = 0;
  uint32_t slots_per_ring = 0;
  uint32_t slot_size = 0;
  uint32_t pid = 0;
  uint64_t process_start_ticks = 0;
  uint64_t created_monotonic_ns = 0;
  uint64_t created_realtime_ns = 0;
  std::string service_name;
  std::string executable;
  // Wall-clock nanoseconds for a CLOCK_MONOTONIC timestamp of this process.
  int64_t ToRealtimeNs(uint64_t monotonic_ns) const {
    return static_cast<int64_t>(created_realtime_ns) +
           (static_cast<int64_t>(monotonic_ns) -
            static_cast<int64_t>(created_monotonic_ns));
  }
};

// One delivered record. `payload` points into the reader's buffer and is
// valid only during the visitor call.
struct RecordView {
  RecordType type;
  uint32_t ring = 0;
  uint64_t index = 0;
  absl::Span<const uint8_t> payload;
};

// The record type's name as FORMAT.md spells it ("AllocSample", ...);
// "unknown" for a type this reader does not know.
const char* RecordTypeName(RecordType type);

// Decoded views; spans point into RecordView::payload.
struct AllocSampleView {
  AllocSample head;
  absl::Span<const uint64_t> frames;  // frames[0] = leaf
};
struct CpuSampleView {
  CpuSample head;
  absl::Span<const uint64_t> frames;
};
struct WaitSampleView {
  WaitSample head;
  absl::Span<const uint64_t> frames;
};
struct ModuleMapView {
  ModuleMap head;
  absl::string_view path;
  absl::Span<const uint8_t> build_id;
};
struct LiveSampleView {
  LiveSample head;
  absl::Span<const uint64_t> frames;
};
struct ThreadNameView {
  ThreadName head;
  absl::string_view name;
};
struct LabelView {
  Label head;
  absl::string_view key;
  absl::string_view value;
};
struct EnvironmentFactView {
  EnvironmentFact head;
  absl::string_view detail;  // not validated as UTF-8
};

struct TagSetView {
  TagSet head;
  // Key/value pairs in record order; bytes as written (not checked for
  // UTF-8: the collector sanitizes them).
  absl::InlinedVector<std::pair<absl::string_view, absl::string_view>,
                      kMaxTagsPerSet>
      tags;
};

// Each returns InvalidArgument (naming the record type and the bad field)
// when the payload is malformed.
absl::StatusOr<AllocSampleView> DecodeAllocSample(const RecordView& record);
absl::StatusOr<CpuSampleView> DecodeCpuSample(const RecordView& record);
absl::StatusOr<FreeSampled> DecodeFreeSampled(const RecordView& record);
absl::StatusOr<ModuleMapView> DecodeModuleMap(const RecordView& record);
absl::StatusOr<ModuleUnmap> DecodeModuleUnmap(const RecordView& record);
absl::StatusOr<ThreadNameView> DecodeThreadName(const RecordView& record);
absl::StatusOr<LabelView> DecodeLabel(const RecordView& record);
absl::StatusOr<LostSamples> DecodeLostSamples(const RecordView& record);
absl::StatusOr<ProcessEnd> DecodeProcessEnd(const RecordView& record);
absl::StatusOr<ThreadExit> DecodeThreadExit(const RecordView& record);
absl::StatusOr<LiveSweepEnd> DecodeLiveSweepEnd(const RecordView& record);
absl::StatusOr<LiveSampleView> DecodeLiveSample(const RecordView& record);
// Also rejects id 0, more than kMaxTagsPerSet tags, empty or oversized keys
// and values, and a key that appears twice.
absl::StatusOr<TagSetView> DecodeTagSet(const RecordView& record);
// Also rejects wait_ns or sample_ns of 0 and an unknown kind.
absl::StatusOr<WaitSampleView> DecodeWaitSample(const RecordView& record);
absl::StatusOr<EnvironmentFactView> DecodeEnvironmentFact(
    const RecordView& record);

struct PollOptions {
  // Upper bound of records delivered by one Poll (keeps a call bounded).
  uint32_t max_records = 1u << 16;
  // The reader's clock now (any monotonic nanosecond clock, used only to
  // time stalls; 0 = read CLOCK_MONOTONIC); a slot that stays uncommitted
  // behind the write cursor for longer than stall_timeout_ns is skipped as
  // lost.
  uint64_t now_ns = 0;
  uint64_t stall_timeout_ns = 1'000'000'000;
  // Set when the writer process is known dead: uncommitted slots are skipped
  // at once instead of after stall_timeout_ns.
  bool writer_dead = false;
};

struct PollStats {
  uint64_t delivered = 0;
  uint64_t lost = 0;            // gaps: lapped, torn, stalled, dead writer
  uint64_t writer_dropped = 0;  // growth of RingControl::dropped
  uint64_t unknown_types = 0;   // skipped records of a newer type
};

class RecordVisitor {
 public:
  virtual ~RecordVisitor() = default;
  virtual void OnRecord(const RecordView& record) = 0;
};

class RingReader {
 public:
  // Maps `path` read-only and validates its header. FailedPrecondition while
  // the header is not ready yet (retry later); DataLoss / InvalidArgument for
  // a corrupt, truncated or unknown-version file.
  static absl::StatusOr<std::unique_ptr<RingReader>> Open(
      const std::string& path);

  virtual ~RingReader() = default;
  virtual const FileInfo& info() const = 0;

  // Delivers newly committed records (per ring, in index order; rings are
  // visited round-robin) and accumulates loss into `stats`. Bounded: at
  // most max_records deliveries and 2 * slots_per_ring slots examined per
  // ring. An error means the file became unusable (e.g. truncated under us,
  // counters going backwards); later calls fail too; stats stay valid.
  virtual absl::Status Poll(const PollOptions& options, RecordVisitor& visitor,
                            PollStats& stats) = 0;

  // True once kFlagProcessEnded is set and every ring is drained.
  virtual bool Finished() const = 0;

  // The next record index each ring's cursor expects (one per ring).
  virtual std::vector<uint64_t> Positions() const = 0;

  // Continues at positions an earlier reader of the same file reached
  // (e.g. a collector before its restart): records below them are neither
  // delivered nor counted; those overwritten since count as lost on the
  // next Poll. The writer-dropped counters start from their current values.
  // InvalidArgument (nothing changed) when `positions` does not fit this
  // file: another ring count, or beyond a ring's next_index.
  virtual absl::Status Resume(absl::Span<const uint64_t> positions) = 0;
};

}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_READER_H_
