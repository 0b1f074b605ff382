// Loads a library at run time (dlopen), lets it allocate, unloads it.
// Prints `payload_bytes <n>`. With `spin`, the library instead spins on the
// CPU for 300 ms of CPU time, allocating nothing, and stays loaded.
//
// Usage: dlopen_alloc /path/to/libdlopen_payload.so [spin]
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  if (argc > 2 && strcmp(argv[2], "spin") == 0) {
    using SpinFn = uint64_t (*)(uint64_t);
    auto spin = reinterpret_cast<SpinFn>(dlsym(library, "PayloadSpin"));
    if (spin == nullptr) return 1;
    printf("spin %llu\n", static_cast<unsigned long long>(spin(300'000'000)));
    return 0;
  }
  using AllocateFn = uint64_t (*)(int);
  auto allocate =
      reinterpret_cast<AllocateFn>(dlsym(library, "PayloadAllocate"));
  if (allocate == nullptr) return 1;
  printf("payload_bytes %llu\n", static_cast<unsigned long long>(allocate(8)));
  return dlclose(library) == 0 ? 0 : 1;
}
