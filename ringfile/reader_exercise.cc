#include "ringfile/reader_exercise.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/record_dispatch.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace testing {
namespace {

// Reads every decoded byte, so a bad span would be caught by ASan.
class TouchingHandler : public RecordHandler {
 public:
  void OnAllocSample(const RecordView&, const AllocSampleView& view) override {
    for (uint64_t frame : view.frames) touched_ += frame;
  }
  void OnModuleMap(const RecordView&, const ModuleMapView& view) override {
    touched_ += std::string(view.path).size();
    for (uint8_t byte : view.build_id) touched_ += byte;
  }
  void OnThreadName(const RecordView&, const ThreadNameView& view) override {
    touched_ += std::string(view.name).size();
  }
  void OnLabel(const RecordView&, const LabelView& view) override {
    touched_ += absl::StrCat(view.key, view.value).size();
  }
  void OnLiveSample(const RecordView&, const LiveSampleView& view) override {
    for (uint64_t frame : view.frames) touched_ += frame;
  }
  void OnWaitSample(const RecordView&, const WaitSampleView& view) override {
    for (uint64_t frame : view.frames) touched_ += frame;
  }
  void OnTagSet(const RecordView&, const TagSetView& view) override {
    for (const auto& [key, value] : view.tags) {
      touched_ += key.size() + value.size();
    }
  }
  void OnEnvironmentFact(const RecordView&,
                         const EnvironmentFactView& view) override {
    touched_ += std::string(view.detail).size();
  }

 private:
  uint64_t touched_ = 0;
};

class DecodingVisitor : public RecordVisitor {
 public:
  explicit DecodingVisitor(ExerciseResult& result) : result_(result) {}

  void OnRecord(const RecordView& record) override {
    if (DispatchRecord(record, handler_).ok()) {
      ++result_.decoded;
    } else {
      ++result_.decode_errors;
    }
  }

 private:
  ExerciseResult& result_;
  TouchingHandler handler_;
};

std::string BuildTemplate() {
  const char* dir = getenv("TEST_TMPDIR");
  const std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/ring-template.", getpid());
  unlink(path.c_str());
  WriterOptions options;
  options.path = path.c_str();
  options.ring_count = 2;
  options.slots_per_ring = 4;
  options.slot_size = 256;
  options.service_name = "fuzz";
  options.executable = "/bin/fuzz";
  RingWriter writer;
  if (writer.Create(options) != 0) abort();

  AllocSample alloc = {};
  alloc.tid = 1;
  alloc.frame_count = 3;
  alloc.weight_bytes = 4096;
  const uint64_t frames[3] = {0x401000, 0x402000, 0x403000};
  writer.TryAppend(RecordType::kAllocSample, &alloc, sizeof(alloc), frames,
                   sizeof(frames), 0);
  CpuSample cpu = {};
  cpu.frame_count = 1;
  writer.TryAppend(RecordType::kCpuSample, &cpu, sizeof(cpu), frames, 8, 0);
  WaitSample wait = {};
  wait.frame_count = 2;
  wait.wait_ns = 1000;
  wait.sample_ns = 1000000;
  wait.kind = static_cast<uint16_t>(WaitKind::kLock);
  writer.TryAppend(RecordType::kWaitSample, &wait, sizeof(wait), frames, 16, 1);
  ModuleMap module = {};
  module.start = 0x400000;
  module.size = 0x10000;
  module.build_id_size = 4;
  const char kPath[] = "/bin/fuzz";
  module.path_size = sizeof(kPath) - 1;
  writer.TryAppend(RecordType::kModuleMap, &module, sizeof(module), kPath,
                   module.path_size, 0);
  ThreadName name = {};
  name.name_size = 4;
  writer.TryAppend(RecordType::kThreadName, &name, sizeof(name), "main", 4, 0);
  // Ring 0 laps twice (6 records in 4 slots); ring 1 below five times (9).
  Label label = {};
  label.key_size = 1;
  label.value_size = 2;
  writer.TryAppend(RecordType::kLabel, &label, sizeof(label), "kvv", 3, 0);
  TagSet tag_set = {};
  tag_set.id = 1;
  tag_set.count = 1;
  const uint8_t kTags[] = {2, 0, 3, 0, 'e', 'p', '/', 'a', 'b'};
  writer.TryAppend(RecordType::kTagSet, &tag_set, sizeof(tag_set), kTags,
                   sizeof(kTags), 0);
  FreeSampled free_sampled = {};
  writer.TryAppend(RecordType::kFreeSampled, &free_sampled,
                   sizeof(free_sampled), nullptr, 0, 1);
  ModuleUnmap unmap = {};
  writer.TryAppend(RecordType::kModuleUnmap, &unmap, sizeof(unmap), nullptr, 0,
                   1);
  LostSamples lost = {};
  writer.TryAppend(RecordType::kLostSamples, &lost, sizeof(lost), nullptr, 0,
                   1);
  ThreadExit thread_exit = {};
  writer.TryAppend(RecordType::kThreadExit, &thread_exit, sizeof(thread_exit),
                   nullptr, 0, 1);
  LiveSample live = {};
  live.frame_count = 2;
  writer.TryAppend(RecordType::kLiveSample, &live, sizeof(live), frames, 16, 1);
  LiveSweepEnd sweep_end = {};
  writer.TryAppend(RecordType::kLiveSweepEnd, &sweep_end, sizeof(sweep_end),
                   nullptr, 0, 1);
  ProcessEnd end = {};
  writer.TryAppend(RecordType::kProcessEnd, &end, sizeof(end), nullptr, 0, 1);
  EnvironmentFact fact = {};
  fact.kind = static_cast<uint16_t>(EnvironmentFactKind::kLibc);
  fact.detail_size = 4;
  writer.TryAppend(RecordType::kEnvironmentFact, &fact, sizeof(fact), "musl", 4,
                   1);
  writer.MarkProcessEnded();
  writer.Close();

  std::string bytes(FileSizeFor(2, 4, 256), '\0');
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || pread(fd, &bytes[0], bytes.size(), 0) !=
                    static_cast<ssize_t>(bytes.size())) {
    abort();
  }
  close(fd);
  unlink(path.c_str());
  return bytes;
}

}  // namespace

ExerciseResult ExerciseRingFile(const std::string& path, int max_polls) {
  ExerciseResult result;
  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  result.open_status = reader.status();
  if (!reader.ok()) return result;
  DecodingVisitor visitor(result);
  PollStats stats;
  PollOptions options;
  options.writer_dead = true;
  options.max_records = 16;
  for (int i = 0; i < max_polls && !(*reader)->Finished(); ++i) {
    const uint64_t before = stats.delivered + stats.lost + stats.unknown_types;
    ++result.polls;
    absl::Status status = (*reader)->Poll(options, visitor, stats);
    if (!status.ok()) {
      result.poll_status = status;
      break;
    }
    if (stats.delivered + stats.lost + stats.unknown_types == before) break;
  }
  result.delivered = stats.delivered;
  result.lost = stats.lost;
  return result;
}

const std::string& TemplateRingFile() {
  static const std::string* const bytes = new std::string(BuildTemplate());
  return *bytes;
}

void WriteWholeFile(const std::string& path, absl::Span<const uint8_t> bytes) {
  // A new file rather than O_TRUNC: ext4 flushes a file truncated to zero
  // and rewritten when it is closed (auto_da_alloc), which would make every
  // iteration wait for the disk.
  unlink(path.c_str());
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) abort();
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

}  // namespace testing
}  // namespace ringfile
}  // namespace ringprof
