// fork() while other threads allocate (and are sampled) as fast as they can:
// the child must never inherit a lock that a vanished thread held. Worker
// threads allocate until told to stop; the main thread forks 40 children in
// a row, each of which allocates 2 MiB in 1 MiB blocks and exits.
// Prints `child <pid>` per child.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace {

std::atomic<bool> g_stop{false};

void* Allocate(void*) {
  uint64_t rng = reinterpret_cast<uintptr_t>(&rng) | 1;
  while (!g_stop.load(std::memory_order_relaxed)) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    void* p = malloc(1 + rng % 2048);
    asm volatile("" : : "r"(p) : "memory");
    free(p);
  }
  return nullptr;
}

__attribute__((noinline)) void ChildWork() {
  for (int i = 0; i < 2; ++i) {
    void* block = malloc(1 << 20);
    asm volatile("" : : "r"(block) : "memory");
    free(block);
  }
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  pthread_t threads[4];
  for (pthread_t& t : threads) pthread_create(&t, nullptr, Allocate, nullptr);
  bool ok = true;
  for (int i = 0; i < 40; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      ChildWork();
      exit(0);
    }
    printf("child %d\n", child);
    int status = 0;
    ok = ok && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
  }
  g_stop.store(true);
  for (pthread_t& t : threads) pthread_join(t, nullptr);
  return ok ? 0 : 1;
}
