// The profile kinds the collector produces, in one table: for each its name,
// its pprof sample types and period, how Pyroscope must store it, how the
// OTLP encoder names it, and its local files and flame graphs. Every
// consumer reads the table (the encoders, the sinks, shipping, OTLP, the
// command line); no other collector file spells a kind's name.
//
// Adding a kind: a row here, the samples that feed it (a record handler of
// collector/profile), and its encoder (WindowEncoder).
//
// Thread-safety: immutable data.
#ifndef RINGPROF_COLLECTOR_PPROF_PROFILE_KINDS_H_
#define RINGPROF_COLLECTOR_PPROF_PROFILE_KINDS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "collector/pprof/pprof_builder.h"

namespace ringprof {
namespace collector {

enum class ProfileKind : uint8_t {
  kCpu,     // "process_cpu": CPU time
  kMemory,  // "memory": allocations and the in-use heap
  kMutex,   // "mutex": lock contention
  kBlock,   // "block": blocking calls
  kWall,    // "wall": per thread, CPU time and sampled waits
};

struct SampleTypeInfo {
  const char* type;  // pprof sample type, e.g. "alloc_space"
  const char* unit;  // e.g. "bytes"
  // A point-in-time value (the in-use heap at a window's end): merging
  // windows keeps each series' latest instead of summing.
  bool snapshot = false;
};

// How the OTLP encoder names a kind. Grafana Pyroscope names an OTLP
// profile by its type (pkg/ingester/otlp/convert.go): OpenTelemetry's CPU
// convention (sample type samples/count over a cpu/nanoseconds period) is
// "process_cpu", with each value times the period; anything else is named
// after its period type.
enum class OtlpNaming : uint8_t {
  // OpenTelemetry's CPU convention: one sample type samples/count, the
  // pprof's values in whole periods, period type cpu/nanoseconds (the
  // kind's) and the pprof's period.
  kCpuSamples,
  // The pprof's sample types; the period type is the kind's name (with the
  // pprof's period unit), so that Pyroscope names it as Push does.
  kNameAsPeriodType,
};

// One flame graph (and top table) of the local output.
struct LocalView {
  const char* sample_type;  // the value shown
  const char* file;         // under the output directory
  // Heading of the page and of its section of top.txt.
  const char* title;
  // What `ringprof run` prints before the page's path.
  const char* caption;
};

struct ProfileKindInfo {
  ProfileKind kind;
  // Pyroscope's __name__; also the local directory of the kind's windows and
  // its merged file (<name>.pb.gz).
  const char* name;
  absl::Span<const SampleTypeInfo> sample_types;
  int default_sample_type;  // index into sample_types
  const char* period_type;
  const char* period_unit;
  // The pprof period; kSourcePeriod: the sample source's (CPU timer or
  // tick), given when the profile is built.
  int64_t period;
  // Sent with __delta__="false": per-window values a server must not
  // difference as it does Go's cumulative profiles.
  bool not_cumulative;
  OtlpNaming otlp;
  absl::Span<const LocalView> views;
};

inline constexpr int64_t kSourcePeriod = -1;

// True when some kind's sample type `type` is a snapshot (SampleTypeInfo).
bool IsSnapshotSampleType(absl::string_view type);

// Every kind, in the order windows emit them and the local output lists
// them.
absl::Span<const ProfileKindInfo> ProfileKinds();
const ProfileKindInfo& KindInfo(ProfileKind kind);
inline const char* KindName(ProfileKind kind) { return KindInfo(kind).name; }
// The kind named `name`; null when there is none.
const ProfileKindInfo* FindProfileKind(absl::string_view name);

// A builder's spec for `kind`: its sample types, period type, default
// sample type, and period (`source_period` for kSourcePeriod kinds).
ProfileSpec SpecOf(ProfileKind kind, int64_t source_period = 0);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_PROFILE_KINDS_H_
