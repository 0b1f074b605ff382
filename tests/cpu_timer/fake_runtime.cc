#include "tests/cpu_timer/fake_runtime.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <cstring>

#include "emitter/config.h"
#include "emitter/runtime.h"
#include "ringfile/format.h"

namespace ringprof {
namespace cpu_timer_test {
namespace {

constexpr int kCapacity = 1 << 16;

FakeCpuSample g_samples[kCapacity];
std::atomic<bool> g_committed[kCapacity];
std::atomic<int> g_next{0};
std::atomic<uint64_t> g_refused{0};

struct UnwindState {
  uint64_t* frames;
  int max_frames;
  int skip;
  int count;
  bool truncated;
};

_Unwind_Reason_Code CollectFrame(struct _Unwind_Context* context, void* arg) {
  UnwindState* state = static_cast<UnwindState*>(arg);
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  if (state->skip > 0) {
    --state->skip;
    return _URC_NO_REASON;
  }
  if (state->count == state->max_frames) {
    state->truncated = true;
    return _URC_END_OF_STACK;
  }
  state->frames[state->count++] = ip;
  return _URC_NO_REASON;
}

}  // namespace

int FakeSampleCount() {
  const int next = g_next.load(std::memory_order_acquire);
  return next < kCapacity ? next : kCapacity;
}

const FakeCpuSample* FakeSample(int i) {
  if (i < 0 || i >= kCapacity ||
      !g_committed[i].load(std::memory_order_acquire)) {
    return nullptr;
  }
  return &g_samples[i];
}

uint64_t FakeRefusedCount() {
  return g_refused.load(std::memory_order_relaxed);
}

}  // namespace cpu_timer_test

namespace emitter {

bool Enabled() { return true; }

bool AppendRecord(ringfile::RecordType type, const void* head,
                  uint32_t head_size, const void* tail, uint32_t tail_size) {
  using cpu_timer_test::FakeCpuSample;
  if (type != ringfile::RecordType::kCpuSample ||
      head_size != sizeof(ringfile::CpuSample)) {
    return false;
  }
  const int index =
      cpu_timer_test::g_next.fetch_add(1, std::memory_order_acq_rel);
  if (index >= cpu_timer_test::kCapacity) {
    cpu_timer_test::g_refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  ringfile::CpuSample sample;
  memcpy(&sample, head, sizeof(sample));
  FakeCpuSample& out = cpu_timer_test::g_samples[index];
  out.tid = sample.tid;
  out.frame_count = sample.frame_count;
  out.flags = sample.flags;
  out.cpu_period_ns = sample.cpu_period_ns;
  uint32_t frames = tail_size / sizeof(uint64_t);
  if (frames > static_cast<uint32_t>(cpu_timer_test::kFakeFramesKept)) {
    frames = cpu_timer_test::kFakeFramesKept;
  }
  memcpy(out.frames, tail, frames * sizeof(uint64_t));
  cpu_timer_test::g_committed[index].store(true, std::memory_order_release);
  return true;
}

// Printed, as the emitter does with RINGPROF_LOG=stderr.
void NoteEnvironmentFact(ringfile::EnvironmentFactKind kind,
                         const char* detail) {
  ReportToStderr("ringprof: ");
  ReportToStderr(
      ringfile::DescribeEnvironmentFact(static_cast<uint16_t>(kind)).meaning);
  ReportToStderr(": ");
  ReportToStderr(detail != nullptr ? detail : "");
  ReportToStderr("\n");
}

uint32_t CurrentTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

uint64_t MonotonicNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + ts.tv_nsec;
}

int CaptureStack(uint64_t* frames, int max_frames, int skip, bool* truncated) {
  cpu_timer_test::UnwindState state = {frames, max_frames, skip + 1, 0, false};
  _Unwind_Backtrace(&cpu_timer_test::CollectFrame, &state);
  *truncated = state.truncated;
  return state.count;
}

int MaxFrames() { return 128; }

void NoteSampleModules(const uint64_t*, int) {}

void MaybeReemitSampleModules(uint64_t) {}

SampleTags TagsForSample(uint64_t) { return {0, 0}; }

}  // namespace emitter
}  // namespace ringprof
