// The benchmark's floor: an LD_PRELOAD library that interposes the same
// malloc family as libringprof.so and forwards to glibc without doing
// anything else. The cost of interposition itself (PLT hop into another
// object, lost inlining of glibc's fast paths) is what it measures.
#include <errno.h>

#include <cstddef>

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void* __libc_valloc(size_t size);
void* __libc_pvalloc(size_t size);

void* malloc(size_t size) { return __libc_malloc(size); }
void free(void* ptr) { __libc_free(ptr); }
void* calloc(size_t count, size_t size) { return __libc_calloc(count, size); }
void* realloc(void* ptr, size_t size) { return __libc_realloc(ptr, size); }
void* reallocarray(void* ptr, size_t count, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return __libc_realloc(ptr, bytes);
}
int posix_memalign(void** result, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || alignment == 0 ||
      ((alignment / sizeof(void*)) & (alignment / sizeof(void*) - 1)) != 0) {
    return EINVAL;
  }
  void* ptr = __libc_memalign(alignment, size);
  if (ptr == nullptr) return ENOMEM;
  *result = ptr;
  return 0;
}
void* aligned_alloc(size_t alignment, size_t size) {
  return __libc_memalign(alignment, size);
}
void* memalign(size_t alignment, size_t size) {
  return __libc_memalign(alignment, size);
}
void* valloc(size_t size) { return __libc_valloc(size); }
void* pvalloc(size_t size) { return __libc_pvalloc(size); }
}
