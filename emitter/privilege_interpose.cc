// Calls that take away what ring creation needs, wrapped so that the ring
// file is created first: a server that starts as root and switches its
// workers to an unprivileged user (nginx, postgres-style supervisors,
// sshd's privilege separation) could otherwise not create the workers'
// rings in a directory only the starting user may write (`ringprof run`'s
// private 0700 directory). The file is created under the old credentials
// and stays mapped; appending needs no permission.
//
// Each wrapper creates the pending ring (session.h) and forwards to the
// next definition; with the emitter off, or the ring already there, it only
// forwards. setgroups/initgroups are not wrapped: they keep the user.
#include <errno.h>
#include <grp.h>
#include <sys/types.h>
#include <unistd.h>

#include "emitter/loaded_symbols.h"
#include "emitter/runtime.h"
#include "emitter/session.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace ringprof {
namespace emitter {
namespace {

template <typename Fn>
Fn Next(const char* name) {
  // Resolved per call: these run a handful of times per process.
  return reinterpret_cast<Fn>(NextSymbol(name));
}

int Missing() {
  errno = ENOSYS;
  return -1;
}

// The ring is created before the credentials change.
template <typename Fn, typename... Args>
int CreateRingThen(const char* name, Args... args) {
  const Fn next = Next<Fn>(name);
  if (next == nullptr) return Missing();
  if (Enabled()) CreatePendingRing();
  return next(args...);
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof

namespace e = ringprof::emitter;

RINGPROF_EXPORT int setuid(uid_t uid) {
  return e::CreateRingThen<int (*)(uid_t)>("setuid", uid);
}
RINGPROF_EXPORT int seteuid(uid_t uid) {
  return e::CreateRingThen<int (*)(uid_t)>("seteuid", uid);
}
RINGPROF_EXPORT int setreuid(uid_t ruid, uid_t euid) {
  return e::CreateRingThen<int (*)(uid_t, uid_t)>("setreuid", ruid, euid);
}
RINGPROF_EXPORT int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
  return e::CreateRingThen<int (*)(uid_t, uid_t, uid_t)>("setresuid", ruid,
                                                         euid, suid);
}
RINGPROF_EXPORT int setgid(gid_t gid) {
  return e::CreateRingThen<int (*)(gid_t)>("setgid", gid);
}
RINGPROF_EXPORT int setegid(gid_t gid) {
  return e::CreateRingThen<int (*)(gid_t)>("setegid", gid);
}
RINGPROF_EXPORT int setregid(gid_t rgid, gid_t egid) {
  return e::CreateRingThen<int (*)(gid_t, gid_t)>("setregid", rgid, egid);
}
RINGPROF_EXPORT int setresgid(gid_t rgid, gid_t egid, gid_t sgid) {
  return e::CreateRingThen<int (*)(gid_t, gid_t, gid_t)>("setresgid", rgid,
                                                         egid, sgid);
}
RINGPROF_EXPORT int chroot(const char* path) {
  return e::CreateRingThen<int (*)(const char*)>("chroot", path);
}
