// Loads a library at run time (dlopen), lets it allocate, unloads it.
// Prints `payload_bytes <n>`.
//
// Usage: dlopen_alloc /path/to/libdlopen_payload.so
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  using AllocateFn = uint64_t (*)(int);
  auto allocate =
      reinterpret_cast<AllocateFn>(dlsym(library, "PayloadAllocate"));
  if (allocate == nullptr) return 1;
  printf("payload_bytes %llu\n", static_cast<unsigned long long>(allocate(8)));
  return dlclose(library) == 0 ? 0 : 1;
}
