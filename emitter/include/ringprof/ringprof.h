/* ringprof application API: tag what a thread is doing, so that its CPU and
 * allocation samples carry the tags (pprof sample labels, Pyroscope series).
 *
 *   #include "ringprof/ringprof.h"
 *   ringprof_tag_push("endpoint", "/checkout");
 *   ...work...
 *   ringprof_tag_pop();
 *   // C++: ringprof::ScopedTag tag("endpoint", "/checkout");
 *
 * No link-time dependency: every function below is a `static inline`
 * wrapper that looks up libringprof.so's definition once with
 * dlsym(RTLD_DEFAULT) and does nothing when the emitter is not loaded (the
 * program runs unchanged, at the cost of a load and a branch per call).
 * Link with -ldl on glibc older than 2.34.
 *
 * Contract:
 *  - Tags are per thread: a push affects only the calling thread's samples
 *    until the matching pop. A fork child's thread starts with the tags of
 *    the thread that forked; threads a thread creates start with none.
 *  - With the emitter loaded, push, pop and span set are lock-free,
 *    allocation-free and async-signal-safe. The first call in each
 *    translation unit resolves the symbol with dlsym, which is neither: make
 *    one call (e.g. ringprof_available()) from ordinary code first if you
 *    tag inside signal handlers.
 *  - Bounds (nothing fails beyond them): keys are cut to 64 bytes, values to
 *    128 (at a UTF-8 character boundary); at most 8 pushes are in effect per
 *    thread (deeper pushes change nothing, and their pops pair up); a
 *    process interns at most 4096 distinct tag sets (a push that would make
 *    a new one keeps the current set). An empty or NULL key changes nothing
 *    (its pop still pairs up); a NULL value is "". An unbalanced pop is
 *    ignored.
 *  - The collector turns tags into pprof sample labels under Pyroscope's
 *    label rules: names it owns (service_name, pid, ... ) are never
 *    overridden, and each key has a budget of distinct values beyond which
 *    values become "other" (collector/README.md, "Tags").
 */
#ifndef RINGPROF_RINGPROF_H_
#define RINGPROF_RINGPROF_H_

#include <stdint.h>

#ifndef RINGPROF_EXPORTING_API
#ifndef _GNU_SOURCE
#define RINGPROF_UNDEF_GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#ifdef RINGPROF_UNDEF_GNU_SOURCE
#undef _GNU_SOURCE
#undef RINGPROF_UNDEF_GNU_SOURCE
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The functions libringprof.so exports under these names. */
typedef void (*ringprof_tag_push_fn)(const char* key, const char* value);
typedef void (*ringprof_tag_pop_fn)(void);
typedef uint64_t (*ringprof_span_set_fn)(uint64_t span_id);

#ifdef RINGPROF_EXPORTING_API
void ringprof_tag_push(const char* key, const char* value);
void ringprof_tag_pop(void);
uint64_t ringprof_span_set(uint64_t span_id);
#else

struct ringprof_api_ {
  int resolved; /* 0 = not yet, 1 = done (functions may still be NULL) */
  ringprof_tag_push_fn push;
  ringprof_tag_pop_fn pop;
  ringprof_span_set_fn span_set;
};

static inline struct ringprof_api_* ringprof_api_(void) {
  static struct ringprof_api_ api;
  if (!__atomic_load_n(&api.resolved, __ATOMIC_ACQUIRE)) {
    /* Racing first calls resolve the same addresses: harmless. */
    __atomic_store_n(
        &api.push,
        (ringprof_tag_push_fn)dlsym(RTLD_DEFAULT, "ringprof_tag_push"),
        __ATOMIC_RELAXED);
    __atomic_store_n(
        &api.pop, (ringprof_tag_pop_fn)dlsym(RTLD_DEFAULT, "ringprof_tag_pop"),
        __ATOMIC_RELAXED);
    __atomic_store_n(
        &api.span_set,
        (ringprof_span_set_fn)dlsym(RTLD_DEFAULT, "ringprof_span_set"),
        __ATOMIC_RELAXED);
    __atomic_store_n(&api.resolved, 1, __ATOMIC_RELEASE);
  }
  return &api;
}

/* Non-zero when libringprof.so is loaded (its tags reach the profile). */
static inline int ringprof_available(void) {
  return __atomic_load_n(&ringprof_api_()->push, __ATOMIC_RELAXED) != 0;
}

/* Pushes key=value onto the calling thread's tag stack. */
static inline void ringprof_tag_push(const char* key, const char* value) {
  ringprof_tag_push_fn fn =
      __atomic_load_n(&ringprof_api_()->push, __ATOMIC_RELAXED);
  if (fn) fn(key, value);
}

/* Pops the calling thread's innermost push. */
static inline void ringprof_tag_pop(void) {
  ringprof_tag_pop_fn fn =
      __atomic_load_n(&ringprof_api_()->pop, __ATOMIC_RELAXED);
  if (fn) fn();
}

/* Sets the calling thread's current trace span: the 8 bytes of an
 * OpenTelemetry span id read as a big-endian integer (so its lower-case
 * 16-hex-digit form is the span id's), 0 for none. Samples carry it as the
 * `span_id` label of Pyroscope's span profiles. Returns the previous span
 * (0 without the emitter). */
static inline uint64_t ringprof_span_set(uint64_t span_id) {
  ringprof_span_set_fn fn =
      __atomic_load_n(&ringprof_api_()->span_set, __ATOMIC_RELAXED);
  return fn ? fn(span_id) : 0;
}

/* An OpenTelemetry span id (8 bytes, e.g. SpanContext::span_id().Id()) as
 * ringprof_span_set takes it. */
static inline uint64_t ringprof_span_id_from_bytes(const uint8_t id[8]) {
  uint64_t v = 0;
  int i;
  for (i = 0; i < 8; ++i) v = (v << 8) | id[i];
  return v;
}

#endif /* RINGPROF_EXPORTING_API */

#ifdef __cplusplus
} /* extern "C" */

#ifndef RINGPROF_EXPORTING_API
namespace ringprof {

/* Tags the calling thread for the lifetime of the object. */
class ScopedTag {
 public:
  ScopedTag(const char* key, const char* value) {
    ringprof_tag_push(key, value);
  }
  ~ScopedTag() { ringprof_tag_pop(); }
  ScopedTag(const ScopedTag&) = delete;
  ScopedTag& operator=(const ScopedTag&) = delete;
};

/* Makes `span_id` the calling thread's span for the lifetime of the object
 * and restores the previous one after (nested spans). */
class ScopedSpan {
 public:
  explicit ScopedSpan(uint64_t span_id)
      : previous_(ringprof_span_set(span_id)) {}
  ~ScopedSpan() { ringprof_span_set(previous_); }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  uint64_t previous_;
};

}  // namespace ringprof
#endif /* RINGPROF_EXPORTING_API */
#endif /* __cplusplus */

#endif /* RINGPROF_RINGPROF_H_ */
