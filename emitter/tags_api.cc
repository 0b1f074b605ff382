// The application API's exported definitions (include/ringprof/ringprof.h).
#define RINGPROF_EXPORTING_API
#include "emitter/tags.h"
#include "ringprof/ringprof.h"

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

RINGPROF_EXPORT void ringprof_tag_push(const char* key, const char* value) {
  ringprof::emitter::PushTag(key, value);
}

RINGPROF_EXPORT void ringprof_tag_pop(void) { ringprof::emitter::PopTag(); }

RINGPROF_EXPORT uint64_t ringprof_span_set(uint64_t span_id) {
  return ringprof::emitter::SetSpanId(span_id);
}
