// Environment facts the workloads' emitters recorded (ringfile/FORMAT.md
// §5.4: an older glibc, musl, no libgcc_s, a CPU timer switched off): each
// distinct (service, fact, detail) is logged once for the collector's
// lifetime, counted per process on /metrics
// (ringprof_environment_facts_total{fact="..."}), and kept for `ringprof
// run`'s summary.
//
// Everything here comes from a workload: service and detail are repaired
// to printable ASCII and bounded; at most kMaxKeptFacts distinct facts are
// kept (later ones are still counted).
//
// Thread-safe.
#ifndef RINGPROF_COLLECTOR_PROFILE_ENVIRONMENT_FACTS_H_
#define RINGPROF_COLLECTOR_PROFILE_ENVIRONMENT_FACTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

inline constexpr size_t kMaxKeptFacts = 256;

// One process reported `kind` (EnvironmentFactKind) with `detail`.
void ReportEnvironmentFact(absl::string_view service, uint32_t pid,
                           uint16_t kind, absl::string_view detail);

// "service: meaning: detail", one line per distinct fact, in the order
// first reported.
std::vector<std::string> EnvironmentFactLines();

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_ENVIRONMENT_FACTS_H_
