// LocalSink: the embedded default when no Pyroscope server is configured.
// Writes every window profile as a gzipped pprof file, and on Finalize() a
// merged profile per kind, a text top table and HTML flame graphs:
//
//   <out>/<service>/<name>/<pid>.<from_ms>-<until_ms>.pb.gz   every window
//   <out>/<name>.pb.gz      all windows and processes merged
//   <out>/<view file>       one flame graph per view of the kind (e.g.
//                           flamegraph.html for CPU time; memory.html and
//                           inuse.html, the latter each process's last
//                           snapshot, for allocations)
//   <out>/top.txt           top functions of every view, in that order
//
// <name> and the views are the kinds table's (collector/pprof/
// profile_kinds.h); a view whose values are all zero gets no page. from/until
// are Unix milliseconds of the window (10 s, wall-clock aligned; the last
// one may be shorter). <service> is sanitised to [A-Za-z0-9._-].
//
// Thread-safety: Submit/Flush from the collector's processing thread;
// Finalize after the collector stopped. Submit writes synchronously (small
// files, local disk).
#ifndef RINGPROF_COLLECTOR_SINK_LOCAL_SINK_H_
#define RINGPROF_COLLECTOR_SINK_LOCAL_SINK_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collector/pprof/profile_merger.h"
#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {

// One flame graph Finalize wrote.
struct LocalPage {
  const LocalView* view;  // the kinds table's
  std::string path;
  std::string total;                 // the view's value in all, e.g. "1.40s"
  std::vector<std::string> hottest;  // "flat%  short name", hottest first
};

struct LocalOutput {
  std::vector<std::string> files;  // everything Finalize wrote
  std::vector<LocalPage> pages;    // in the kinds table's order
  std::string top_table;           // the text of top.txt
};

class LocalSink : public ProfileSink {
 public:
  // Creates `out_dir` (and parents) and checks that it is writable:
  // FailedPrecondition naming the directory otherwise.
  static absl::StatusOr<std::unique_ptr<LocalSink>> Create(
      const std::string& out_dir);

  void Submit(WindowProfile profile) override;
  absl::Status Flush(int64_t deadline_monotonic_ns) override;

  // Writes the merged files, once: it hands the merged profiles over (a
  // later call writes only what was submitted since). `top_rows` rows per
  // table of top.txt; `hottest` functions per page in LocalPage::hottest
  // (RenderFlameGraphAndTopTable).
  absl::StatusOr<LocalOutput> Finalize(int top_rows = 20, int hottest = 0);

  const std::string& out_dir() const { return out_dir_; }
  uint64_t windows_written() const { return windows_written_; }

 private:
  explicit LocalSink(std::string out_dir) : out_dir_(std::move(out_dir)) {}

  const std::string out_dir_;
  std::map<ProfileKind, ProfileMerger> merged_;
  uint64_t windows_written_ = 0;
  absl::Status first_error_;
};

// mkdir -p, then a probe file: FailedPrecondition when not writable.
absl::Status EnsureWritableDirectory(const std::string& dir);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SINK_LOCAL_SINK_H_
