// The libc functions libringprof.so calls that not every libc it loads under
// defines: declared weak, so that the library still loads where they are
// missing (musl's loader refuses a library with an undefined strong symbol;
// a weak one just resolves to null). glibc >= 2.17 defines each of them.
//
// Rules for any code linked into libringprof.so:
//  - A strong import must be defined by glibc 2.17 (glibc_compat.h) and by
//    musl's libc.so (//emitter:libc_imports_test checks both on the built
//    library). Anything else is declared weak here, and every caller tests
//    for null before calling and degrades when it is (null means "not this
//    libc"; glibc always has them):
//        if (on_exit != nullptr) on_exit(...); else ...
//  - Data objects of the dynamic loader (__libc_stack_end) and functions in
//    libraries the process may not have loaded (libdl, libpthread before
//    glibc 2.34, libgcc_s) are not imported at all but looked up at run time
//    (loaded_symbols.h): a weak import still names its library's version in
//    the import table, and a NEEDED entry beyond libc would fail on musl.
//  - A musl-only function: look it up at run time too (pthread_atfork,
//    which glibc >= 2.28 keeps only in libc_nonshared.a).
//  - Nothing here may be declared by the emitter's own definitions
//    (interposed functions are never weak imports).
//
// Thread-safety: declarations only.
#ifndef RINGPROF_EMITTER_LIBC_IMPORTS_H_
#define RINGPROF_EMITTER_LIBC_IMPORTS_H_

#include <gnu/libc-version.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>

// Declared by the headers above: made weak here. on_exit is glibc's exit
// handler with the exit status (musl has none: the status is then unknown,
// ProcessEnd carries -1); gnu_get_libc_version its version string ("2.31").
#pragma weak on_exit
#pragma weak gnu_get_libc_version

extern "C" {
// glibc's fork handlers (what its pthread_atfork, a static stub in
// libc_nonshared.a, calls).
int __register_atfork(void (*prepare)(), void (*parent)(), void (*child)(),
                      void* dso_handle) __attribute__((weak));
// glibc's own names of its allocator and of sigaction: last resorts when
// no object after libringprof.so defines malloc & co. or sigaction.
void* __libc_malloc(size_t size) __attribute__((weak));
void __libc_free(void* ptr) __attribute__((weak));
void* __libc_calloc(size_t count, size_t size) __attribute__((weak));
void* __libc_realloc(void* ptr, size_t size) __attribute__((weak));
void* __libc_memalign(size_t alignment, size_t size) __attribute__((weak));
int __sigaction(int signal, const struct sigaction* action,
                struct sigaction* old) __attribute__((weak));
}

#endif  // RINGPROF_EMITTER_LIBC_IMPORTS_H_
