#include "collector/profile/process_facts.h"

#include "collector/base/file.h"
#include "collector/base/hex.h"
#include "collector/profile/environment_facts.h"

namespace ringprof {
namespace collector {
namespace {

std::string ServiceName(const ringfile::FileInfo& info) {
  std::string service = info.service_name;
  if (service.empty()) service = std::string(Basename(info.executable));
  if (service.empty()) service = "unknown_service";
  return service;
}

// Pyroscope's __session_id__ (pyroscope-go session_id.go: 8 bytes,
// little-endian hex) for one process: a hash of what identifies it, so it
// stays the same when the collector restarts.
std::string SessionId(const ringfile::FileInfo& info) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (uint64_t v : {uint64_t{info.pid}, info.process_start_ticks,
                     info.created_realtime_ns}) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  }
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(h >> (8 * i));
  return HexEncode(bytes, sizeof(bytes));
}

}  // namespace

ProcessFacts::ProcessFacts(const ringfile::FileInfo& info)
    : pid_(info.pid),
      service_name_(ServiceName(info)),
      session_id_(SessionId(info)) {}

void ProcessFacts::OnLabel(absl::string_view key, absl::string_view value) {
  for (auto& kv : labels_) {
    if (kv.first == key) {
      kv.second = std::string(value);
      return;
    }
  }
  if (labels_.size() < kMaxLabels) {
    labels_.emplace_back(std::string(key), std::string(value));
  }
}

void ProcessFacts::RestoreLabels(const Labels& labels) {
  for (const auto& [key, value] : labels) OnLabel(key, value);
}

void ProcessFacts::OnEnvironmentFact(uint16_t kind, absl::string_view detail) {
  if (facts_seen_.size() >= kMaxFacts) return;
  if (!facts_seen_.emplace(kind, std::string(detail)).second) return;
  ReportEnvironmentFact(service_name_, pid_, kind, detail);
}

void ProcessFacts::OnEnd(int32_t exit_status) {
  ended_ = true;
  exit_status_ = exit_status;
}

}  // namespace collector
}  // namespace ringprof
