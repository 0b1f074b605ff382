// Environment facts (ringfile/FORMAT.md §5.4): what the emitter knows about
// the process's environment that changes what its profiles can show (an
// older glibc, musl, no libgcc_s, a sample source switched off). The emitter
// prints nothing on the program's stdout or stderr in normal operation: it
// records these in the ring file instead, and the collector reports them.
// With RINGPROF_LOG=stderr each is also printed once, when noted.
//
// Contract: every function is async-signal-safe, lock-free and
// allocation-free. Facts are kept for the whole process (at most
// kMaxFacts, the rest are dropped; a fork child inherits them and writes
// them into its own file).
#ifndef RINGPROF_EMITTER_ENVIRONMENT_FACTS_H_
#define RINGPROF_EMITTER_ENVIRONMENT_FACTS_H_

#include "emitter/runtime.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {

// NoteEnvironmentFact is declared in runtime.h (the sample sources use it).

// Appends every noted fact (after the module map: at file creation and at
// its re-emissions). Creates no file.
void EmitEnvironmentFacts();

// Facts known from the start that only a ring file needs (the C library's):
// `note` (which calls NoteEnvironmentFact) runs at the first
// EmitEnvironmentFacts, i.e. when the file is created, so that a process
// that never samples spends nothing on them; with RINGPROF_LOG=stderr it
// runs at once (they are printed when noted). Inherited by fork children
// that have not run it yet.
void NoteStartupFacts(void (*note)());

// RINGPROF_LOG=stderr: facts are also printed (set by the session start).
void SetDiagnosticsToStderr(bool on);
bool DiagnosticsToStderr();

}  // namespace emitter
}  // namespace ringprof

#endif  // RINGPROF_EMITTER_ENVIRONMENT_FACTS_H_
