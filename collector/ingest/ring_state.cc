#include "collector/ingest/ring_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/base/file.h"
#include "collector/ingest/ring_state.pb.h"
#include "ringfile/format.h"

namespace ringprof {
namespace collector {
namespace {

constexpr uint32_t kStateVersion = 1;
constexpr char kSuffix[] = ".state";

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("ring state: ", what));
}

}  // namespace

absl::StatusOr<RingState> ParseRingState(absl::string_view bytes) {
  if (bytes.size() > kMaxStateBytes) return Invalid("too large");
  state::RingStateProto proto;
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Invalid("does not parse");
  }
  if (proto.version() != kStateVersion) {
    return Invalid(
        absl::StrFormat("version %u, want %u", proto.version(), kStateVersion));
  }
  if (proto.positions_size() < 1 ||
      proto.positions_size() > static_cast<int>(ringfile::kMaxRings)) {
    return Invalid(absl::StrFormat("%d positions", proto.positions_size()));
  }
  if (proto.modules_size() > static_cast<int>(kMaxSavedModules) ||
      proto.labels_size() > static_cast<int>(kMaxSavedLabels)) {
    return Invalid("too many modules or labels");
  }
  RingState state;
  state.pid = proto.pid();
  state.process_start_ticks = proto.process_start_ticks();
  state.created_monotonic_ns = proto.created_monotonic_ns();
  state.created_realtime_ns = proto.created_realtime_ns();
  if (proto.consumed_size() != proto.positions_size()) {
    return Invalid("consumed and positions differ in length");
  }
  for (int i = 0; i < proto.positions_size(); ++i) {
    if (proto.consumed(i) > ringfile::kMaxRecordIndex ||
        proto.positions(i) > proto.consumed(i)) {
      return Invalid("position");
    }
    state.positions.push_back(proto.positions(i));
    state.consumed.push_back(proto.consumed(i));
  }
  state.emitted_until_unix_ns = proto.emitted_until_unix_ns();
  for (const auto& m : proto.modules()) {
    if (m.path().size() > kMaxSavedStringBytes ||
        m.build_id_hex().size() > 2 * ringfile::kMaxBuildIdSize ||
        m.build_id_hex().find_first_not_of("0123456789abcdef") !=
            std::string::npos ||
        m.size() == 0 || m.start() + m.size() < m.start()) {
      return Invalid("module");
    }
    ModuleInfo module;
    module.path = m.path();
    module.build_id_hex = m.build_id_hex();
    module.start = m.start();
    module.size = m.size();
    module.file_offset = m.file_offset();
    module.load_bias = m.load_bias();
    state.modules.push_back(std::move(module));
  }
  for (const auto& l : proto.labels()) {
    if (l.key().size() > kMaxSavedStringBytes ||
        l.value().size() > kMaxSavedStringBytes) {
      return Invalid("label");
    }
    state.labels.emplace_back(l.key(), l.value());
  }
  state.cpu_timer = proto.cpu_timer();
  state.cpu_period_ns = proto.cpu_period_ns();
  return state;
}

std::string SerializeRingState(const RingState& state) {
  state::RingStateProto proto;
  proto.set_version(kStateVersion);
  proto.set_pid(state.pid);
  proto.set_process_start_ticks(state.process_start_ticks);
  proto.set_created_monotonic_ns(state.created_monotonic_ns);
  proto.set_created_realtime_ns(state.created_realtime_ns);
  for (uint64_t p : state.positions) proto.add_positions(p);
  for (uint64_t p : state.consumed) proto.add_consumed(p);
  proto.set_emitted_until_unix_ns(state.emitted_until_unix_ns);
  // Bounded like ParseRingState, so that what we write we can read back.
  for (const ModuleInfo& m : state.modules) {
    if (proto.modules_size() >= static_cast<int>(kMaxSavedModules)) break;
    if (m.path.size() > kMaxSavedStringBytes) continue;
    auto* out = proto.add_modules();
    out->set_path(m.path);
    out->set_build_id_hex(m.build_id_hex);
    out->set_start(m.start);
    out->set_size(m.size);
    out->set_file_offset(m.file_offset);
    out->set_load_bias(m.load_bias);
  }
  for (const auto& [key, value] : state.labels) {
    if (proto.labels_size() >= static_cast<int>(kMaxSavedLabels)) break;
    if (key.size() > kMaxSavedStringBytes ||
        value.size() > kMaxSavedStringBytes) {
      continue;
    }
    auto* out = proto.add_labels();
    out->set_key(key);
    out->set_value(value);
  }
  proto.set_cpu_timer(state.cpu_timer);
  proto.set_cpu_period_ns(state.cpu_period_ns);
  return proto.SerializeAsString();
}

RingState RingStateOf(const ringfile::FileInfo& info, Checkpoint checkpoint) {
  RingState state;
  static_cast<Checkpoint&>(state) = std::move(checkpoint);
  state.pid = info.pid;
  state.process_start_ticks = info.process_start_ticks;
  state.created_monotonic_ns = info.created_monotonic_ns;
  state.created_realtime_ns = info.created_realtime_ns;
  // A profiler that has not seen a batch yet knows no positions.
  state.positions.resize(info.ring_count, 0);
  state.consumed.resize(info.ring_count, 0);
  for (size_t i = 0; i < state.positions.size(); ++i) {
    state.consumed[i] = std::max(state.consumed[i], state.positions[i]);
  }
  return state;
}

bool StateMatches(const RingState& state, const ringfile::FileInfo& info) {
  return state.pid == info.pid &&
         state.process_start_ticks == info.process_start_ticks &&
         state.created_monotonic_ns == info.created_monotonic_ns &&
         state.created_realtime_ns == info.created_realtime_ns &&
         state.positions.size() == info.ring_count;
}

std::string RingStatePath(const std::string& state_dir,
                          const std::string& ring_path) {
  return absl::StrCat(state_dir, "/", Basename(ring_path), kSuffix);
}

absl::StatusOr<std::optional<RingState>> LoadRingState(
    const std::string& state_dir, const std::string& ring_path) {
  const std::string path = RingStatePath(state_dir, ring_path);
  absl::StatusOr<std::string> bytes =
      ReadRegularFile(path, kMaxStateBytes, /*follow_symlinks=*/false);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return std::optional<RingState>();
    return bytes.status();
  }
  absl::StatusOr<RingState> state = ParseRingState(*bytes);
  if (!state.ok()) {
    return absl::Status(state.status().code(),
                        absl::StrCat(path, ": ", state.status().message()));
  }
  return std::optional<RingState>(std::move(*state));
}

absl::Status SaveRingState(const std::string& state_dir,
                           const std::string& ring_path,
                           const RingState& state) {
  return WriteFileAtomically(RingStatePath(state_dir, ring_path),
                             SerializeRingState(state));
}

void RemoveRingState(const std::string& state_dir,
                     const std::string& ring_path) {
  ::unlink(RingStatePath(state_dir, ring_path).c_str());
}

void RemoveOrphanedStates(const std::string& state_dir,
                          const std::string& ring_dir) {
  DIR* dir = ::opendir(state_dir.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> orphans;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (!absl::EndsWith(name, kSuffix)) continue;
    const std::string ring =
        absl::StrCat(ring_dir, "/", name.substr(0, name.size() - 6));
    struct stat st;
    if (::lstat(ring.c_str(), &st) != 0 && errno == ENOENT) {
      orphans.push_back(absl::StrCat(state_dir, "/", name));
    }
  }
  ::closedir(dir);
  for (const std::string& path : orphans) ::unlink(path.c_str());
}

}  // namespace collector
}  // namespace ringprof
