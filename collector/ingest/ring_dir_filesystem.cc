#include "collector/ingest/ring_dir_filesystem.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace {

constexpr uint64_t kFuseMagic = 0x65735546;  // not in linux/magic.h
constexpr uint64_t kCifsMagic = 0xff534d42;
constexpr uint64_t kSmb2Magic = 0xfe534d42;

// This file's metrics, registered together on first use.
struct FileMetrics {
  Gauge& file_server_gauge = Metrics::Get().GetGauge(
      "ringprof_ring_dir_file_server",
      "1 when the ring directory is served by a file server (9P, e.g. a "
      "gVisor volume without its mount hint; FUSE, NFS, SMB), whose shared "
      "mappings are not promised to be coherent; 0 otherwise.");
};

FileMetrics& metrics() {
  static FileMetrics* const m = new FileMetrics();
  return *m;
}

// The name of a file-server filesystem, or null for any other.
const char* FileServerName(uint64_t f_type) {
  switch (f_type) {
    case V9FS_MAGIC:
      return "9P";
    case kFuseMagic:
      return "FUSE";
    case NFS_SUPER_MAGIC:
      return "NFS";
    case kCifsMagic:
    case kSmb2Magic:
      return "SMB";
    default:
      return nullptr;
  }
}

}  // namespace

std::string RingDirFilesystemWarning(const std::string& dir, uint64_t f_type) {
  const char* name = FileServerName(f_type);
  if (name == nullptr) return "";
  return absl::StrCat(
      "ring directory ", dir, " is on a ", name, " filesystem (type ",
      absl::StrFormat("0x%x", f_type),
      "), not a tmpfs: the workload's and the collector's mappings of a ring "
      "are then not promised to see each other's stores. In a gVisor pod, "
      "make it an emptyDir with medium: Memory and let the runtime pass the "
      "pod's dev.gvisor.spec.mount.* annotations (containerd: "
      "pod_annotations = [\"dev.gvisor.*\"]), so that it is a tmpfs of the "
      "pod's kernel (examples/deploy/README.md)");
}

void CheckRingDirFilesystem(const std::string& dir) {
  struct statfs fs;
  if (::statfs(dir.c_str(), &fs) != 0) return;  // the watcher reports it
  const std::string warning =
      RingDirFilesystemWarning(dir, static_cast<uint64_t>(fs.f_type));
  metrics().file_server_gauge.Set(warning.empty() ? 0 : 1);
  if (!warning.empty()) LogWarning(warning);
}

}  // namespace collector
}  // namespace ringprof
