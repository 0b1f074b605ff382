// The in-use test workload: KeepBlocks keeps exactly KEEP_MIB MiB
// allocated (4 KiB blocks, half of them grown there by realloc from 2 KiB),
// while ChurnWorker threads allocate and free CHURN_MIB MiB (64..4096-byte
// blocks, each freed by another thread than the one that allocated it).
// Midway through the churn the main thread forks children that free every
// kept block in their copy of the heap and exit: the parent's view must not
// change. Then it prints "steady" and for HOLD seconds allocates and frees
// one 64 KiB block per millisecond (Tick: the sampled allocations that
// drive the emitter's sweeps), and finally exits (MODE exit: the kept
// blocks are leaked, a leak report shows them) or waits to be killed
// (MODE wait: no exit sweep; the collector must know the truth already).
//
//   keep_churn MODE KEEP_MIB CHURN_MIB HOLD_SECONDS
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBlock = 4096;
constexpr int kMaxKept = 1 << 16;
constexpr int kThreads = 4;
constexpr int kBatch = 256;

// Static, so that the bookkeeping itself allocates nothing under KeepBlocks.
void* g_kept[kMaxKept];
int g_kept_count = 0;

struct Mailbox {
  std::atomic<int> full{0};
  void* blocks[kBatch];
};
Mailbox g_mailboxes[kThreads];
std::atomic<int> g_churners_done{0};

__attribute__((noinline)) void KeepBlocks(size_t bytes) {
  const int blocks = static_cast<int>(bytes / kBlock);
  for (int i = 0; i < blocks && g_kept_count < kMaxKept; ++i) {
    void* block;
    if (i % 2 == 0) {
      block = malloc(kBlock);
    } else {
      block = realloc(malloc(kBlock / 2), kBlock);
    }
    memset(block, 1, kBlock);
    g_kept[g_kept_count++] = block;
  }
}

// Frees the batch the previous thread left, if any.
void DrainPrevious(int thread) {
  Mailbox& box = g_mailboxes[(thread + kThreads - 1) % kThreads];
  if (box.full.load(std::memory_order_acquire) == 0) return;
  for (void* block : box.blocks) free(block);
  box.full.store(0, std::memory_order_release);
}

__attribute__((noinline)) void ChurnWorker(int thread, size_t bytes) {
  unsigned seed = 12345u + thread;
  size_t done = 0;
  void* batch[kBatch];
  while (done < bytes) {
    for (void*& block : batch) {
      const size_t size = 64 + rand_r(&seed) % (kBlock - 64);
      block = malloc(size);
      static_cast<char*>(block)[0] = 1;
      done += size;
    }
    Mailbox& mine = g_mailboxes[thread];
    // The next thread empties our mailbox (it drains until every churner
    // is done); meanwhile we empty the previous one's.
    while (mine.full.load(std::memory_order_acquire) != 0) {
      DrainPrevious(thread);
      std::this_thread::yield();
    }
    memcpy(mine.blocks, batch, sizeof(batch));
    mine.full.store(1, std::memory_order_release);
    DrainPrevious(thread);
  }
  g_churners_done.fetch_add(1);
  // Keep freeing for the others until every churner is done.
  while (g_churners_done.load() < kThreads) {
    DrainPrevious(thread);
    std::this_thread::yield();
  }
}

void ForkChildrenThatFreeTheKeptBlocks() {
  std::vector<pid_t> children;
  for (int c = 0; c < 4; ++c) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < g_kept_count; ++i) free(g_kept[i]);
      void* own = malloc(1 << 20);
      free(own);
      _exit(0);
    }
    if (pid > 0) children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d failed: %#x\n", pid, status);
      exit(3);
    }
  }
}

__attribute__((noinline)) void Tick() {
  void* block = malloc(64 * 1024);
  static_cast<volatile char*>(block)[0] = 1;
  free(block);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: keep_churn exit|wait KEEP_MIB CHURN_MIB HOLD\n");
    return 2;
  }
  const bool wait_forever = strcmp(argv[1], "wait") == 0;
  const size_t keep = static_cast<size_t>(atol(argv[2])) << 20;
  const size_t churn = static_cast<size_t>(atol(argv[3])) << 20;
  const int hold = atoi(argv[4]);

  KeepBlocks(keep);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(ChurnWorker, t, churn / kThreads);
  }
  ForkChildrenThatFreeTheKeptBlocks();
  for (auto& thread : threads) thread.join();
  for (Mailbox& box : g_mailboxes) {
    if (box.full.load() != 0) {
      for (void* block : box.blocks) free(block);
      box.full.store(0);
    }
  }
  printf("steady kept=%d\n", g_kept_count);
  fflush(stdout);
  const int ticks = hold * 1000;
  for (int i = 0; i < ticks; ++i) {
    Tick();
    usleep(1000);
  }
  printf("done\n");
  fflush(stdout);
  if (wait_forever) {
    while (true) pause();
  }
  return 0;
}
