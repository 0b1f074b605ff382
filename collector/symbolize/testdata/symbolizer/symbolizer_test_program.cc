// A program with known shapes for collector/symbolize/symbolizer_test.cc: a
// call made from inside two always-inline functions (one a template) inlined
// into a namespaced function, a plain namespaced function and an extern "C"
// one. It prints the runtime addresses, its load bias and the source lines the
// symbolizer must report, one "key value" per line.
#include <link.h>

#include <cstdint>
#include <cstdio>

#define RINGPROF_NOINLINE __attribute__((noinline))
#define RINGPROF_ALWAYS_INLINE __attribute__((always_inline)) inline

namespace ringprof_test {

volatile int sink;
void* volatile sink_pointer;

RINGPROF_NOINLINE void* CaptureReturnAddress() {
  void* return_address = __builtin_return_address(0);
  asm volatile("" ::: "memory");
  return return_address;
}

constexpr int kInnerCallLine = __LINE__ + 4;
template <typename T>
RINGPROF_ALWAYS_INLINE void* Inner(T value) {
  sink = static_cast<int>(value);
  void* return_address = CaptureReturnAddress();
  sink = static_cast<int>(value) + 1;
  return return_address;
}

constexpr int kMiddleCallLine = __LINE__ + 3;
RINGPROF_ALWAYS_INLINE void* Middle(int value) {
  sink = value;
  void* return_address = Inner<long>(value * 3);
  sink = value + 2;
  return return_address;
}

constexpr int kOuterCallLine = __LINE__ + 3;
RINGPROF_NOINLINE void* Outer(int value) {
  sink = value;
  void* return_address = Middle(value + 1);
  sink_pointer = return_address;
  return return_address;
}

RINGPROF_NOINLINE int Leaf(int value) {
  sink = value;
  return sink * 2;
}

}  // namespace ringprof_test

extern "C" RINGPROF_NOINLINE int ringprof_test_c_function(int value) {
  ringprof_test::sink = value;
  return ringprof_test::sink + 7;
}

namespace {

int PrintMainProgram(struct dl_phdr_info* info, size_t, void*) {
  // The first object dl_iterate_phdr reports is the main program.
  std::printf("load_bias 0x%llx\n",
              static_cast<unsigned long long>(info->dlpi_addr));
  return 1;
}

void PrintAddress(const char* key, const void* address) {
  std::printf(
      "%s 0x%llx\n", key,
      static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(address)));
}

}  // namespace

int main() {
  dl_iterate_phdr(PrintMainProgram, nullptr);
  PrintAddress("outer_return_address", ringprof_test::Outer(1));
  PrintAddress("leaf", reinterpret_cast<void*>(&ringprof_test::Leaf));
  PrintAddress("c_function",
               reinterpret_cast<void*>(&ringprof_test_c_function));
  std::printf("inner_call_line %d\n", ringprof_test::kInnerCallLine);
  std::printf("middle_call_line %d\n", ringprof_test::kMiddleCallLine);
  std::printf("outer_call_line %d\n", ringprof_test::kOuterCallLine);
  return ringprof_test::Leaf(1) + ringprof_test_c_function(2) > 0 ? 0 : 1;
}
