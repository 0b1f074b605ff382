// Synthetic WindowProfiles with valid pprof payloads, for the shipping
// tests and the upload benchmark.
//
// Thread-safety: pure functions.
#ifndef RINGPROF_COLLECTOR_SHIPPING_TESTING_SYNTHETIC_PROFILES_H_
#define RINGPROF_COLLECTOR_SHIPPING_TESTING_SYNTHETIC_PROFILES_H_

#include <cstdint>
#include <string>

#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace testing {

struct SyntheticShape {
  int distinct_stacks = 8;
  int stack_depth = 12;
  int functions = 64;  // stacks draw frames from this many functions
  uint64_t seed = 1;
};

// A kCpu (cpu/nanoseconds, 10 ms period) or, for any other kind, a
// memory-like (alloc_objects/count + alloc_space/bytes) profile for
// [from, until) with time_nanos = from, labels service_name and pid.
WindowProfile MakeWindowProfile(ProfileKind kind, const std::string& service,
                                uint32_t pid, int64_t from_unix_ns,
                                int64_t until_unix_ns,
                                const SyntheticShape& shape = {});

// Whole seconds, 10 s aligned (as the SDKs align windows), `windows_ago`
// windows before the current one.
int64_t AlignedWindowStartNs(int windows_ago);

}  // namespace testing
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_TESTING_SYNTHETIC_PROFILES_H_
