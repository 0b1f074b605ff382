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
//  - The versions must exist on glibc 2.17 in libc.so.6, libdl.so.2 or
//    libpthread.so.0 (before 2.34 dl* and most pthread_* live in the latter
//    two; the library lists both as NEEDED). librt is not a dependency:
//    timer_* are made with raw system calls.
//  - Functions with no version <= 2.17 cannot be pinned: resolve them at run
//    time and degrade when absent (libc_features.h: _dl_find_object,
//    strerrorname_np), or avoid them (stat/fstat/lstat became functions only
//    in 2.33; use the system call).
//  - //emitter:glibc_versions_test fails when the library imports anything
//    newer than GLIBC_2.17, so a missing pin is caught at build time.
#ifndef RINGPROF_EMITTER_GLIBC_COMPAT_H_
#define RINGPROF_EMITTER_GLIBC_COMPAT_H_

#if defined(__x86_64__)

#define RINGPROF_PIN_GLIBC(name, version) \
  __asm__(".symver " #name "," #name "@" version)

// libdl until 2.34.
RINGPROF_PIN_GLIBC(dlsym, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(dlvsym, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(dlopen, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(dlclose, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(dlerror, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(dladdr, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(dladdr1, "GLIBC_2.3.3");
RINGPROF_PIN_GLIBC(dlinfo, "GLIBC_2.3.3");

// libpthread until 2.34 (pthread_getattr_np got a new version in 2.32;
// pthread_sigmask too, but the emitter defines that one).
RINGPROF_PIN_GLIBC(pthread_attr_getstack, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_detach, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_getattr_np, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_getname_np, "GLIBC_2.12");
RINGPROF_PIN_GLIBC(pthread_getspecific, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_join, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_key_create, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_key_delete, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_kill, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_mutex_trylock, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_once, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_setspecific, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_sigqueue, "GLIBC_2.11");
RINGPROF_PIN_GLIBC(pthread_spin_lock, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_spin_unlock, "GLIBC_2.2.5");
RINGPROF_PIN_GLIBC(pthread_spin_trylock, "GLIBC_2.2.5");

#undef RINGPROF_PIN_GLIBC

#endif  // __x86_64__

#endif  // RINGPROF_EMITTER_GLIBC_COMPAT_H_
