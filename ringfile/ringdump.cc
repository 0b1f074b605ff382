// ringdump: prints a ring file's header and records in readable form; the
// one implementation behind `tools/ringdump` (//ringfile:ringdump) and
// `ringprof dump` (see ringdump.h).
#include "ringfile/ringdump.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "ringfile/format.h"
#include "ringfile/reader.h"
#include "ringfile/record_dispatch.h"

namespace ringprof {
namespace ringfile {
namespace {

volatile sig_atomic_t g_interrupted = 0;

std::string Quoted(absl::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      absl::StrAppend(&out, "\\", std::string(1, static_cast<char>(c)));
    } else if (c < 0x20 || c >= 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

// " tags=N span=HEX" for a sample that has them.
std::string TagsOf(uint32_t tag_set, uint64_t span_id) {
  std::string out;
  if (tag_set != 0) absl::StrAppendFormat(&out, " tags=%u", tag_set);
  if (span_id != 0) absl::StrAppendFormat(&out, " span=%016x", span_id);
  return out;
}

std::string Frames(absl::Span<const uint64_t> frames) {
  std::string out;
  for (size_t i = 0; i < frames.size(); ++i) {
    absl::StrAppendFormat(&out, "\n    #%-3d 0x%016x", i, frames[i]);
  }
  return out;
}

std::string WallTime(int64_t realtime_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ",
                          absl::FromUnixNanos(realtime_ns),
                          absl::UTCTimeZone());
}

// One line per record (records with frames add one line per frame).
class Describer : public RecordHandler {
 public:
  explicit Describer(const FileInfo& info) : info_(info) {}
  const std::string& line() const { return line_; }

