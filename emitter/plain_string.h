// String helpers for what every process runs at start (symbol lookup, the
// environment scan), inline in the library instead of calls into libc.
//
// Why: libringprof.so is linked -z lazy, so each libc function it calls is
// bound on its first call, by a lookup of its name through every loaded
// object (~800 instructions of the loader's, and its hash tables' memory),
// in every process. For strcmp & co. on symbol names and environment
// entries, a byte loop costs less than that binding does. (No strlen: the
// compiler turns such a loop back into a call.)
//
// Contract: the C library's semantics for these uses (NUL-terminated
// strings; bytes compared as unsigned char); no allocation, no system call,
// async-signal-safe.
#ifndef RINGPROF_EMITTER_PLAIN_STRING_H_
#define RINGPROF_EMITTER_PLAIN_STRING_H_

#include <cstddef>

namespace ringprof {
namespace emitter {

// strcmp(a, b) == 0.
inline bool SameString(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

// strncmp(s, prefix, n) == 0 where prefix has n non-NUL bytes: whether s
// starts with them.
inline bool HasPrefix(const char* s, const char* prefix, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (s[i] != prefix[i]) return false;  // s's NUL stops here too
  }
  return true;
}

// What follows the last '/' of `path` (all of it without one).
inline const char* AfterLastSlash(const char* path) {
  const char* last = path;
  for (const char* p = path; *p != '\0'; ++p) {
    if (*p == '/') last = p + 1;
  }
  return last;
}

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_PLAIN_STRING_H_
