// Test utilities for code that reads or writes ring files: typed appends,
// synthetic ring files in the test's temporary directory, and a
// function that reads every record. Test-only (allocates, uses gtest's temp
// dir).
//
// Typical golden test of a ring consumer:
//
//   std::string path = TempRingPath("golden");
//   RingWriter writer;
//   ASSERT_EQ(writer.Create(TestWriterOptions(path)), 0);
//   ModuleMap module = {};
//   module.start = 0x1000;
//   module.size = 0x2000;
//   AppendModuleMap(writer, module, "/bin/app", {});
//   AllocSample sample = {};
//   sample.tid = 7;
//   sample.weight_bytes = 512 << 10;
//   const uint64_t frames[] = {0x1010, 0x1200};
//   AppendAllocSample(writer, sample, frames);
//   writer.Close();
//   ... run the consumer on `path` ...
#ifndef RINGPROF_RINGFILE_TEST_UTIL_H_
#define RINGPROF_RINGFILE_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace testing {

// A fresh, not yet existing path under $TEST_TMPDIR (or /tmp), unique per
// call within the process.
std::string TempRingPath(absl::string_view name);

// Small rings (2 rings x 64 slots x 1152 bytes) writing to `path`.
WriterOptions TestWriterOptions(const std::string& path);

// Typed appends. Each returns RingWriter::TryAppend's result. The head's
// counts (frame_count, path_size, ...) are filled in from the tails.
bool AppendAllocSample(RingWriter& writer, AllocSample head,
                       absl::Span<const uint64_t> frames, uint32_t shard = 0);
bool AppendCpuSample(RingWriter& writer, CpuSample head,
                     absl::Span<const uint64_t> frames, uint32_t shard = 0);
bool AppendModuleMap(RingWriter& writer, ModuleMap head, absl::string_view path,
                     absl::Span<const uint8_t> build_id, uint32_t shard = 0);
bool AppendThreadName(RingWriter& writer, ThreadName head,
                      absl::string_view name, uint32_t shard = 0);
bool AppendLabel(RingWriter& writer, Label head, absl::string_view key,
                 absl::string_view value, uint32_t shard = 0);
// FreeSampled, ModuleUnmap, LostSamples, ProcessEnd, ThreadExit.
template <typename Fixed>
bool AppendFixed(RingWriter& writer, RecordType type, const Fixed& record,
                 uint32_t shard = 0) {
  return writer.TryAppend(type, &record, sizeof(record), nullptr, 0, shard);
}

// A delivered record copied out of the reader's buffer.
struct OwnedRecord {
  RecordType type;
  uint32_t ring = 0;
  uint64_t index = 0;
  std::vector<uint64_t> storage;  // 8-byte aligned copy of the payload
  uint32_t payload_size = 0;
  RecordView view() const;
};

// The path of a `*.ring` file in `dir` (the last one listed), "" if none:
// for tests whose process wrote exactly one.
std::string RingFileIn(const std::string& dir);

// Opens `path` and polls it (writer treated as dead, so nothing is waited
// for) until every ring is drained; returns the records in delivery order.
absl::StatusOr<std::vector<OwnedRecord>> ReadAllRecords(
    const std::string& path, PollStats* stats = nullptr);

// Overwrites `bytes` at `offset` of an existing file (corruption tests).
void PatchFile(const std::string& path, uint64_t offset,
               absl::Span<const uint8_t> bytes);

template <typename T>
void PatchValue(const std::string& path, uint64_t offset, const T& value) {
  PatchFile(path, offset,
            absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(&value),
                                sizeof(value)));
}

}  // namespace testing
}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_TEST_UTIL_H_
