// Whether the ring directory can carry the shared mappings between the
// workload and the collector.
//
// A ring is a MAP_SHARED file written by one process and read by another.
// On a tmpfs (a Kubernetes emptyDir of medium Memory, which gVisor turns
// into a tmpfs of the pod's own kernel when the pod carries the mount-hint
// annotations) both mappings are the same pages. A filesystem reached
// through a file server is not: under gVisor a volume without the hint is
// served by the gofer over 9P, and whether two processes' mappings of it see
// each other's stores depends on gVisor's caching flags, not on a promise.
// The collector says so once at start and exports it on /metrics.
//
// Thread-compatible; allocates.
#ifndef RINGPROF_COLLECTOR_INGEST_RING_DIR_FILESYSTEM_H_
#define RINGPROF_COLLECTOR_INGEST_RING_DIR_FILESYSTEM_H_

#include <cstdint>
#include <string>

namespace ringprof {
namespace collector {

// The warning for a ring directory `dir` on a filesystem of type `f_type`
// (statfs(2)), or "" when the filesystem serves shared mappings from memory
// the two processes share.
std::string RingDirFilesystemWarning(const std::string& dir, uint64_t f_type);

// statfs(dir), then the warning (once per call) and the gauge
// ringprof_ring_dir_file_server (1: the directory is served by a file
// server; 0: it is not).
void CheckRingDirFilesystem(const std::string& dir);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_INGEST_RING_DIR_FILESYSTEM_H_
