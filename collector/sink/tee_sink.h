// TeeSink: hands every window to several sinks (the Pyroscope sink and the
// local output of one `ringprof` invocation); with `local_dir` set, logs one
// info line per window written there (the Pyroscope sink logs its own).
//
// Thread-safety: as the sinks it holds (Submit from the processing thread,
// Flush at exit). The sinks must outlive it.
#ifndef RINGPROF_COLLECTOR_SINK_TEE_SINK_H_
#define RINGPROF_COLLECTOR_SINK_TEE_SINK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "collector/sink/sink.h"

namespace ringprof {
namespace collector {

class TeeSink : public ProfileSink {
 public:
  TeeSink(std::vector<ProfileSink*> sinks, std::string local_dir)
      : sinks_(std::move(sinks)), local_dir_(std::move(local_dir)) {}
  void Submit(WindowProfile profile) override;
  // Flushes every sink; the first error of any.
  absl::Status Flush(int64_t deadline) override;

 private:
  std::vector<ProfileSink*> sinks_;
  std::string local_dir_;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SINK_TEE_SINK_H_
