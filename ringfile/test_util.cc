#include "ringfile/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace ringfile {
namespace testing {

std::string TempRingPath(absl::string_view name) {
  static std::atomic<int> counter{0};
  const char* dir = getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, ".", getpid(),
                      ".", counter.fetch_add(1), ".ring");
}

WriterOptions TestWriterOptions(const std::string& path) {
  WriterOptions options;
  options.path = path.c_str();
  options.ring_count = 2;
  options.slots_per_ring = 64;
  options.slot_size = 1152;
  options.service_name = "test-service";
  options.executable = "/usr/bin/test-program";
  options.pid = 4242;
  options.process_start_ticks = 12345;
  return options;
}

bool AppendAllocSample(RingWriter& writer, AllocSample head,
                       absl::Span<const uint64_t> frames, uint32_t shard) {
  head.frame_count = static_cast<uint16_t>(frames.size());
  return writer.TryAppend(RecordType::kAllocSample, &head, sizeof(head),
                          frames.data(),
                          static_cast<uint32_t>(frames.size() * 8), shard);
}

bool AppendCpuSample(RingWriter& writer, CpuSample head,
                     absl::Span<const uint64_t> frames, uint32_t shard) {
  head.frame_count = static_cast<uint16_t>(frames.size());
  return writer.TryAppend(RecordType::kCpuSample, &head, sizeof(head),
                          frames.data(),
                          static_cast<uint32_t>(frames.size() * 8), shard);
}

bool AppendModuleMap(RingWriter& writer, ModuleMap head, absl::string_view path,
                     absl::Span<const uint8_t> build_id, uint32_t shard) {
  head.path_size = static_cast<uint16_t>(path.size());
  head.build_id_size =
      static_cast<uint8_t>(std::min<size_t>(build_id.size(), kMaxBuildIdSize));
  memset(head.build_id, 0, sizeof(head.build_id));
  memcpy(head.build_id, build_id.data(), head.build_id_size);
  return writer.TryAppend(RecordType::kModuleMap, &head, sizeof(head),
                          path.data(), static_cast<uint32_t>(path.size()),
                          shard);
}

bool AppendThreadName(RingWriter& writer, ThreadName head,
                      absl::string_view name, uint32_t shard) {
  head.name_size = static_cast<uint16_t>(name.size());
  return writer.TryAppend(RecordType::kThreadName, &head, sizeof(head),
                          name.data(), static_cast<uint32_t>(name.size()),
                          shard);
}

bool AppendLabel(RingWriter& writer, Label head, absl::string_view key,
                 absl::string_view value, uint32_t shard) {
  head.key_size = static_cast<uint16_t>(key.size());
  head.value_size = static_cast<uint16_t>(value.size());
  std::string text = absl::StrCat(key, value);
  return writer.TryAppend(RecordType::kLabel, &head, sizeof(head), text.data(),
                          static_cast<uint32_t>(text.size()), shard);
}

RecordView OwnedRecord::view() const {
  RecordView v;
  v.type = type;
  v.ring = ring;
  v.index = index;
  v.payload = absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(storage.data()), payload_size);
  return v;
}

namespace {
class CollectingVisitor : public RecordVisitor {
 public:
  explicit CollectingVisitor(std::vector<OwnedRecord>& out) : out_(out) {}
  void OnRecord(const RecordView& record) override {
    OwnedRecord owned;
    owned.type = record.type;
    owned.ring = record.ring;
    owned.index = record.index;
    owned.payload_size = static_cast<uint32_t>(record.payload.size());
    // At least one word, so that payload.data() is never null.
    owned.storage.resize((record.payload.size() + 7) / 8 + 1);
    if (!record.payload.empty()) {
      memcpy(owned.storage.data(), record.payload.data(),
             record.payload.size());
    }
    out_.push_back(std::move(owned));
  }

 private:
  std::vector<OwnedRecord>& out_;
};
}  // namespace

std::string RingFileIn(const std::string& dir) {
  std::string found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      if (absl::EndsWith(entry->d_name, ".ring")) {
        found = dir + "/" + entry->d_name;
      }
    }
    closedir(d);
  }
  return found;
}

absl::StatusOr<std::vector<OwnedRecord>> ReadAllRecords(const std::string& path,
                                                        PollStats* stats) {
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::vector<OwnedRecord> records;
  CollectingVisitor visitor(records);
  PollStats local;
  PollOptions options;
  options.writer_dead = true;
  // Each poll with writer_dead makes progress on every ring; a ring holds
  // at most kMaxSlotsPerRing records, so this loop is bounded.
  for (;;) {
    const uint64_t before = local.delivered + local.lost + local.unknown_types;
    absl::Status status = (*reader)->Poll(options, visitor, local);
    if (!status.ok()) return status;
    if (local.delivered + local.lost + local.unknown_types == before) break;
  }
  if (stats != nullptr) *stats = local;
  return records;
}

void PatchFile(const std::string& path, uint64_t offset,
               absl::Span<const uint8_t> bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
}

}  // namespace testing
}  // namespace ringfile
}  // namespace ringprof
