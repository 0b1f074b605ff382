// The cap on ring space in a ring directory (RINGPROF_DIR_MAX_MIB), kept by
// the emitter itself so that it holds with no collector running: before a
// ring file is created, the ring files in the directory are summed, and
// while the new file would not fit, the ring of a process that is gone is
// deleted — rings that ended (ProcessEnd) before those that did not
// (crash, _exit, an exec'd-away image), oldest first. A ring whose process
// is alive, as seen through /proc/<pid>/stat (pid and start time), is never
// deleted; so processes of another PID namespace must not share the
// directory (their pids mean nothing here).
//
// Contract: system calls only (getdents64, fstatat, pread, unlinkat), no
// allocation, no lock, bounded stack: callable inside malloc or a signal
// handler, like ring creation itself. Thread-compatible.
#ifndef RINGPROF_EMITTER_RING_DIR_CAP_H_
#define RINGPROF_EMITTER_RING_DIR_CAP_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

// Makes room for a file of `new_file_size` bytes in `dir` under
// `cap_bytes` (0 = no cap). Returns 0 when it fits (or the directory cannot
// be read: creation then reports its own error), EDQUOT when the rings of
// live processes alone leave no room.
int MakeRoomInRingDir(const char* dir, uint64_t cap_bytes,
                      uint64_t new_file_size);

// Field 22 of /proc/<pid>/stat (of this process when pid is 0) as the
// kernel reports it (also under qemu-user, which rewrites its own): the start
// time in clock ticks since boot; 0 when the process does not exist or the
// file cannot be read.
uint64_t ProcessStartTicks(uint32_t pid);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_RING_DIR_CAP_H_
