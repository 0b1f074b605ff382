// ProcessFacts: what one profiled process says about itself besides its
// samples, as its windows carry it.
//
//   ring file header --> service name (the emitter's, else the
//                        executable's base name, else "unknown_service"),
//                        Pyroscope's __session_id__ (a hash of pid, start
//                        time and ring creation: stable across collector
//                        restarts)
//   Label records    --> the workload's labels (the latest value of a key;
//                        at most kMaxLabels keys: Pyroscope allows 30
//                        labels per series and the collector's own take
//                        the rest); untrusted, passed on as written
//   EnvironmentFact  --> reported once per distinct (kind, detail) of this
//                        process (environment_facts.h), at most kMaxFacts
//   ProcessEnd       --> ended, exit status
//
// Thread-compatible.
#ifndef RINGPROF_COLLECTOR_PROFILE_PROCESS_FACTS_H_
#define RINGPROF_COLLECTOR_PROFILE_PROCESS_FACTS_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "collector/base/labels.h"
#include "ringfile/reader.h"

namespace ringprof {
namespace collector {

class ProcessFacts {
 public:
  static constexpr size_t kMaxLabels = 16;
  static constexpr size_t kMaxFacts = 32;

  explicit ProcessFacts(const ringfile::FileInfo& info);

  void OnLabel(absl::string_view key, absl::string_view value);
  // Labels a predecessor knew (Checkpoint), before any record.
  void RestoreLabels(const Labels& labels);
  void OnEnvironmentFact(uint16_t kind, absl::string_view detail);
  void OnEnd(int32_t exit_status);

  const std::string& service_name() const { return service_name_; }
  const std::string& session_id() const { return session_id_; }
  const Labels& workload_labels() const { return labels_; }
  bool ended() const { return ended_; }
  int32_t exit_status() const { return exit_status_; }

 private:
  const uint32_t pid_;
  const std::string service_name_;
  const std::string session_id_;
  Labels labels_;
  std::set<std::pair<uint16_t, std::string>> facts_seen_;
  bool ended_ = false;
  int32_t exit_status_ = -1;
};

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PROFILE_PROCESS_FACTS_H_
