/* The floor of tools/bench.d/spawn: the smallest LD_PRELOAD malloc
 * interposer there is. It forwards malloc, free, calloc and realloc to
 * glibc and does nothing else (no constructor, no lookup, no dependency but
 * libc), so what a process pays for it is what preloading any library
 * costs: opening, mapping and relocating one more object. */
#include <stddef.h>

void* __libc_malloc(size_t size);
void __libc_free(void* ptr);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);

void* malloc(size_t size) { return __libc_malloc(size); }
void free(void* ptr) { __libc_free(ptr); }
void* calloc(size_t count, size_t size) { return __libc_calloc(count, size); }
void* realloc(void* ptr, size_t size) { return __libc_realloc(ptr, size); }
