// The OTLP Resource of one process's profiles: what the collector knows,
// named by the OpenTelemetry semantic conventions.
//
//   service.name             the series' service_name (--application-name,
//                            else the emitter's RINGPROF_SERVICE_NAME)
//   process.pid              int, the workload's pid
//   process.executable.name  basename of the pprof's main mapping, if any
//   host.name                the series' hostname label (gethostname, or a
//                            hostname tag)
//   k8s.pod.name,            the series' pod / namespace labels (POD_NAME,
//   k8s.namespace.name       POD_NAMESPACE)
//   container.id             when given (OTEL_RESOURCE_ATTRIBUTES): the
//                            collector cannot prove which container a pid
//                            from another pid namespace belongs to
//   everything else          the series' other labels as string attributes
//                            under their own names: tags (PYROSCOPE_TAGS),
//                            source-code labels, the workload's own labels
//   extra                    OTEL_RESOURCE_ATTRIBUTES entries (e.g.
//                            service.version) whose key is not set above
// Pyroscope's own names (__name__, __session_id__, __delta__, pid) are
// left out: the profile type is in each Profile, and process.pid is an int.
//
// Thread-safety: pure functions.
#ifndef RINGPROF_COLLECTOR_OTLP_RESOURCE_H_
#define RINGPROF_COLLECTOR_OTLP_RESOURCE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/otlp/resource.pb.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace otlp {

using Attributes = std::vector<std::pair<std::string, std::string>>;

struct ResourceFacts {
  // The Pyroscope series labels of the profile (shipping/labels.h).
  Attributes series_labels;
  uint32_t pid = 0;
  std::string executable_name;
  Attributes extra;  // OTEL_RESOURCE_ATTRIBUTES
};

::opentelemetry::proto::resource::v1::Resource BuildResource(
    const ResourceFacts& facts);

// The basename of the first mapping's file (pprof's main binary), or "".
std::string ExecutableName(const perftools::profiles::Profile& pprof);

// The OpenTelemetry SDKs' list syntax (OTEL_RESOURCE_ATTRIBUTES,
// OTEL_EXPORTER_OTLP_HEADERS): key=value,key2=value2, whitespace around
// items trimmed, values percent-encoded (W3C baggage octets).
// InvalidArgument for a missing '=', an empty key or a bad escape; the
// message names the entry by `what` and position (or key), never by value
// (header values are often secrets).
absl::StatusOr<Attributes> ParseKeyValueList(absl::string_view text,
                                             absl::string_view what);

}  // namespace otlp
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_OTLP_RESOURCE_H_
