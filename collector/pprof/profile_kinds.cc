#include "collector/pprof/profile_kinds.h"

#include <cstdlib>

namespace ringprof {
namespace collector {
namespace {

// CPU time: per stack, the CPU time of the samples (timer) or picked ticks
// that landed there.
constexpr SampleTypeInfo kCpuTypes[] = {{"cpu", "nanoseconds"}};
constexpr LocalView kCpuViews[] = {
    {"cpu", "flamegraph.html", "CPU time (process_cpu)", "CPU flame graph"},
};

// Go's heap profile's types, in its order (pyroscope-go sends the same).
constexpr SampleTypeInfo kMemoryTypes[] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count", /*snapshot=*/true},
    {"inuse_space", "bytes", /*snapshot=*/true},
};
constexpr LocalView kMemoryViews[] = {
    {"alloc_space", "memory.html", "Allocated bytes (memory: alloc_space)",
     "memory flame graph"},
    {"inuse_space", "inuse.html",
     "Still allocated at the end: live at exit for processes that ended, "
     "else at their last window (memory: inuse_space; sampled estimate)",
     "live at exit"},
};

// Go's mutex and block profiles' types (and Pyroscope's Go SDK's).
constexpr SampleTypeInfo kWaitTypes[] = {{"contentions", "count"},
                                         {"delay", "nanoseconds"}};
constexpr LocalView kMutexViews[] = {
    {"delay", "mutex.html",
     "Time spent waiting for contended locks (mutex: delay; sampled "
     "estimate)",
     "lock contention"},
};
constexpr LocalView kBlockViews[] = {
    {"delay", "block.html",
     "Time spent blocked in condition waits, reads, poll, sleeps... "
     "(block: delay; sampled estimate)",
     "blocking calls"},
};

// Wall-clock time: per stack and thread, the CPU time of the CPU-timer
// samples plus the estimated time of the sampled waits (locks, blocking
// calls). Not "cpu": Pyroscope renames a "wall" profile's "cpu" type to
// process_cpu.
constexpr SampleTypeInfo kWallTypes[] = {{"wall", "nanoseconds"}};
constexpr LocalView kWallViews[] = {
    {"wall", "wall.html",
     "Wall-clock time per thread: CPU time and time waiting for locks and "
     "in blocking calls (wall: wall; sampled estimate)",
     "wall-clock time"},
};

constexpr ProfileKindInfo kKinds[] = {
    {ProfileKind::kCpu, "process_cpu", kCpuTypes, 0, "cpu", "nanoseconds",
     kSourcePeriod, /*not_cumulative=*/false, OtlpNaming::kCpuSamples,
     kCpuViews},
    // The emitter's sampling interval is not known here, and the values
    // are already unbiased estimates: the period carries no information.
    {ProfileKind::kMemory, "memory", kMemoryTypes, 1, "space", "bytes",
     /*period=*/0, /*not_cumulative=*/true, OtlpNaming::kNameAsPeriodType,
     kMemoryViews},
    // Values are already unbiased estimates: nothing to scale by. OTLP
    // names both wait kinds by their name, since they share a period type.
    {ProfileKind::kMutex, "mutex", kWaitTypes, 1, "contentions", "count",
     /*period=*/1, /*not_cumulative=*/true, OtlpNaming::kNameAsPeriodType,
     kMutexViews},
    {ProfileKind::kBlock, "block", kWaitTypes, 1, "contentions", "count",
     /*period=*/1, /*not_cumulative=*/true, OtlpNaming::kNameAsPeriodType,
     kBlockViews},
    // Timer samples and wait estimates: no one period. Its period type is
    // its name, so Push and OTLP both store wall:wall:nanoseconds:wall:...
    {ProfileKind::kWall, "wall", kWallTypes, 0, "wall", "nanoseconds",
     /*period=*/0, /*not_cumulative=*/true, OtlpNaming::kNameAsPeriodType,
     kWallViews},
};

}  // namespace

absl::Span<const ProfileKindInfo> ProfileKinds() { return kKinds; }

const ProfileKindInfo& KindInfo(ProfileKind kind) {
  for (const ProfileKindInfo& info : kKinds) {
    if (info.kind == kind) return info;
  }
  std::abort();  // every enumerator has a row
}

const ProfileKindInfo* FindProfileKind(absl::string_view name) {
  for (const ProfileKindInfo& info : kKinds) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

bool IsSnapshotSampleType(absl::string_view type) {
  for (const ProfileKindInfo& info : kKinds) {
    for (const SampleTypeInfo& sample_type : info.sample_types) {
      if (sample_type.snapshot && type == sample_type.type) return true;
    }
  }
  return false;
}

ProfileSpec SpecOf(ProfileKind kind, int64_t source_period) {
  const ProfileKindInfo& info = KindInfo(kind);
  ProfileSpec spec;
  for (const SampleTypeInfo& type : info.sample_types) {
    spec.sample_types.push_back({type.type, type.unit});
  }
  spec.period_type = {info.period_type, info.period_unit};
  spec.period = info.period == kSourcePeriod ? source_period : info.period;
  spec.primary_value = info.default_sample_type;
  return spec;
}

}  // namespace collector
}  // namespace ringprof