  void OnAllocSample(const RecordView&, const AllocSampleView& r) override {
    line_ = absl::StrFormat(
        "%s AllocSample tid=%u size=%u weight=%u address=%#x "
        "frames=%u%s%s%s%s",
        Time(r.head.monotonic_ns), r.head.tid, r.head.requested_size,
        r.head.weight_bytes, r.head.address, r.head.frame_count,
        TagsOf(r.head.tag_set, r.head.span_id),
        (r.head.flags & kSampleTruncated) ? " truncated" : "",
        (r.head.flags & kSampleTimingOnly) ? " timing-only" : "",
        Frames(r.frames));
  }
  void OnCpuSample(const RecordView&, const CpuSampleView& r) override {
    line_ = absl::StrFormat(
        "%s CpuSample tid=%u period=%uns frames=%u%s%s%s%s",
        Time(r.head.monotonic_ns), r.head.tid, r.head.cpu_period_ns,
        r.head.frame_count, TagsOf(r.head.tag_set, r.head.span_id),
        (r.head.flags & kSampleTruncated) ? " truncated" : "",
        (r.head.flags & kSampleAtAllocation) ? " at_allocation" : "",
        (r.head.flags & kSampleThreadNotSampled) ? " thread_not_sampled" : "",
        Frames(r.frames));
  }
  void OnFreeSampled(const RecordView&, const FreeSampled& r) override {
    line_ = absl::StrFormat("%s FreeSampled tid=%u address=%#x",
                            Time(r.monotonic_ns), r.tid, r.address);
  }
  void OnModuleMap(const RecordView&, const ModuleMapView& r) override {
    std::string build_id;
    for (uint8_t byte : r.build_id) {
      absl::StrAppendFormat(&build_id, "%02x", byte);
    }
    line_ = absl::StrFormat(
        "%s ModuleMap %#x-%#x offset=%#x bias=%#x build_id=%s path=%s",
        Time(r.head.monotonic_ns), r.head.start, r.head.start + r.head.size,
        r.head.file_offset, r.head.load_bias, build_id.empty() ? "-" : build_id,
        Quoted(r.path));
  }
  void OnModuleUnmap(const RecordView&, const ModuleUnmap& r) override {
    line_ = absl::StrFormat("%s ModuleUnmap %#x-%#x", Time(r.monotonic_ns),
                            r.start, r.start + r.size);
  }
  void OnThreadName(const RecordView&, const ThreadNameView& r) override {
    line_ =
        absl::StrFormat("%s ThreadName tid=%u name=%s",
                        Time(r.head.monotonic_ns), r.head.tid, Quoted(r.name));
  }
  void OnLabel(const RecordView&, const LabelView& r) override {
    line_ = absl::StrFormat("%s Label %s=%s", Time(r.head.monotonic_ns),
                            Quoted(r.key), Quoted(r.value));
  }
  void OnLostSamples(const RecordView&, const LostSamples& r) override {
    line_ = absl::StrFormat("%s LostSamples samples=%u weight=%u",
                            Time(r.monotonic_ns), r.samples, r.weight_bytes);
  }
  void OnProcessEnd(const RecordView&, const ProcessEnd& r) override {
    line_ = absl::StrFormat("%s ProcessEnd exit_status=%d",
                            Time(r.monotonic_ns), r.exit_status);
  }
  void OnTagSet(const RecordView&, const TagSetView& r) override {
    std::string tags;
    for (const auto& [key, value] : r.tags) {
      absl::StrAppend(&tags, " ", Quoted(key), "=", Quoted(value));
    }
    line_ = absl::StrFormat("%s TagSet id=%u%s", Time(r.head.monotonic_ns),
                            r.head.id, tags);
  }
  void OnEnvironmentFact(const RecordView&,
                         const EnvironmentFactView& r) override {
    line_ = absl::StrFormat(
        "%s EnvironmentFact %s %s", Time(r.head.monotonic_ns),
        DescribeEnvironmentFact(r.head.kind).name, Quoted(r.detail));
  }
  void OnThreadExit(const RecordView&, const ThreadExit& r) override {
    line_ =
        absl::StrFormat("%s ThreadExit tid=%u", Time(r.monotonic_ns), r.tid);
  }
  void OnLiveSweepEnd(const RecordView&, const LiveSweepEnd& r) override {
    line_ = absl::StrFormat(
        "%s LiveSweepEnd sweep=%u began=%s entries=%u untracked=%u",
        Time(r.monotonic_ns), r.sweep_id, Time(r.begin_ns), r.entries,
        r.untracked);
  }
  void OnLiveSample(const RecordView&, const LiveSampleView& r) override {
    line_ = absl::StrFormat(
        "%s LiveSample sweep=%u allocated=%s tid=%u size=%u weight=%u "
        "address=%#x frames=%u%s",
        Time(r.head.monotonic_ns), r.head.sweep_id, Time(r.head.alloc_ns),
        r.head.tid, r.head.requested_size, r.head.weight_bytes, r.head.address,
        r.head.frame_count, Frames(r.frames));
  }
  void OnWaitSample(const RecordView&, const WaitSampleView& r) override {
    line_ = absl::StrFormat(
        "%s WaitSample %s tid=%u wait=%uns rate=%uns frames=%u%s%s%s",
        Time(r.head.monotonic_ns),
        r.head.kind == static_cast<uint16_t>(WaitKind::kLock) ? "lock"
                                                              : "block",
        r.head.tid, r.head.wait_ns, r.head.sample_ns, r.head.frame_count,
        TagsOf(r.head.tag_set, r.head.span_id),
        (r.head.flags & kSampleTruncated) ? " truncated" : "",
        Frames(r.frames));
  }
  void OnMalformed(const RecordView&, const absl::Status& status) override {
    line_ = absl::StrCat("MALFORMED: ", status.message());
  }
  void OnUnknownType(const RecordView& record) override {
    line_ = absl::StrFormat("type %u (unknown)",
                            static_cast<uint32_t>(record.type));
  }

 private:
  // "+seconds since the file was created" keeps lines short and comparable.
  std::string Time(uint64_t monotonic_ns) const {
    const int64_t delta = static_cast<int64_t>(monotonic_ns) -
                          static_cast<int64_t>(info_.created_monotonic_ns);
    return absl::StrFormat("%+.6fs", delta / 1e9);
  }

  const FileInfo& info_;
  std::string line_;
};

class PrintingVisitor : public RecordVisitor {
 public:
  PrintingVisitor(const FileInfo& info, bool quiet)
      : info_(info), quiet_(quiet) {}

  void OnRecord(const RecordView& record) override {
    ++count_;
    ++by_type_[record.type];
    if (quiet_) return;
    printf("[ring %u #%" PRIu64 "] %s\n", record.ring, record.index,
           Describe(record).c_str());
  }

