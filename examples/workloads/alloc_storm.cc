// Allocation storm: waves of worker threads (thread churn) that allocate
// and free through every allocation API, C and C++. Reports what it did on
// stdout so that a test can compare the profile with the truth:
//
//   requested_bytes <sum of sizes requested by the workers>
//   worker_tid <tid>          (one line per worker thread)
//   api <name> <size>         (one line per "landmark" allocation below)
//
// Landmark allocations: one call per API with a distinctive size of at
// least 1 MiB. The emitter records every allocation of at least its mean
// interval with weight = size, so a test at RINGPROF_SAMPLE_BYTES <= 1 MiB
// must find each of them, which proves the API is interposed.
//
// Usage: alloc_storm [threads=16] [waves=4] [mib_per_thread=16] [landmarks=1]
// (landmarks=0 skips them: the benchmark runs this under allocators that do
// not provide all of them, e.g. jemalloc has no pvalloc. With them, it also
// checks that an operator new that cannot be satisfied throws bad_alloc
// after the new-handler, and exits 1 if not.)
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <new>

namespace {

std::atomic<uint64_t> g_requested_bytes{0};

struct Worker {
  int wave;
  int index;
  uint64_t budget_bytes;
  pid_t tid;
};

uint64_t NextRandom(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// Makes `p` escape, so the compiler cannot elide the allocation (GCC
// removes malloc/free and new/delete pairs whose result is unused).
template <typename T>
T* Escape(T* p) {
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

// One allocation through API number `api`; returns the bytes requested.
__attribute__((noinline)) uint64_t AllocateAndFree(int api, size_t size) {
  switch (api) {
    case 0: {
      free(Escape(malloc(size)));
      return size;
    }
    case 1: {
      free(Escape(calloc(size / 8 + 1, 8)));
      return (size / 8 + 1) * 8;
    }
    case 2: {
      delete[] Escape(new char[size]);
      return size;
    }
    case 3: {
      void* p = Escape(malloc(16));
      free(Escape(realloc(p, size + 16)));
      return 16 + size + 16;
    }
    default: {
      // libstdc++ rounds the size up to a multiple of the alignment before
      // calling aligned_alloc: count what the allocator is asked for.
      void* p = Escape(::operator new(size, std::align_val_t(64)));
      ::operator delete(p, std::align_val_t(64));
      return (size + 63) & ~size_t{63};
    }
  }
}

__attribute__((noinline)) void* StormWorker(void* arg) {
  Worker& worker = *static_cast<Worker*>(arg);
  worker.tid = static_cast<pid_t>(syscall(SYS_gettid));
  char name[16];
  snprintf(name, sizeof(name), "storm-%d-%d", worker.wave, worker.index);
  pthread_setname_np(pthread_self(), name);
  // The same sizes in every run (benchmarks compare instruction counts).
  uint64_t rng =
      0x9e3779b97f4a7c15ull * (worker.wave * 1024 + worker.index + 1);
  uint64_t done = 0;
  while (done < worker.budget_bytes) {
    const uint64_t r = NextRandom(rng);
    // Mostly small, sometimes a few KiB, rarely 256 KiB.
    size_t size = 1 + r % 512;
    if (r % 16 == 0) size = 1 + (r >> 8) % 8192;
    if (r % 4096 == 0) size = 256 * 1024;
    done += AllocateAndFree(static_cast<int>((r >> 32) % 5), size);
  }
  g_requested_bytes.fetch_add(done);
  return nullptr;
}

// Each landmark from its own function so stacks tell them apart too.
void Landmark(const char* api, size_t size, void* p) {
  printf("api %s %zu\n", api, size);
  free(Escape(p));
}

__attribute__((noinline)) void AllocateLandmarks() {
  const size_t kMiB = 1 << 20;
  Landmark("malloc", kMiB + 16, malloc(kMiB + 16));
  Landmark("calloc", kMiB + 32, calloc(1, kMiB + 32));
  Landmark("realloc", kMiB + 48, realloc(malloc(8), kMiB + 48));
  Landmark("reallocarray", kMiB + 64, reallocarray(nullptr, 1, kMiB + 64));
  void* p = nullptr;
  if (posix_memalign(&p, 128, kMiB + 80) == 0) {
    Landmark("posix_memalign", kMiB + 80, p);
  }
  Landmark("aligned_alloc", kMiB + 4096, aligned_alloc(4096, kMiB + 4096));
  Landmark("memalign", kMiB + 112, memalign(256, kMiB + 112));
  Landmark("valloc", kMiB + 128, valloc(kMiB + 128));
  Landmark("pvalloc", kMiB + 8192, pvalloc(kMiB + 8192));
  char* array = Escape(new char[kMiB + 160]);
  printf("api new[] %zu\n", kMiB + 160);
  delete[] array;
  void* object = Escape(::operator new(kMiB + 176));
  printf("api new %zu\n", kMiB + 176);
  ::operator delete(object);
  void* aligned = Escape(::operator new(kMiB + 256, std::align_val_t(128)));
  printf("api aligned_new %zu\n", kMiB + 256);
  ::operator delete(aligned, std::align_val_t(128));
  void* nothrow = Escape(::operator new(kMiB + 208, std::nothrow));
  printf("api nothrow_new %zu\n", kMiB + 208);
  ::operator delete(nothrow);
}

int g_handler_calls = 0;

// An operator new that cannot be satisfied still behaves as the C++
// runtime's: the new-handler runs (once here: it uninstalls itself), then
// bad_alloc; the nothrow forms return null. True when they all did.
__attribute__((noinline)) bool FailingNewBehaves() {
  const size_t impossible = SIZE_MAX / 4;
  bool ok = true;
  for (int aligned = 0; aligned < 2; ++aligned) {
    g_handler_calls = 0;
    std::set_new_handler([] {
      ++g_handler_calls;
      std::set_new_handler(nullptr);
    });
    bool threw = false;
    try {
      Escape(aligned ? ::operator new(impossible, std::align_val_t(64))
                     : ::operator new[](impossible));
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    ok = ok && threw && g_handler_calls == 1;
    void* nothrow =
        aligned ? ::operator new(impossible, std::align_val_t(64), std::nothrow)
                : ::operator new(impossible, std::nothrow);
    ok = ok && nothrow == nullptr;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 16;
  const int waves = argc > 2 ? atoi(argv[2]) : 4;
  const uint64_t mib = argc > 3 ? strtoull(argv[3], nullptr, 10) : 16;
  if (argc <= 4 || atoi(argv[4]) != 0) {
    AllocateLandmarks();
    if (!FailingNewBehaves()) {
      fprintf(stderr, "a failing operator new did not throw bad_alloc\n");
      return 1;
    }
  }
  for (int wave = 0; wave < waves; ++wave) {
    pthread_t ids[256];
    Worker workers[256];
    for (int i = 0; i < threads && i < 256; ++i) {
      workers[i] = Worker{wave, i, mib << 20, 0};
      if (pthread_create(&ids[i], nullptr, StormWorker, &workers[i]) != 0) {
        perror("pthread_create");
        return 1;
      }
    }
    for (int i = 0; i < threads && i < 256; ++i) {
      pthread_join(ids[i], nullptr);
      printf("worker_tid %d\n", workers[i].tid);
    }
  }
  printf("requested_bytes %llu\n",
         static_cast<unsigned long long>(g_requested_bytes.load()));
  // malloc_usable_size still answers for our pointers.
  void* p = Escape(malloc(100));
  const bool usable_ok = malloc_usable_size(p) >= 100;
  free(p);
  printf("usable_size_ok %d\n", usable_ok ? 1 : 0);
  return usable_ok ? 0 : 1;
}
