// Cost of the emitter's sampled path, measured in-process (the runtime is
// linked in, nothing is preloaded): SampleAllocation at a stack exactly 32
// frames deep with every allocation sampled (RINGPROF_SAMPLE_BYTES=1), and
// its two parts, CaptureStack and the ring append, on their own. Prints the
// median over batches of 1000 calls of the thread CPU time per call.
//
// Usage: sampled_path_bench RING_DIR [BATCHES [CALLS [PART]]]
//   CALLS per batch (default 1000); PART sample, capture or append runs that
//   part only (default all three). tools/bench.d/aarch64 counts the
//   instructions of one part as the difference of two runs with other CALLS.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "emitter/alloc_sampler.h"
#include "emitter/runtime.h"
#include "emitter/session.h"
#include "ringfile/format.h"

namespace ringprof {
namespace emitter {
namespace {

constexpr int kTargetFrames = 32;
int g_batches = 30;
int g_batch_size = 1000;
const char* g_part = "all";

struct Result {
  // Per batch: thread CPU nanoseconds per call.
  std::vector<double> sample, capture, append;
  int frames = 0;
};

uint64_t ThreadCpuNs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// CPU time rather than wall time: the machine this runs on is shared, and
// CPU time per call is what the workload pays.
template <typename Fn>
double CpuNsPerCall(Fn fn) {
  const uint64_t start = ThreadCpuNs();
  for (int i = 0; i < g_batch_size; ++i) fn();
  return static_cast<double>(ThreadCpuNs() - start) / g_batch_size;
}

void Measure(Result& result) {
  static char block[64];
  uint64_t frames[128];
  bool truncated;
  result.frames = CaptureStack(frames, 128, 0, &truncated);
  ringfile::AllocSample record = {};
  record.frame_count = kTargetFrames;
  // One part's CPU time per call, or 0 when PART leaves it out.
  const auto part = [](const char* name, auto fn) -> double {
    if (strcmp(g_part, "all") != 0 && strcmp(g_part, name) != 0) return 0;
    return CpuNsPerCall(fn);
  };
  for (int batch = 0; batch < g_batches; ++batch) {
    result.sample.push_back(
        part("sample", [&] { SampleAllocation(block, sizeof(block)); }));
    result.capture.push_back(
        part("capture", [&] { CaptureStack(frames, 128, 0, &truncated); }));
    result.append.push_back(part("append", [&] {
      AppendRecord(ringfile::RecordType::kAllocSample, &record, sizeof(record),
                   frames, sizeof(uint64_t) * kTargetFrames);
    }));
  }
}

// Recurses until CaptureStack, called from Measure, sees kTargetFrames.
__attribute__((noinline)) void AtDepth(int depth, Result& result) {
  if (depth > 0) {
    AtDepth(depth - 1, result);
  } else {
    Measure(result);
  }
  asm volatile("" ::: "memory");
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (argc > 2) g_batches = atoi(argv[2]);
  if (argc > 3) g_batch_size = atoi(argv[3]);
  if (argc > 4) g_part = argv[4];
  if (g_batches < 1 || g_batch_size < 1) return 2;
  setenv("RINGPROF_DIR", argv[1], 1);
  setenv("RINGPROF_SAMPLE_BYTES", "1", 1);
  setenv("RINGPROF_MIN_SAMPLES_PER_SEC", "0", 1);
  StartSession();
  if (!Enabled()) return 1;
  Result probe;
  AtDepth(0, probe);
  // Measure's CaptureStack sees Measure + AtDepth(0) + callers; each extra
  // level adds one AtDepth frame. SampleAllocation's capture starts one
  // frame further out (it skips itself), i.e. at Measure, like malloc's.
  const int depth = kTargetFrames - probe.frames;
  Result result;
  AtDepth(depth < 0 ? 0 : depth, result);
  printf("frames %d\n", result.frames);
  printf("sampled_path_cpu_ns %.0f\n", Median(result.sample));
  printf("capture_cpu_ns %.0f\n", Median(result.capture));
  printf("append_cpu_ns %.0f\n", Median(result.append));
  EndSession(0);
  return 0;
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof

int main(int argc, char** argv) { return ringprof::emitter::Main(argc, argv); }
