// The module map: which object file is mapped where, so the collector can
// symbolize frames without reading the workload's /proc (which a sidecar in
// another sandbox or PID namespace may not see).
//
// One ModuleMap record per executable PT_LOAD segment of every loaded object
// (path, start, size, file offset, load bias, GNU build-id). The emitter
// keeps what it recorded in a fixed table (no allocation).
//
// How changes are noticed without interposing dlopen (a dlopen wrapper
// would change the caller glibc sees, and with it the RPATH/RUNPATH and
// $ORIGIN used to find the library) and without the loader lock in malloc:
//  - the objects loaded at start: with _dl_find_object, from the record of
//    them the library's constructors make anyway (RecordStartObjects,
//    loaded_symbols.h), each described by _dl_find_object at its first
//    address, when the table is first used: at the first sample (in a
//    signal handler too: no loader lock) or at the ring file's creation. A
//    process that never samples never builds the table. Without
//    _dl_find_object, or with more objects than the record holds,
//    dl_iterate_phdr records every object at start (RecordLoadedModules);
//  - every sampled stack (allocation, wait and, with _dl_find_object, CPU
//    samples: NoteSampleModules, runtime.h) is checked against the table
//    (NoteStackModules);
//    a frame in an unknown object is looked up with _dl_find_object, which
//    is lock-free and async-signal-safe, and its object is recorded from its
//    in-memory ELF header. So an object is recorded before (or with) the
//    first sample that needs it, whoever loaded it (dlopen, NSS, iconv...);
//  - every kReemitIntervalNs the sampled path (allocation samples; wait and,
//    with _dl_find_object, CPU samples too) re-records the whole table for
//    a collector that started late or lost records in a lapped ring (sooner
//    in a file's first seconds: after 100 ms, 200 ms, 400 ms ..., since a
//    busy thread laps its ring in about 100 ms and a collector that lost
//    the first copy would otherwise cut its first window unsymbolized), and
//    first drops (ModuleUnmap) entries whose object _dl_find_object no
//    longer reports at that address (dlclose).
//  - on glibc < 2.35 (no _dl_find_object, see libc_features.h), both
//    lookups are a rescan with dl_iterate_phdr instead: on a frame in an
//    unknown object (at most every 100 ms) and every kReemitIntervalNs.
//    Sampled stacks come from allocations there, outside signal handlers,
//    where the loader's recursive lock can be taken.
//
// Thread-safety: table updates serialise on an internal spin lock; the
// sampled-path functions only try-lock it and give up when it is taken
// (the next sample retries). Lookups read the table lock-free.
#ifndef RINGPROF_EMITTER_MODULE_MAP_H_
#define RINGPROF_EMITTER_MODULE_MAP_H_

#include <cstdint>

namespace ringprof {
namespace emitter {

// Longer paths are recorded truncated to this many bytes.
inline constexpr uint32_t kMaxModulePathSize = 512;
// Executable segments beyond this many are recorded when first seen but
// never re-recorded.
inline constexpr int kMaxModules = 512;
inline constexpr uint64_t kReemitIntervalNs = 5'000'000'000;
// The first re-emission comes this long after the file's first copy, and
// each interval doubles up to kReemitIntervalNs.
inline constexpr uint64_t kFirstReemitIntervalNs = 100'000'000;

// At start (not inside malloc: dl_iterate_phdr takes the loader lock):
// records every loaded object, or, with _dl_find_object and the start
// objects recorded (loaded_symbols.h), leaves them to the table's first use.
void RecordLoadedModules();

// Records every known module again (e.g. into a new ring file); false,
// recording nothing, when the table is being updated right now (possibly by
// the calling thread, interrupted by a signal).
bool TryEmitAllModules();

// Makes the next MaybeReemitModules re-record the table at once.
void RequestModuleReemit();

// From the sampled path, with a just-captured stack: records objects the
// stack runs in that the table does not know yet.
void NoteStackModules(const uint64_t* frames, int frame_count);

// In a fork child: another thread of the parent may have held the table's
// lock at the fork; it does not exist here, so the lock is released.
void ResetModuleMapAfterFork();

// From the sampled path: at growing intervals (kFirstReemitIntervalNs
// doubling up to kReemitIntervalNs), drops unloaded objects and re-records
// the table; true when it did. Does nothing when another thread is at it.
bool MaybeReemitModules(uint64_t now_ns);

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_MODULE_MAP_H_
