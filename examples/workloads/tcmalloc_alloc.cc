// A C++ program linked against gperftools' tcmalloc (libtcmalloc_minimal),
// the way programs that link an allocator directly are built: tcmalloc's
// own malloc, free, malloc_usable_size and operator new/delete replace
// glibc's for the whole process. Allocates through operator new (which
// tcmalloc serves without calling malloc) and malloc, checks what it gets
// back, and exits 0 only if every block was usable.
//
// Usage: tcmalloc_alloc [MIB]   (default 256 MiB allocated in total)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// The landmark every allocation sample must show.
__attribute__((noinline)) size_t TcmallocLandmark(size_t total_bytes) {
  size_t checked = 0;
  size_t allocated = 0;
  std::vector<std::unique_ptr<std::string>> keep;
  for (size_t i = 0; allocated < total_bytes; ++i) {
    const size_t size = 4096 + (i % 64) * 512;
    auto text = std::make_unique<std::string>(size, 'x');  // operator new
    void* raw = std::malloc(size);                         // malloc
    if (raw == nullptr || malloc_usable_size(raw) < size) return 0;
    std::memset(raw, 0x5a, size);
    checked += malloc_usable_size(raw) >= size;
    std::free(raw);
    allocated += 2 * size;
    keep.push_back(std::move(text));
    if (keep.size() > 256) keep.erase(keep.begin(), keep.begin() + 128);
  }
  return checked;
}

}  // namespace

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::atol(argv[1]) : 256;
  const size_t checked = TcmallocLandmark(static_cast<size_t>(mib) << 20);
  std::printf("tcmalloc_alloc: %zu blocks checked\n", checked);
  return checked > 0 ? 0 : 1;
}
