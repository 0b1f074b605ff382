// Built with -fomit-frame-pointer (like Debian's libc and libstdc++): every
// allocation happens inside std::map / std::string code called from
// BuildIndex, so a profile is right only if the unwinder gets from malloc
// through libstdc++ and this binary to BuildIndex and then main without
// frame pointers. Prints `entries <n>`.
#include <stdio.h>
#include <stdlib.h>

#include <map>
#include <string>

__attribute__((noinline)) size_t BuildIndex(int entries) {
  std::map<std::string, std::string> index;
  for (int i = 0; i < entries; ++i) {
    // Longer than the small-string buffer: every string allocates.
    std::string key = "key-" + std::to_string(i) + std::string(64, 'k');
    index.emplace(std::move(key),
                  std::string(200, static_cast<char>('a' + i % 26)));
  }
  return index.size();
}

int main(int argc, char** argv) {
  const int entries = argc > 1 ? atoi(argv[1]) : 200000;
  const size_t size = BuildIndex(entries);
  printf("entries %zu\n", size);
  return size == static_cast<size_t>(entries) ? 0 : 1;
}
