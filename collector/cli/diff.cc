// `ringprof diff [flags] BASE.pb.gz TARGET.pb.gz -o diff.html` (commands.h).

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/base/file.h"
#include "collector/cli/commands.h"
#include "collector/cli/flags.h"
#include "collector/cli/startup.h"
#include "collector/pprof/pprof_io.h"
#include "collector/render/flamegraph.h"

namespace ringprof {
namespace collector {
namespace {

// --sample-index: a sample type's name or index; empty: the profile's
// default sample type (else its last), as pprof chooses.
absl::StatusOr<int> DiffSampleIndex(const perftools::profiles::Profile& p,
                                    const std::string& wanted) {
  auto name_of = [&](int i) -> std::string {
    const int64_t s = p.sample_type(i).type();
    return s >= 0 && s < p.string_table_size() ? p.string_table(s) : "";
  };
  std::vector<std::string> names;
  for (int i = 0; i < p.sample_type_size(); ++i) names.push_back(name_of(i));
  int index = -1;
  if (wanted.empty()) {
    index = p.sample_type_size() - 1;
    for (int i = 0; i < p.sample_type_size(); ++i) {
      if (p.default_sample_type() != 0 &&
          p.sample_type(i).type() == p.default_sample_type()) {
        index = i;
      }
    }
    return index;
  }
  if (absl::SimpleAtoi(wanted, &index) && index >= 0 &&
      index < p.sample_type_size()) {
    return index;
  }
  for (int i = 0; i < p.sample_type_size(); ++i) {
    if (names[i] == wanted) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--sample-index=", wanted, ": the profile's sample types are ",
      absl::StrJoin(names, ", ")));
}

}  // namespace

int DiffCommand(const std::vector<std::string>& files) {
  if (files.size() != 2) {
    return Fail(absl::InvalidArgumentError(
        "usage: ringprof diff BASE.pb.gz TARGET.pb.gz -o diff.html"));
  }
  absl::StatusOr<perftools::profiles::Profile> base = ReadProfileFile(files[0]);
  if (!base.ok()) return Fail(base.status());
  absl::StatusOr<perftools::profiles::Profile> target =
      ReadProfileFile(files[1]);
  if (!target.ok()) return Fail(target.status());
  if (base->sample_type_size() != target->sample_type_size()) {
    return Fail(absl::InvalidArgumentError(
        "the two profiles have different sample types"));
  }
  absl::StatusOr<int> index =
      DiffSampleIndex(*base, absl::GetFlag(FLAGS_sample_index));
  if (!index.ok()) return Fail(index.status());
  const std::string out = absl::GetFlag(FLAGS_output);
  absl::Status written = WriteFileAtomically(
      out, RenderDiffFlameGraphHtml(
               *base, *target, *index,
               absl::StrCat("ringprof diff: ", files[0], " -> ", files[1])));
  if (!written.ok()) return Fail(written, 1);
  std::fprintf(stderr, "ringprof: diff flame graph: %s\n", out.c_str());
  return 0;
}

}  // namespace collector
}  // namespace ringprof
