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

// Each function's index in the table.
enum WaitIndex : int {
#define RINGPROF_WAIT_NEXT_INDEX(name, ret, params, args, fail) kIndex_##name,
  RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_INDEX)
#undef RINGPROF_WAIT_NEXT_INDEX
};

void ResolveWaitName(int index);

// Stubs: resolve their own entry, then call what it now holds.
#define RINGPROF_WAIT_NEXT_STUB(name, ret, params, args, fail) \
  ret Unresolved_##name params {                               \
    ResolveWaitName(kIndex_##name);                            \
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

// Stores entry `index`: `address`, or the Missing_ stand-in when null.
// Racing stores store the same value.
void StoreWaitNext(int index, void* address) {
  switch (index) {
#define RINGPROF_WAIT_NEXT_STORE(name, ret, params, args, fail)     \
  case kIndex_##name:                                               \
    __atomic_store_n(&g_wait_next.name,                             \
                     address != nullptr                             \
                         ? reinterpret_cast<ret(*) params>(address) \
                         : Missing_##name,                          \
                     __ATOMIC_RELAXED);                             \
    break;
    RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_STORE)
#undef RINGPROF_WAIT_NEXT_STORE
  }
}

SymbolRequest WaitRequest(int index) {
  SymbolRequest request{kWaitNames[index].name, SymbolScope::kNext};
  request.gnu_hash = kWaitNames[index].hash;
  return request;
}

// One entry from the objects recorded at start (lock-free); the whole
// table, under the loader's lock, when none were recorded.
void ResolveWaitName(int index) {
  ReentryGuard guard;  // nothing the lookup does is sampled
  const int saved_errno = errno;
  SymbolRequest request = WaitRequest(index);
  if (LookUpStartSymbols(&request, 1)) {
    StoreWaitNext(index, request.address);
  } else {
    ResolveWaitNext();
  }
  errno = saved_errno;
}

}  // namespace

#define RINGPROF_WAIT_NEXT_INIT(name, ret, params, args, fail) \
  Unresolved_##name,
WaitNext g_wait_next = {RINGPROF_WAIT_FUNCTIONS(RINGPROF_WAIT_NEXT_INIT)};
#undef RINGPROF_WAIT_NEXT_INIT

void ResolveWaitNext() {
  ReentryGuard guard;  // nothing the lookup does is sampled
  const int saved_errno = errno;
  SymbolRequest requests[kWaitNameCount];
  for (int i = 0; i < kWaitNameCount; ++i) requests[i] = WaitRequest(i);
  LookUpSymbols(requests, kWaitNameCount);
  for (int i = 0; i < kWaitNameCount; ++i) {
    StoreWaitNext(i, requests[i].address);
  }
  errno = saved_errno;
}

void PrepareWaitNext() {
  if (!RecordStartObjects()) ResolveWaitNext();
}

}  // namespace emitter
}  // namespace ringprof
