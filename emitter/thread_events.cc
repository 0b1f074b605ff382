#include "emitter/thread_events.h"

#include <sys/prctl.h>

#include <atomic>
#include <cstring>

#include "emitter/runtime.h"
#include "emitter/thread_state.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

// Starts at 1 so that a fresh thread (name_generation 0) records its name.
std::atomic<uint32_t> g_name_generation{1};

}  // namespace

void RecordThreadNameIfChanged() {
  const uint32_t generation = g_name_generation.load(std::memory_order_relaxed);
  ThreadState& thread = tls_thread_state;
  if (thread.name_generation == generation) return;
  // While another thread creates the ring file this record would be
  // dropped, and the next sample would ask the kernel for the name again
  // (a system call per sample: in gVisor a round trip each).
  if (!RingFileOpen()) return;
  char name[17] = {};  // PR_GET_NAME writes up to 16 bytes
  if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0) return;
  ringfile::ThreadName record;
  record.monotonic_ns = MonotonicNowNs();
  record.tid = CurrentTid();
  record.name_size = static_cast<uint16_t>(strnlen(name, 16));
  record.reserved = 0;
  if (AppendRecord(ringfile::RecordType::kThreadName, &record, sizeof(record),
                   name, record.name_size)) {
    thread.name_generation = generation;
  }
}

void NoteThreadRenamed() {
  uint32_t next = g_name_generation.fetch_add(1, std::memory_order_relaxed) + 1;
  if (next == 0) g_name_generation.fetch_add(1, std::memory_order_relaxed);
}

void RecordThreadExit() {
  ringfile::ThreadExit record;
  record.monotonic_ns = MonotonicNowNs();
  record.tid = CurrentTid();
  record.reserved = 0;
  AppendRecord(ringfile::RecordType::kThreadExit, &record, sizeof(record),
               nullptr, 0);
}

}  // namespace emitter
}  // namespace ringprof
