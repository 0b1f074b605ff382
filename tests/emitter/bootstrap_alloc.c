// An allocator whose malloc is an IFUNC with a resolver that allocates.
// Preloaded after libringprof.so it is the emitter's next allocator, so
// the resolver runs while the emitter resolves its table, and the blocks it
// asks for come from the emitter's bootstrap arena. They are kept until the
// program exits, long after the table was resolved; then one is freed and
// one resized: the emitter must recognise both as arena blocks (their
// filter cells are pinned) and never hand them to glibc, which aborts on a
// pointer it did not make.
//
// At exit it prints "bootstrap_alloc: usable <A> <B> moved <ok>", A and B
// the sizes malloc_usable_size reports for the kept blocks (the emitter
// reports an arena block's requested size, 40 and 24; glibc would say more).
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void* __libc_malloc(size_t size);
extern void __libc_free(void* ptr);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);

static void* g_freed_later;
static void* g_resized_later;

static void* ForwardMalloc(size_t size) { return __libc_malloc(size); }

// Runs when the emitter looks malloc up (the loader never binds to this
// definition: the emitter's malloc comes first for every object).
static void* (*ResolveMalloc(void))(size_t) {
  g_freed_later = malloc(40);
  g_resized_later = malloc(24);
  if (g_resized_later != NULL) strcpy((char*)g_resized_later, "bootstrap");
  return ForwardMalloc;
}

void* malloc(size_t size) __attribute__((ifunc("ResolveMalloc")));
void free(void* ptr) { __libc_free(ptr); }
void* calloc(size_t count, size_t size) { return __libc_calloc(count, size); }
void* realloc(void* ptr, size_t size) { return __libc_realloc(ptr, size); }
void* memalign(size_t alignment, size_t size) {
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  return __libc_memalign(alignment, size);
}

__attribute__((destructor)) static void Release(void) {
  const size_t freed_usable = malloc_usable_size(g_freed_later);
  const size_t resized_usable = malloc_usable_size(g_resized_later);
  free(g_freed_later);
  char* moved = (char*)realloc(g_resized_later, 4096);
  const int ok = moved != NULL && strcmp(moved, "bootstrap") == 0;
  free(moved);
  fprintf(stderr, "bootstrap_alloc: usable %zu %zu moved %d\n", freed_usable,
          resized_usable, ok);
}
