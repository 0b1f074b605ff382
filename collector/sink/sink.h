// ProfileSink: where finished window profiles go. The collector produces one
// WindowProfile per (process, profile kind, window); sinks write them
// locally (collector/sink/local_sink) or ship them (collector/shipping,
// collector/otlp). The profile travels built, never serialized: each sink
// serializes it once, where it writes it (a file, a spool record, a
// request).
//
// Thread-safety: Submit may be called from the collector's processing thread
// only; implementations must not block it for long (queue, then return).
#ifndef RINGPROF_COLLECTOR_SINK_SINK_H_
#define RINGPROF_COLLECTOR_SINK_SINK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "collector/base/labels.h"
#include "collector/pprof/profile_kinds.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

struct WindowProfile {
  // Which profile this is; its name (Pyroscope's __name__), types and
  // files are the kinds table's (collector/pprof/profile_kinds.h).
  ProfileKind kind = ProfileKind::kCpu;
  // The service (the emitter's, else the executable's base name).
  std::string service_name;
  // Series labels the collector sets besides __name__ and service_name:
  // the operator's (--tags), ringprof_cpu_source (bounded set; never
  // per-thread).
  Labels labels;
  // Labels the workload named (its Label records): untrusted, any bytes.
  // Sinks that use them sanitize them and never let them replace a label
  // the collector owns (collector/shipping/labels.h).
  Labels workload_labels;
  // Pyroscope's __session_id__ for this process: 16 lower-case hex digits,
  // stable for the process's life (empty: none).
  std::string session_id;
  int64_t from_unix_ns = 0;   // window start, wall clock
  int64_t until_unix_ns = 0;  // window end (exclusive)
  // The profile, already valid under Pyroscope's rules
  // (collector/pprof/pprof_validate.h). Shared by every sink it is handed
  // to (collector/sink/tee_sink) and never changed: a sink that must change
  // it (trimming, sample labels) changes a copy.
  std::shared_ptr<const perftools::profiles::Profile> profile;
  uint32_t pid = 0;
};

class ProfileSink {
 public:
  virtual ~ProfileSink() = default;
  virtual void Submit(WindowProfile profile) = 0;
  // Sends or persists everything queued; returns when done or the deadline
  // (CLOCK_MONOTONIC ns) passes. Called at shutdown.
  virtual absl::Status Flush(int64_t deadline_monotonic_ns) = 0;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SINK_SINK_H_
