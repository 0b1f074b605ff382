// A stand-in for the emitter's runtime (emitter/runtime.h) that keeps CPU
// samples in memory, so the CPU-timer sampler can be tested in-process, under
// ASan and TSan, without a ring file or LD_PRELOAD.
//
// Every runtime.h function it implements keeps that header's contract
// (async-signal-safe, allocation-free, lock-free). The accessors below are
// for the test's own threads; they see a sample once it is fully written.
#ifndef RINGPROF_TESTS_CPU_TIMER_FAKE_RUNTIME_H_
#define RINGPROF_TESTS_CPU_TIMER_FAKE_RUNTIME_H_

#include <cstdint>

namespace ringprof {
namespace cpu_timer_test {

inline constexpr int kFakeFramesKept = 32;

struct FakeCpuSample {
  uint32_t tid;
  uint16_t frame_count;  // as recorded (may exceed kFakeFramesKept)
  uint16_t flags;
  uint64_t cpu_period_ns;
  uint64_t frames[kFakeFramesKept];
};

// Samples appended so far (capped at the fake's capacity, 65536).
int FakeSampleCount();
// Sample i, or nullptr while it is still being written.
const FakeCpuSample* FakeSample(int i);
// AppendRecord calls refused because the store was full.
uint64_t FakeRefusedCount();

}  // namespace cpu_timer_test
}  // namespace ringprof

#endif  // RINGPROF_TESTS_CPU_TIMER_FAKE_RUNTIME_H_
