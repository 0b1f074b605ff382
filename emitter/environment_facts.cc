#include "emitter/environment_facts.h"

#include <atomic>
#include <cstring>

#include "emitter/config.h"
#include "emitter/large_table.h"
#include "emitter/runtime.h"

namespace ringprof {
namespace emitter {
namespace {

constexpr int kMaxFacts = 16;

struct Fact {
  // 0: free, 1: being filled, 2: complete.
  std::atomic<int> state;
  ringfile::EnvironmentFact head;
  char detail[ringfile::kMaxEnvironmentFactDetailSize];
};
RINGPROF_LARGE_TABLE Fact g_facts[kMaxFacts];
std::atomic<int> g_fact_count{0};
std::atomic<bool> g_diagnostics{false};
std::atomic<void (*)()> g_startup_facts{nullptr};  // NoteStartupFacts

bool SameFact(const Fact& fact, uint16_t kind, const char* detail,
              uint16_t size) {
  return fact.state.load(std::memory_order_acquire) == 2 &&
         fact.head.kind == kind && fact.head.detail_size == size &&
         memcmp(fact.detail, detail, size) == 0;
}

void Append(const Fact& fact) {
  AppendRecord(ringfile::RecordType::kEnvironmentFact, &fact.head,
               sizeof(fact.head), fact.detail, fact.head.detail_size);
}

void Print(uint16_t kind, const char* detail) {
  const ringfile::EnvironmentFactDescription& what =
      ringfile::DescribeEnvironmentFact(kind);
  ReportToStderr("ringprof: ");
  ReportToStderr(what.meaning);
  if (*detail != '\0') {
    ReportToStderr(": ");
    ReportToStderr(detail);
  }
  ReportToStderr("\n");
}

}  // namespace

void NoteEnvironmentFact(ringfile::EnvironmentFactKind kind,
                         const char* detail) {
  if (detail == nullptr) detail = "";
  const uint16_t code = static_cast<uint16_t>(kind);
  const uint16_t size = static_cast<uint16_t>(
      strnlen(detail, ringfile::kMaxEnvironmentFactDetailSize));
  const int count = g_fact_count.load(std::memory_order_acquire);
  for (int i = 0; i < count && i < kMaxFacts; ++i) {
    if (SameFact(g_facts[i], code, detail, size)) return;
  }
  const int index = g_fact_count.fetch_add(1, std::memory_order_acq_rel);
  if (index >= kMaxFacts) return;
  Fact& fact = g_facts[index];
  fact.state.store(1, std::memory_order_relaxed);
  fact.head.monotonic_ns = MonotonicNowNs();
  fact.head.kind = code;
  fact.head.detail_size = size;
  fact.head.reserved = 0;
  memcpy(fact.detail, detail, size);
  fact.state.store(2, std::memory_order_release);
  if (g_diagnostics.load(std::memory_order_relaxed)) Print(code, detail);
  if (RingFileOpen()) Append(fact);
}

void EmitEnvironmentFacts() {
  const int count = g_fact_count.load(std::memory_order_acquire);
  for (int i = 0; i < count && i < kMaxFacts; ++i) {
    if (g_facts[i].state.load(std::memory_order_acquire) == 2) {
      Append(g_facts[i]);
    }
  }
  // Noted now, these are appended by NoteEnvironmentFact itself.
  if (g_startup_facts.load(std::memory_order_relaxed) != nullptr) {
    if (void (*note)() = g_startup_facts.exchange(nullptr)) note();
  }
}

void NoteStartupFacts(void (*note)()) {
  if (g_diagnostics.load(std::memory_order_relaxed)) {
    note();
  } else {
    g_startup_facts.store(note, std::memory_order_relaxed);
  }
}

void SetDiagnosticsToStderr(bool on) {
  g_diagnostics.store(on, std::memory_order_relaxed);
}

bool DiagnosticsToStderr() {
  return g_diagnostics.load(std::memory_order_relaxed);
}

}  // namespace emitter
}  // namespace ringprof
