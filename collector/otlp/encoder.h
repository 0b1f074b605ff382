// EncodeProfile: one pprof profile of the collector and the resource it
// came from, as an OTLP ExportProfilesServiceRequest (opentelemetry-proto
// v1.10.0, proto/otlp).
//
// The mapping, faithful to what the pprof says:
//   * one OTLP Profile per pprof sample type (OTLP profiles carry a single
//     value type), all in one ResourceProfiles / ScopeProfiles ("ringprof")
//     and sharing one dictionary; period_type, period, time and duration
//     copied from the pprof (period types as below), except that a period
//     of 0 (values already scaled to every event: the memory profiles)
//     becomes 1; a sample whose value of a type is 0 is left out of that
//     type's profile;
//   * mappings keep addresses, offset and filename; a build id becomes the
//     mapping attribute process.executable.build_id.gnu, so a backend can
//     symbolize addresses the collector could not;
//   * functions and lines as in pprof, locations keep their addresses;
//   * sample labels: string labels become sample attributes (string
//     values), numeric ones int values with their unit; "span_id" (and
//     "trace_id" when present) become the sample's Link instead, as
//     OpenTelemetry correlates profiles with traces;
//   * the resource's service.name is also a sample attribute of every
//     sample, as profilers that cover several services do: consumers that
//     read the service per sample (Pyroscope) keep it even when a
//     Collector re-encodes the resource with dictionary references, which
//     Pyroscope v2.2.1 does not resolve;
//   * profile_id is derived from `profile_id` (16 bytes), so retries of one
//     request carry the same ids;
//   * names as Pyroscope's Push path has them, as far as its OTLP ingest
//     allows: it stores OpenTelemetry's CPU convention (one sample type
//     samples/count over a cpu/nanoseconds period) as "process_cpu", with
//     each value times the period, and names every other profile by its
//     period type. So the CPU profile (OtlpNaming::kCpuSamples in the
//     kinds table) goes as samples/count, its values in whole periods
//     (each timer sample or tick is worth one period), and the other kinds
//     (kNameAsPeriodType) take the kind's name as their period type
//     (memory/bytes, mutex/count, block/count): memory keeps its name, and
//     the lock-contention and blocking profiles, which share Go's
//     contentions/count, do not land in one series.
// Resource attributes are the caller's (resource.h); keys and string values
// go inline (KeyValue.key / string_value), as every consumer reads them.
//
// Thread-safety: pure. Allocates.
#ifndef RINGPROF_COLLECTOR_OTLP_ENCODER_H_
#define RINGPROF_COLLECTOR_OTLP_ENCODER_H_

#include <string>

#include "absl/status/statusor.h"
#include "collector/pprof/profile_kinds.h"
#include "proto/otlp/profiles_service.pb.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace otlp {

using ExportRequest = ::opentelemetry::proto::collector::profiles::
    v1development::ExportProfilesServiceRequest;

// The scope every profile is reported under.
inline constexpr char kScopeName[] = "ringprof";

// InvalidArgument when the pprof references an id it does not define or a
// string index outside its table (the collector's own profiles never do).
// `profile_id`: 16 bytes (shorter is zero-padded, longer cut).
// `kind`: the profile's kind (WindowProfile::kind).
absl::StatusOr<ExportRequest> EncodeProfile(
    const perftools::profiles::Profile& pprof,
    const ::opentelemetry::proto::resource::v1::Resource& resource,
    const std::string& profile_id, ProfileKind kind);

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_OTLP_ENCODER_H_
