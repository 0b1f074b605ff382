// PprofBuilder: assembles a perftools.profiles.Profile that go tool pprof
// reads and that passes Grafana Pyroscope's validation (its distributor's
// validate.go and default limits):
//
//   * string_table[0] == "", every mapping/location/function id non-zero;
//   * every string valid UTF-8 (bad bytes become U+FFFD) and at most
//     max_string_bytes long: names and paths come from the workload;
//   * sample_type names without '-', period_type always set;
//   * every sample carries exactly one value per sample type;
//   * at most `max_frames` locations per sample (deeper stacks keep their
//     innermost frames under a synthetic "[truncated]" root);
//   * sample labels (string key and value) as given: the caller applies the
//     label rules; strings still pass the string table's UTF-8 repair;
//   * at most `max_samples` samples and `max_bytes` serialized: identical
//     stacks (with identical labels) are aggregated, and if that is not
//     enough the least significant stacks (smallest share of every value's
//     total) are folded into one "[trimmed]" sample, so the totals are
//     preserved and the profile is never invalid.
//
// Mappings, functions and locations are interned by content, so the same
// builder merges profiles from several windows or processes (profile_merge).
// Only what the kept samples reference is written out.
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PPROF_PPROF_BUILDER_H_
#define RINGPROF_COLLECTOR_PPROF_PPROF_BUILDER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "collector/base/labels.h"
#include "collector/base/module_info.h"
#include "collector/pprof/pprof_validate.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

struct ValueTypeSpec {
  std::string type;  // e.g. "alloc_space"
  std::string unit;  // e.g. "nanoseconds", "bytes"
};

struct ProfileSpec {
  std::vector<ValueTypeSpec> sample_types;
  ValueTypeSpec period_type;
  int64_t period = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  // Index into sample_types that pprof shows by default
  // (default_sample_type) and that breaks ties when trimming.
  int primary_value = 0;
};

// The spec of a parsed profile: its sample types, period, time and default
// sample type (the last one when it names none).
ProfileSpec SpecOfProfile(const perftools::profiles::Profile& profile);

// A pprof mapping: the module (its range [start, start + size), file
// offset, path and build id; load_bias and pid are not written) and what
// its locations resolved.
struct MappingSpec {
  ModuleInfo module;
  bool has_functions = false;
  bool has_filenames = false;
  bool has_line_numbers = false;
  bool has_inline_frames = false;
};

struct LineSpec {
  std::string function;  // demangled name; never empty (callers fill in)
  std::string filename;
  int64_t line = 0;
};

class PprofBuilder {
 public:
  using MappingId = uint32_t;   // 0 = no mapping
  using LocationId = uint32_t;  // builder-internal, >= 1
  using LabelSetId = uint32_t;  // 0 = no labels

  explicit PprofBuilder(ProfileSpec spec, PyroscopeLimits limits = {});

  const ProfileSpec& spec() const { return spec_; }

  MappingId InternMapping(const MappingSpec& mapping);
  // `lines` innermost (most deeply inlined) first, as in pprof.
  LocationId InternLocation(MappingId mapping, uint64_t address,
                            absl::Span<const LineSpec> lines);
  // A location without address or mapping naming `function` ("[lost]"...).
  LocationId InternSyntheticLocation(absl::string_view function);

  // Sample labels for AddSample, interned by content (order kept: callers
  // pass them sorted). Empty: 0.
  LabelSetId InternLabels(const Labels& labels);

  // `stack` leaf first; `values` one per sample type. Identical stacks with
  // identical labels add up. Samples whose values are all zero are ignored.
  // The "[trimmed]" sample that folds the smallest ones has no labels.
  void AddSample(absl::Span<const LocationId> stack,
                 absl::Span<const int64_t> values, LabelSetId labels = 0);

  // Imports a parsed pprof: its mappings, functions and locations are
  // interned, and each sample is added with its string labels (numeric
  // labels are not kept). A sample's values are taken one per sample type
  // of this builder (missing ones count 0); when `columns` is not empty,
  // only the columns it marks true are taken (the others count 0). This is
  // the one way a profile that was already built enters a builder again
  // (merging, trimming). InvalidArgument, and nothing added, when an id of
  // `profile` does not resolve (CheckPprofIds).
  absl::Status AddProfile(const perftools::profiles::Profile& profile,
                          absl::Span<const bool> columns = {});

  size_t sample_count() const { return samples_.size(); }
  bool empty() const { return samples_.empty(); }

  // Writes the profile within the limits. The builder stays usable (more
  // samples may be added and Build called again).
  perftools::profiles::Profile Build() const;

 private:
  struct Mapping {
    MappingSpec spec;
  };
  struct Function {
    std::string name;
    std::string filename;
  };
  struct Line {
    uint32_t function;  // index into functions_
    int64_t line;
  };
  struct Location {
    MappingId mapping;
    uint64_t address;
    std::vector<Line> lines;
  };
  struct Sample {
    std::vector<LocationId> stack;
    std::vector<int64_t> values;
    LabelSetId labels = 0;
  };

  uint32_t InternFunction(absl::string_view name, absl::string_view filename);
  perftools::profiles::Profile Emit(size_t keep) const;
  // Sample indices, most significant first: by the largest share a sample
  // has of any value's total (trimming keeps these), then primary value.
  std::vector<size_t> SamplesByRank() const;

  ProfileSpec spec_;
  PyroscopeLimits limits_;
  LocationId trimmed_location_ = 0;
  LocationId truncated_location_ = 0;

  std::vector<Mapping> mappings_;  // id = index + 1
  absl::flat_hash_map<std::string, MappingId> mapping_index_;
  std::vector<Function> functions_;
  absl::flat_hash_map<std::string, uint32_t> function_index_;
  std::vector<Location> locations_;  // id = index + 1
  absl::flat_hash_map<std::string, LocationId> location_index_;
  std::vector<Labels> label_sets_;  // id = index + 1
  absl::flat_hash_map<std::string, LabelSetId> label_set_index_;
  std::vector<Sample> samples_;
  absl::flat_hash_map<std::vector<LocationId>, size_t> sample_index_;
  // Scratch of the Intern* calls (kept for their capacity).
  std::string key_;
  std::vector<Line> line_ids_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_PPROF_BUILDER_H_
