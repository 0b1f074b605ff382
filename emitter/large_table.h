// RINGPROF_LARGE_TABLE: where the emitter's large static tables live.
//
// Every page of the library's writable data that a process touches costs it
// a page fault (a fork child: a page copy), and every process that loads
// the library touches its small variables at start (configuration, flags,
// the next allocator's table). Those fit on two or three pages, but only if
// the large tables — the module table, the live set, the unwind cache, the
// tag table, the timer registry, tens of KiB to a MiB each, touched only by
// processes that sample — do not sit between them in .bss.
//
// So every static object of 4 KiB or more, and every one of 1 KiB or more
// that only a sampling process touches, is marked RINGPROF_LARGE_TABLE:
// GCC puts it in x86-64's large-data BSS section (.lbss, zero-filled, no
// file space, addressed RIP-relative like any other: the code that reads it
// does not change), which the linkers place after .bss. Elsewhere (another
// architecture, or clang, which would give such a section file space) the
// mark does nothing but lose the packing.
//
// Use on definitions only (never on extern declarations), of objects that
// are zero-initialised.
#ifndef RINGPROF_EMITTER_LARGE_TABLE_H_
#define RINGPROF_EMITTER_LARGE_TABLE_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RINGPROF_LARGE_TABLE __attribute__((section(".lbss.ringprof")))
#else
#define RINGPROF_LARGE_TABLE
#endif

#endif  // RINGPROF_EMITTER_LARGE_TABLE_H_
