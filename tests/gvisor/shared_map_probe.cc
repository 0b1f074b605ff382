// shared_map_probe: checks the one property the sidecar arrangement depends
// on: two unrelated processes that map the same file MAP_SHARED see each
// other's stores, as the emitter (writer) and the collector (reader) must.
//
//   shared_map_probe write FILE MILLIS   creates FILE, then for MILLIS ms
//                                        increments a counter in the mapping
//                                        and finally stores a "done" flag.
//   shared_map_probe read FILE MILLIS    maps FILE (waiting up to MILLIS ms for
//                                        it to appear) and watches the counter;
//                                        exits 0 once it has seen it advance
//                                        and the done flag set, 1 otherwise.
//
// Prints one line on stdout describing what it saw. Bounded in time.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

struct SharedPage {
  std::atomic<uint64_t> counter;
  std::atomic<uint32_t> done;
};
constexpr size_t kMapSize = 4096;
static_assert(sizeof(SharedPage) <= kMapSize, "fits in one page");

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void SleepMs(int ms) {
  timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

SharedPage* MapPage(int fd) {
  void* p = mmap(nullptr, kMapSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<SharedPage*>(p);
}

int Write(const char* path, int millis) {
  const int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, kMapSize) != 0) {
    std::printf("writer: cannot create %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  SharedPage* page = MapPage(fd);
  if (page == nullptr) {
    std::printf("writer: mmap %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  const int64_t end = NowMs() + millis;
  while (NowMs() < end) {
    page->counter.fetch_add(1, std::memory_order_release);
    SleepMs(1);
  }
  page->done.store(1, std::memory_order_release);
  std::printf("writer: counter=%llu\n",
              static_cast<unsigned long long>(page->counter.load()));
  return 0;
}

int Read(const char* path, int millis) {
  const int64_t deadline = NowMs() + millis;
  int fd = -1;
  while ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 && NowMs() < deadline) {
    SleepMs(5);
  }
  if (fd < 0) {
    std::printf("reader: %s never appeared: %s\n", path, std::strerror(errno));
    return 1;
  }
  // The writer may not have sized the file yet.
  SharedPage* page = nullptr;
  while (lseek(fd, 0, SEEK_END) < static_cast<off_t>(kMapSize) &&
         NowMs() < deadline) {
    SleepMs(5);
  }
  page = MapPage(fd);
  if (page == nullptr) {
    std::printf("reader: mmap %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  const uint64_t first = page->counter.load(std::memory_order_acquire);
  uint64_t changes = 0;
  uint64_t last = first;
  while (NowMs() < deadline &&
         page->done.load(std::memory_order_acquire) == 0) {
    const uint64_t now = page->counter.load(std::memory_order_acquire);
    if (now != last) ++changes;
    last = now;
    SleepMs(2);
  }
  const bool done = page->done.load(std::memory_order_acquire) != 0;
  last = page->counter.load(std::memory_order_acquire);
  std::printf("reader: first=%llu last=%llu changes_seen=%llu done=%d\n",
              static_cast<unsigned long long>(first),
              static_cast<unsigned long long>(last),
              static_cast<unsigned long long>(changes), done ? 1 : 0);
  return done && changes > 0 && last > first ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s write|read FILE MILLIS\n", argv[0]);
    return 2;
  }
  const int millis = std::atoi(argv[3]);
  if (std::strcmp(argv[1], "write") == 0) return Write(argv[2], millis);
  if (std::strcmp(argv[1], "read") == 0) return Read(argv[2], millis);
  std::fprintf(stderr, "usage: %s write|read FILE MILLIS\n", argv[0]);
  return 2;
}
