// Keeps libringprof.so loadable on every glibc >= 2.17 although it is built
// against a newer one: pins each glibc function whose default symbol version
// is newer than GLIBC_2.17 to the older version it also exports (the same
// implementation, kept for old binaries).
//
// Contract:
//  - Force-included (-include) into every translation unit of the preloaded
//    library by emitter/BUILD.bazel; the sanitizer-instrumented test builds
//    do not include it (they never run on an old glibc).
//  - A .symver line only renames references: a function not used in a
//    translation unit adds no import. Never list a function the emitter
//    itself defines (pthread_create, exec*, sigaction, pthread_sigmask, ...):
//    .symver would rename the definition too.
//  - The versions must exist on glibc 2.17 in libc.so.6. libdl.so.2 and
//    libpthread.so.0 are not dependencies (a process has them only if it
//    uses them itself): dl* and the pthread_* functions that lived there
//    before 2.34 are looked up at run time (loaded_symbols.h); librt is not
//    one either: timer_* are made with raw system calls.
//  - Functions with no version <= 2.17 cannot be pinned: resolve them at run
//    time and degrade when absent (libc_features.h: _dl_find_object,
//    strerrorname_np), or avoid them (stat/fstat/lstat became functions only
//    in 2.33; use the system call).
//  - //emitter:glibc_versions_test fails when the library imports anything
//    newer than GLIBC_2.17, so a missing pin is caught at build time.
#ifndef RINGPROF_EMITTER_GLIBC_COMPAT_H_
#define RINGPROF_EMITTER_GLIBC_COMPAT_H_

// Nothing the library calls needs a pin today (the dl* and pthread_* ones
// that did are looked up at run time now). A pin is one line:
//   __asm__(".symver name,name@GLIBC_2.x");

#endif  // RINGPROF_EMITTER_GLIBC_COMPAT_H_