  uint64_t count() const { return count_; }
  const std::map<RecordType, uint64_t>& by_type() const { return by_type_; }

 private:
  std::string Describe(const RecordView& record) const {
    Describer describer(info_);
    DispatchRecord(record, describer).IgnoreError();  // it says MALFORMED
    return describer.line();
  }

  const FileInfo& info_;
  const bool quiet_;
  uint64_t count_ = 0;
  std::map<RecordType, uint64_t> by_type_;
};

void PrintHeader(const std::string& path, const FileInfo& info) {
  printf("file           %s\n", path.c_str());
  printf("version        %u\n", info.version);
  printf("layout         %u rings x %u slots x %u bytes (%" PRIu64
         " bytes, max payload %u)\n",
         info.ring_count, info.slots_per_ring, info.slot_size, info.file_size,
         info.slot_size - kSlotHeaderSize);
  printf("pid            %u (start ticks %" PRIu64 ")\n", info.pid,
         info.process_start_ticks);
  printf("service        %s\n", Quoted(info.service_name).c_str());
  printf("executable     %s\n", Quoted(info.executable).c_str());
  printf("created        %s (monotonic %" PRIu64 " ns)\n",
         WallTime(static_cast<int64_t>(info.created_realtime_ns)).c_str(),
         info.created_monotonic_ns);
  printf("\n");
}

}  // namespace

int RingDump(const std::vector<std::string>& args, absl::string_view program) {
  const std::string name(program);
  auto usage = [&name] {
    fprintf(stderr, "usage: %s [--follow] [--max=N] [--quiet] FILE\n",
            name.c_str());
    return 1;
  };
  bool follow = false, quiet = false;
  uint64_t max_records = UINT64_MAX;
  std::string path;
  for (absl::string_view arg : args) {
    if (arg == "--follow") {
      follow = true;
    } else if (arg == "--quiet") {
      quiet = true;
    } else if (absl::ConsumePrefix(&arg, "--max=")) {
      if (!absl::SimpleAtoi(arg, &max_records)) return usage();
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else if (path.empty()) {
      path = std::string(arg);
    } else {
      return usage();
    }
  }
  if (path.empty()) return usage();

  absl::StatusOr<std::unique_ptr<RingReader>> reader = RingReader::Open(path);
  if (!reader.ok()) {
    fprintf(stderr, "%s: %s\n", name.c_str(),
            reader.status().ToString().c_str());
    return 2;
  }
  const FileInfo& info = (*reader)->info();
  PrintHeader(path, info);

  signal(SIGINT, [](int) { g_interrupted = 1; });
  PrintingVisitor visitor(info, quiet);
  PollStats stats;
  PollOptions options;
  options.writer_dead = !follow;
  absl::Status status;
  while (!g_interrupted && visitor.count() < max_records) {
    const uint64_t before = stats.delivered + stats.lost + stats.unknown_types;
    options.max_records = static_cast<uint32_t>(
        std::min<uint64_t>(max_records - visitor.count(), 1u << 16));
    status = (*reader)->Poll(options, visitor, stats);
    if (!status.ok() || (*reader)->Finished()) break;
    const bool progressed =
        stats.delivered + stats.lost + stats.unknown_types != before;
    if (!progressed) {
      if (!follow) break;
      usleep(100'000);
    }
    fflush(stdout);
  }
  printf("\nrecords %" PRIu64 " delivered, %" PRIu64
         " lost (lapped, torn or "
         "unfinished), %" PRIu64 " dropped by the writer (too large), %" PRIu64
         " of unknown type; process %s\n",
         stats.delivered, stats.lost, stats.writer_dropped, stats.unknown_types,
         (*reader)->Finished() ? "ended" : "not marked ended");
  for (const auto& [type, count] : visitor.by_type()) {
    printf("  %-13s %" PRIu64 "\n", RecordTypeName(type), count);
  }
  if (!status.ok()) {
    fprintf(stderr, "%s: %s\n", name.c_str(), status.ToString().c_str());
    return 2;
  }
  return 0;
}

}  // namespace ringfile
}  // namespace ringprof
