// How much of each profile stayed unsymbolized: per profile kind, the value
// of the samples with a stack, the part of it whose leaf frame (the
// innermost frame outside the emitter) has no function name, and which
// modules those leaves are in, with the symbolizer's reason for each
// (Symbolizer::UnnamedReason). "No function name": the symbolizer resolved
// nothing (the frame shows as module+0xoffset) or only the function's start
// ("[module] 0x<start>", a stripped binary's .eh_frame).
//
// The value is the kind's default sample type (collector/pprof/
// profile_kinds.h): CPU nanoseconds, allocated bytes, nanoseconds waited.
// Synthetic stacks ("[lost]", "[no sample]", "[truncated]", "[thread not
// sampled]") and stacks without a frame are not counted: they have no leaf
// to name.
//
// The WindowEncoder counts each profile's and exports them to /metrics
// (ExportLeafNames); ProcessStats sums them over a process's life and the
// collector's summary over processes, which `ringprof run` prints
// (LeafNameSummary). Every kind of collector/pprof/profile_kinds.h is
// counted alike: nothing here names one.
//
// Thread-compatible; ExportLeafNames is thread-safe.
#ifndef RINGPROF_COLLECTOR_PROFILE_LEAF_NAMES_H_
#define RINGPROF_COLLECTOR_PROFILE_LEAF_NAMES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "collector/pprof/profile_kinds.h"

namespace ringprof {
namespace collector {

struct UnnamedModule {
  std::string reason;  // the symbolizer's, or why there was none to ask
  int64_t value = 0;
};

struct LeafNames {
  int64_t total = 0;    // value of the samples with a stack
  int64_t unnamed = 0;  // of those whose leaf has no function name
  // By module path ("" for a leaf in no known module). Bounded by the
  // modules the processes mapped.
  std::map<std::string, UnnamedModule> modules;

  LeafNames& operator+=(const LeafNames& other);
};

using LeafNamesByKind = std::map<ProfileKind, LeafNames>;

LeafNamesByKind& operator+=(LeafNamesByKind& sum, const LeafNamesByKind& other);

// Adds one window's counts of `kind` to /metrics:
// ringprof_profile_value_total{profile="<name>"},
// ringprof_profile_unsymbolized_value_total{profile="<name>"} and the
// ratio of the two since start, ringprof_profile_unsymbolized_ratio.
void ExportLeafNames(ProfileKind kind, const LeafNames& window);

// The lines `ringprof run` prints: one with each kind's unsymbolized share
// ("unsymbolized (...): process_cpu 38.2% of cpu, memory 0% of
// alloc_space"), kinds in ProfileKinds() order, then up to `max_modules`
// modules holding most of it ("  libc.so.6 (process_cpu 38.0%): <reason>"),
// largest share first. Empty when nothing was counted.
std::vector<std::string> LeafNameSummary(const LeafNamesByKind& leaves,
                                         size_t max_modules = 5);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_LEAF_NAMES_H_
