// Fortified headers define read() & co. as inline wrappers; this file only
// names them.
#undef _FORTIFY_SOURCE
#include "emitter/wait_next.h"

#include <errno.h>

#include "emitter/loaded_symbols.h"
#include "emitter/thread_state.h"

namespace ringprof {
namespace emitter {
namespace {

// Stubs: resolve the table, then call what it now holds.
#define RINGPROF_WAIT_NEXT_STUB(name, ret, params, args, fail) \
  ret Unresolved_##name params {                               \
    ResolveWaitNext();                                         \
    return g_wait_next.name args;                              \
  }
RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_STUB)
#undef RINGPROF_WAIT_NEXT_STUB

// What a function no loaded object defines does instead.
#define RINGPROF_WAIT_NEXT_MISSING(name, ret, params, args, fail) \
  ret Missing_##name params { return fail; }
RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_MISSING)
#undef RINGPROF_WAIT_NEXT_MISSING

// The names, with their hashes computed at compile time.
struct WaitName {
  const char* name;
  uint32_t hash;
};
constexpr WaitName kWaitNames[] = {
#define RINGPROF_WAIT_NEXT_NAME(name, ret, params, args, fail) \
  {#name, GnuSymbolHash(#name)},
    RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_NAME)
#undef RINGPROF_WAIT_NEXT_NAME
};
constexpr int kWaitNameCount = sizeof(kWaitNames) / sizeof(kWaitNames[0]);

}  // namespace

#define RINGPROF_WAIT_NEXT_INIT(name, ret, params, args, fail) \
  Unresolved_##name,
WaitNext g_wait_next = {RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_INIT)};
#undef RINGPROF_WAIT_NEXT_INIT

void ResolveWaitNext() {
  ReentryGuard guard;  // nothing the lookup does is sampled
  const int saved_errno = errno;
  SymbolRequest requests[kWaitNameCount];
  for (int i = 0; i < kWaitNameCount; ++i) {
    requests[i] = {kWaitNames[i].name, SymbolScope::kNext};
    requests[i].gnu_hash = kWaitNames[i].hash;
  }
  LookUpSymbols(requests, kWaitNameCount);
  int i = 0;
#define RINGPROF_WAIT_NEXT_STORE(name, ret, params, args, fail)  \
  g_wait_next.name =                                             \
      requests[i].address != nullptr                             \
          ? reinterpret_cast<ret(*) params>(requests[i].address) \
          : Missing_##name;                                      \
  ++i;
  RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_STORE)
#undef RINGPROF_WAIT_NEXT_STORE
  errno = saved_errno;
}

}  // namespace emitter
}  // namespace ringprof
