#include "collector/sink/local_sink.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "collector/base/file.h"
#include "collector/base/log.h"
#include "collector/pprof/pprof_io.h"
#include "collector/render/flamegraph.h"

namespace ringprof {
namespace collector {
namespace {

std::string Sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "unknown_service";
  return out;
}

int SampleIndexOf(const perftools::profiles::Profile& profile,
                  const std::string& type) {
  for (int i = 0; i < profile.sample_type_size(); ++i) {
    const int64_t name = profile.sample_type(i).type();
    if (name >= 0 && name < profile.string_table_size() &&
        profile.string_table(name) == type) {
      return i;
    }
  }
  return -1;
}

bool HasValue(const perftools::profiles::Profile& profile, int index) {
  for (const auto& sample : profile.sample()) {
    if (index < sample.value_size() && sample.value(index) != 0) return true;
  }
  return false;
}

}  // namespace

absl::Status EnsureWritableDirectory(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("empty output directory");
  absl::Status made = MakeDirs(dir, 0755);
  if (!made.ok()) return made;
  const std::string probe =
      absl::StrCat(dir, "/.ringprof-write-test.", getpid());
  absl::Status written = WriteFileAtomically(probe, "");
  if (!written.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "output directory ", dir, " is not writable: ", written.message()));
  }
  ::unlink(probe.c_str());
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LocalSink>> LocalSink::Create(
    const std::string& out_dir) {
  absl::Status status = EnsureWritableDirectory(out_dir);
  if (!status.ok()) return status;
  return std::unique_ptr<LocalSink>(new LocalSink(out_dir));
}

void LocalSink::Submit(WindowProfile profile) {
  // One directory per service and kind, shared by its processes: a build's
  // hundred processes make a few directories, not hundreds.
  const std::string dir =
      absl::StrCat(out_dir_, "/", Sanitize(profile.service_name), "/",
                   KindName(profile.kind));
  absl::Status status = MakeDirs(dir, 0755);
  if (status.ok()) {
    status = WriteProfileFile(
        absl::StrCat(dir, "/", profile.pid, ".",
                     profile.from_unix_ns / 1'000'000, "-",
                     profile.until_unix_ns / 1'000'000, ".pb.gz"),
        profile.profile->SerializeAsString());
  }
  if (!status.ok()) {
    // Once: a full disk would otherwise log every window.
    if (first_error_.ok()) LogError(status.ToString());
    first_error_.Update(status);
  } else {
    ++windows_written_;
  }
  // One series per process: its in-use snapshots are not summed.
  absl::Status merged = merged_[profile.kind].Add(
      std::move(profile.profile),
      absl::StrCat(profile.service_name, "/", profile.pid));
  if (!merged.ok()) LogWarning(merged.ToString());
}

absl::Status LocalSink::Flush(int64_t /*deadline_monotonic_ns*/) {
  return first_error_;  // Submit writes synchronously
}

absl::StatusOr<LocalOutput> LocalSink::Finalize(int top_rows, int hottest) {
  LocalOutput out;
  std::string top;
  for (const ProfileKindInfo& kind : ProfileKinds()) {
    auto it = merged_.find(kind.kind);
    if (it == merged_.end() || it->second.empty()) continue;
    const perftools::profiles::Profile profile = it->second.Finish();
    const std::string pb = absl::StrCat(out_dir_, "/", kind.name, ".pb.gz");
    absl::Status status = WriteProfileFile(pb, profile.SerializeAsString());
    if (!status.ok()) return status;
    out.files.push_back(pb);
    for (const LocalView& view : kind.views) {
      const int sample_index = SampleIndexOf(profile, view.sample_type);
      if (sample_index < 0 || !HasValue(profile, sample_index)) continue;
      const std::string html = absl::StrCat(out_dir_, "/", view.file);
      FlameGraphAndTop rendered = RenderFlameGraphAndTopTable(
          profile, sample_index, absl::StrCat("ringprof: ", view.title),
          top_rows, hottest);
      status = WriteFileAtomically(html, rendered.html);
      if (!status.ok()) return status;
      out.files.push_back(html);
      out.pages.push_back({&view, html, std::move(rendered.total),
                           std::move(rendered.hottest)});
      absl::StrAppend(&top, view.title, "\n", rendered.top_table, "\n");
    }
  }
  if (!top.empty()) {
    const std::string path = absl::StrCat(out_dir_, "/top.txt");
    absl::Status status = WriteFileAtomically(path, top);
    if (!status.ok()) return status;
    out.files.push_back(path);
  }
  out.top_table = std::move(top);
  return out;
}

}  // namespace collector
}  // namespace ringprof
