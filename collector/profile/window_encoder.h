// WindowEncoder: one window of one process -> its pprof profiles.
//
//   WindowAggregates (per stack id: CPU time, allocations) + the in-use
//   heap at the window's end
//     --Encode--> one profile per kind (collector/pprof/profile_kinds.h):
//                 kCpu from the CPU timer or from picked ticks, kMemory
//                 (allocated and in use), kMutex and kBlock (waits:
//                 wait_profiles.h), kWall (per thread: the CPU-timer
//                 samples' CPU time plus the waits' estimated time)
//
// Each stack is turned into pprof locations once per profile: its program
// frames (StackTable::ProgramFrames) symbolized on first use (the symbols
// are kept in the StackTable), mapped to their module's pprof mapping, with
// the stack's sample labels (TagLabeler); each profile's leaves without a
// function name are counted (leaf_names.h); the synthetic stacks become one
// named frame ("[lost]", "[no sample]", "[truncated]", "[thread not
// sampled]"). The executable's module is the profile's first mapping (pprof
// shows it as "File:"). A profile without samples is left out.
//
// A new profile kind is a row of the kinds table, a map in
// WindowAggregates and an Encode* function here.
//
// Thread-compatible; the StackTable, TagLabeler and Symbolizer are the
// caller's and must outlive this object.
#ifndef RINGPROF_COLLECTOR_PROFILE_WINDOW_ENCODER_H_
#define RINGPROF_COLLECTOR_PROFILE_WINDOW_ENCODER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "collector/pprof/label_rules.h"
#include "collector/pprof/pprof_builder.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/pprof/profile_kinds.h"
#include "collector/profile/leaf_names.h"
#include "collector/profile/stack_table.h"
#include "collector/profile/tag_labeler.h"
#include "collector/profile/wait_profiles.h"
#include "collector/sink/sink.h"
#include "collector/symbolize/symbolizer.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// The wall profile's sample labels of a thread: its id (decimal, or
// "other" past WindowEncoderOptions::max_threads) and, when the emitter
// recorded one, its name. They replace a workload tag of the same name in
// that profile.
inline constexpr char kThreadIdLabel[] = "thread_id";
inline constexpr char kThreadNameLabel[] = "thread_name";

// A stack id and a thread id.
using StackAndThread = std::pair<uint32_t, uint32_t>;
// Thread names by thread id (the emitter's ThreadName records).
using ThreadNames = absl::flat_hash_map<uint32_t, std::string>;

// One window's values by stack id (StackTable ids or its synthetic ones).
struct WindowAggregates {
  absl::flat_hash_map<uint32_t, int64_t> tick_cpu_ns;   // picked ticks
  absl::flat_hash_map<uint32_t, int64_t> timer_cpu_ns;  // CPU timer
  // (objects, bytes) allocated in the window.
  absl::flat_hash_map<uint32_t, std::pair<int64_t, int64_t>> alloc;
  // Off-CPU waits: lock contention, blocking calls.
  WaitsByStack mutex;
  WaitsByStack block;
  // Wall-clock time, ns, by stack and thread: each CPU-timer sample's
  // cpu_period_ns and each wait sample's estimate (WaitSampleWeight).
  absl::flat_hash_map<StackAndThread, double> wall;
};

// (objects, bytes) in use, by stack id (InUseTracker::ByStack).
using InUseByStack = absl::flat_hash_map<uint32_t, std::pair<int64_t, int64_t>>;

// Where a window's CPU time comes from: the emitter's CPU timer (each
// sample worth period_ns) or picked allocation ticks.
struct CpuSource {
  bool timer = false;
  uint64_t period_ns = 0;
};

struct WindowEncoderOptions {
  PyroscopeLimits limits;
  // What one picked tick is worth (the CPU profile's period then).
  uint64_t tick_ns = 10'000'000;
  // Unresolved frames in a known module get no line (see
  // ProcessProfilerOptions); otherwise "module+0xoffset".
  bool unresolved_without_lines = false;
  // The process's executable: its module is the profiles' first mapping.
  std::string executable;
  // Threads a wall profile labels apart, the busiest of the window first;
  // the others share thread_id "other".
  size_t max_threads = 100;
};

class WindowEncoder {
 public:
  // `symbolizer` may be null (frames stay module+0xoffset).
  WindowEncoder(WindowEncoderOptions options, StackTable* stacks,
                const TagLabeler* labeler, Symbolizer* symbolizer);

  // The profiles of the window [from_unix_ns, until_unix_ns): kind,
  // profile, window and the series labels of the kind (the CPU source); the
  // caller adds what belongs to the process. `threads` names the wall
  // profile's threads.
  std::vector<WindowProfile> Encode(const WindowAggregates& window,
                                    const InUseByStack& inuse,
                                    const CpuSource& cpu,
                                    const ThreadNames& threads,
                                    int64_t from_unix_ns,
                                    int64_t until_unix_ns);

  // Every profile encoded so far: how much of each kind's value has a leaf
  // without a function name.
  const LeafNamesByKind& leaf_names() const { return leaf_names_; }

 private:
  // One profile being built, with the pprof locations interned so far.
  struct Build {
    explicit Build(const ProfileSpec& spec, const PyroscopeLimits& limits)
        : builder(spec, limits), primary(spec.primary_value) {}
    PprofBuilder builder;
    size_t primary;    // the value leaves are counted in
    LeafNames leaves;  // this profile's
    absl::flat_hash_map<uint32_t, PprofBuilder::LocationId> memo;
    std::vector<PprofBuilder::LocationId> stack;
  };

  // A builder for `spec` over the window, the executable mapped first.
  Build Start(ProfileSpec spec, int64_t from, int64_t until) const;
  void EncodeCpu(const WindowAggregates& window, const CpuSource& cpu,
                 int64_t from, int64_t until, std::vector<WindowProfile>& out);
  void EncodeMemory(const WindowAggregates& window, const InUseByStack& inuse,
                    int64_t from, int64_t until,
                    std::vector<WindowProfile>& out);
  void EncodeWaits(ProfileKind kind, const WaitsByStack& waits, int64_t from,
                   int64_t until, std::vector<WindowProfile>& out);
  // Only with the CPU timer: without it the CPU time is not per thread.
  void EncodeWall(const WindowAggregates& window, const CpuSource& cpu,
                  const ThreadNames& threads, int64_t from, int64_t until,
                  std::vector<WindowProfile>& out);
  // Appends the profile `build` made, if it has samples, and counts its
  // leaves.
  void Finish(ProfileKind kind, Labels labels, const Build& build, int64_t from,
              int64_t until, std::vector<WindowProfile>& out);
  // Adds `values` (one per sample type) for `stack` with its labels and
  // `more` labels.
  void Add(Build& build, uint32_t stack, absl::Span<const int64_t> values,
           const Labels& more = {});
  void AppendStack(Build& build, uint32_t stack);
  // Counts `value` of a sample of `stack` in build.leaves.
  void CountLeaf(Build& build, uint32_t stack, int64_t value);
  std::string UnnamedReason(const ModuleInfo* module) const;
  PprofBuilder::LocationId Location(Build& build, uint32_t location);
  // The location's pprof lines (symbolizing it now if it was not); sets
  // `resolved` when the symbolizer named it.
  std::vector<LineSpec> LinesOf(uint32_t location, const ModuleInfo* module,
                                bool& resolved, bool& has_lines);

  const WindowEncoderOptions options_;
  StackTable* const stacks_;
  const TagLabeler* const labeler_;
  Symbolizer* const symbolizer_;
  LeafNamesByKind leaf_names_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_WINDOW_ENCODER_H_
