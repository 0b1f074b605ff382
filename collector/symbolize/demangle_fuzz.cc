// libFuzzer target for Demangle on hostile names (a workload's symbol
// tables): `bazel run --config=fuzz //collector/symbolize:demangle_fuzz --
// -max_total_time=300`. Without --config=fuzz it replays input files. The
// input, up to its first NUL, is the name; the output must stay within the
// cap for Rust names and demangling must end (v0 back-references).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "collector/symbolize/demangle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string name(reinterpret_cast<const char*>(data), size);
  std::string out;
  if (ringprof::collector::Demangle(name.c_str(), &out) &&
      (name.rfind("_R", 0) == 0) &&
      out.size() > ringprof::collector::kMaxDemangledBytes) {
    std::abort();
  }
  return 0;
}
