// A small request server whose handlers tag their endpoint with ringprof's
// application API, so that its profiles split by endpoint
// (`go tool pprof -tagfocus=endpoint=/heavy`, Pyroscope's label filter).
//
// Worker threads serve requests from two endpoints, in random order and
// half of each: /heavy does three times the work of /light, and both allocate
// in proportion. A background thread does untagged work at the same time. Every
// handler measures its own thread CPU time and bytes allocated, so the program
// knows the truth its profile should show; --truth writes it as JSON. With
// --fork=1 the main thread forks, under a tag, a child that works without
// tagging anything itself: its samples carry the tag it inherited.
//
// Runs unchanged without libringprof.so: the tag calls then do nothing.
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "examples/common/flags.h"
#include "ringprof/ringprof.h"

namespace {

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t UsageNs(int who) {
  rusage usage;
  getrusage(who, &usage);
  return (int64_t{usage.ru_utime.tv_sec} + usage.ru_stime.tv_sec) * 1000000000 +
         (int64_t{usage.ru_utime.tv_usec} + usage.ru_stime.tv_usec) * 1000;
}

// One unit of request work: hashing over freshly allocated buffers.
// Returns the bytes it allocated.
__attribute__((noinline)) int64_t WorkUnit(uint64_t* sink) {
  int64_t bytes = 0;
  uint64_t h = *sink;
  for (int round = 0; round < 8; ++round) {
    auto buffer = std::make_unique<std::vector<uint64_t>>(512);
    bytes += 512 * sizeof(uint64_t);
    for (int pass = 0; pass < 64; ++pass) {
      for (uint64_t& word : *buffer) {
        h = (h ^ word ^ static_cast<uint64_t>(pass)) * 0x100000001b3ull;
        word = h;
      }
    }
  }
  *sink = h;
  return bytes;
}

struct Totals {
  std::atomic<int64_t> cpu_ns{0};
  std::atomic<int64_t> bytes{0};
  void Add(int64_t cpu, int64_t allocated) {
    cpu_ns.fetch_add(cpu, std::memory_order_relaxed);
    bytes.fetch_add(allocated, std::memory_order_relaxed);
  }
};

Totals g_light, g_heavy, g_background;
std::atomic<uint64_t> g_sink{0};
// --spans: each request runs in its own trace span (as an OpenTelemetry
// server span would), so samples carry span_id.
bool g_spans = false;
std::atomic<uint64_t> g_next_span{0x1000};

__attribute__((noinline)) void HandleLight(uint64_t* sink) {
  ringprof::ScopedSpan span(g_spans ? g_next_span.fetch_add(1) : 0);
  ringprof::ScopedTag tag("endpoint", "/light");
  const int64_t start = ThreadCpuNs();
  const int64_t bytes = WorkUnit(sink);
  g_light.Add(ThreadCpuNs() - start, bytes);
}

__attribute__((noinline)) void HandleHeavy(uint64_t* sink) {
  ringprof::ScopedSpan span(g_spans ? g_next_span.fetch_add(1) : 0);
  ringprof::ScopedTag tag("endpoint", "/heavy");
  const int64_t start = ThreadCpuNs();
  int64_t bytes = 0;
  for (int i = 0; i < 3; ++i) bytes += WorkUnit(sink);
  g_heavy.Add(ThreadCpuNs() - start, bytes);
}

// Serving stops at the deadline, or once the thread used `cpu_ns` of CPU
// (when > 0: a known amount of work whatever the machine's load).
bool KeepServing(int64_t deadline_ns, int64_t cpu_ns) {
  return MonotonicNs() < deadline_ns && (cpu_ns <= 0 || ThreadCpuNs() < cpu_ns);
}

void Worker(int64_t deadline_ns, int64_t cpu_ns) {
  uint64_t sink = 1;
  // Requests in random order, half of each kind: a fixed alternation would
  // be periodic, and periodic work aliases with the sampler's periodic
  // ticks.
  uint64_t random = 0x9e3779b97f4a7c15ull ^ reinterpret_cast<uintptr_t>(&sink);
  while (KeepServing(deadline_ns, cpu_ns)) {
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    if ((random >> 32) & 1) {
      HandleLight(&sink);
    } else {
      HandleHeavy(&sink);
    }
  }
  g_sink.fetch_add(sink, std::memory_order_relaxed);
}

// Untagged, beside the tagged workers: it must not see their tags.
void Background(int64_t deadline_ns, int64_t cpu_ns) {
  uint64_t sink = 2;
  while (KeepServing(deadline_ns, cpu_ns)) {
    const int64_t start = ThreadCpuNs();
    const int64_t bytes = WorkUnit(&sink);
    g_background.Add(ThreadCpuNs() - start, bytes);
  }
  g_sink.fetch_add(sink, std::memory_order_relaxed);
}

// A child forked under endpoint=/forked, working without tagging.
int64_t ForkedChildCpuNs(int millis) {
  ringprof::ScopedTag tag("endpoint", "/forked");
  const pid_t child = fork();
  if (child == 0) {
    uint64_t sink = 3;
    const int64_t until = ThreadCpuNs() + int64_t{millis} * 1000000;
    while (ThreadCpuNs() < until) WorkUnit(&sink);
    _exit(sink == 0 ? 1 : 0);
  }
  if (child < 0) return -1;
  int status = 0;
  rusage usage;
  if (wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return -1;
  }
  return (int64_t{usage.ru_utime.tv_sec} + usage.ru_stime.tv_sec) * 1000000000 +
         (int64_t{usage.ru_utime.tv_usec} + usage.ru_stime.tv_usec) * 1000;
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 3, threads = 2, fork_millis = 0, cpu_millis = 0, spans = 0;
  const char* truth = nullptr;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--truth=", 8) == 0) {
      truth = argv[i] + 8;
    } else {
      rest.push_back(argv[i]);
    }
  }
  int exit_code = 0;
  if (!ringprof::examples::ParseIntFlags(
          static_cast<int>(rest.size()), rest.data(),
          "tagged_server: workers serve /light and /heavy (3x the work) "
          "under endpoint tags, beside an untagged background thread. "
          "--truth=PATH writes the measured CPU and bytes per endpoint.",
          {{"seconds", &seconds, 1, 3600, "how long to serve"},
           {"threads", &threads, 1, 64, "worker threads"},
           {"cpu_ms", &cpu_millis, 0, 3600000,
            "stop each thread after this much CPU (0: at --seconds only)"},
           {"spans", &spans, 0, 1, "1: every request in its own trace span"},
           {"fork_ms", &fork_millis, 0, 10000,
            "CPU milliseconds of a child forked under endpoint=/forked"}},
          &exit_code)) {
    return exit_code;
  }

  g_spans = spans != 0;
  const int64_t deadline = MonotonicNs() + int64_t{seconds} * 1000000000;
  std::vector<std::thread> workers;
  const int64_t cpu_ns = int64_t{cpu_millis} * 1000000;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back(Worker, deadline, cpu_ns);
  }
  std::thread background(Background, deadline, cpu_ns);
  int64_t forked_ns = 0;
  if (fork_millis > 0) forked_ns = ForkedChildCpuNs(fork_millis);
  for (std::thread& worker : workers) worker.join();
  background.join();
  if (forked_ns < 0) {
    fprintf(stderr, "tagged_server: the forked child failed\n");
    return 1;
  }

  const int64_t total_ns = UsageNs(RUSAGE_SELF) + UsageNs(RUSAGE_CHILDREN);
  printf(
      "tagged_server: ringprof %s; CPU ms /light %lld, /heavy %lld, "
      "untagged %lld, forked %lld, process total %lld\n",
      ringprof_available() ? "loaded" : "not loaded",
      static_cast<long long>(g_light.cpu_ns / 1000000),
      static_cast<long long>(g_heavy.cpu_ns / 1000000),
      static_cast<long long>(g_background.cpu_ns / 1000000),
      static_cast<long long>(forked_ns / 1000000),
      static_cast<long long>(total_ns / 1000000));
  if (truth != nullptr) {
    FILE* out = fopen(truth, "w");
    if (out == nullptr) {
      perror(truth);
      return 1;
    }
    fprintf(out,
            "{\"ringprof_available\": %s, \"total_cpu_ns\": %lld,\n"
            " \"cpu_ns\": {\"/light\": %lld, \"/heavy\": %lld, "
            "\"untagged\": %lld, \"/forked\": %lld},\n"
            " \"bytes\": {\"/light\": %lld, \"/heavy\": %lld, "
            "\"untagged\": %lld}}\n",
            ringprof_available() ? "true" : "false",
            static_cast<long long>(total_ns),
            static_cast<long long>(g_light.cpu_ns.load()),
            static_cast<long long>(g_heavy.cpu_ns.load()),
            static_cast<long long>(g_background.cpu_ns.load()),
            static_cast<long long>(forked_ns),
            static_cast<long long>(g_light.bytes.load()),
            static_cast<long long>(g_heavy.bytes.load()),
            static_cast<long long>(g_background.bytes.load()));
    fclose(out);
  }
  return g_sink.load() == 0 ? 1 : 0;
}
