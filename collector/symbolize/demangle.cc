#include "collector/symbolize/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <string>

// libiberty.h declares basename() unless told that the C library does;
// glibc's <string.h> declares it for C++ with another signature.
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

namespace ringprof {
namespace collector {
namespace {

// libiberty's output sink for one Rust name.
//
// The cap: a v0 name's back-references may print one part of the name
// again and again, nested, so output (and the demangler's time) can grow
// exponentially with the name's length. libiberty has no limit of its own,
// but it reads the name through the pointer it was given, from a buffer
// this sink owns: once the output reaches the cap, the sink blanks the
// rest of that buffer with NULs, and the demangler's next read finds the
// name ended there, fails, and returns without printing more. (Every loop
// of libiberty's v0 parser stops at an error or at the end of the name;
// that is the path a truncated name takes.)
struct RustSink {
  std::string* out;
  char* name;         // the copy the demangler reads
  size_t name_size;   // bytes of `name`, without its NUL
  bool stoppable;     // v0: blanking the name stops the demangler
  bool over = false;  // the cap was reached
};

void AppendRust(const char* data, size_t size, void* opaque) {
  RustSink& sink = *static_cast<RustSink*>(opaque);
  if (sink.over) return;
  if (size > kMaxDemangledBytes - sink.out->size()) {
    sink.over = true;
    if (sink.stoppable) std::memset(sink.name, 0, sink.name_size);
    return;
  }
  sink.out->append(data, size);
}

// Rust: legacy (`_ZN…17h<hash>E`) and v0 (`_R…`) names.
bool DemangleRust(const char* name, std::string* out) {
  const size_t size = std::strlen(name);
  // A legacy name prints at most 1.5 bytes per byte (an identifier of n
  // bytes takes at least n + 1 and prints n + 2 with its "::"), so below
  // this size only a v0 name can reach the cap.
  if (size > kMaxDemangledBytes / 2) return false;
  std::string copy(name, size);
  std::string demangled;
  RustSink sink{&demangled, copy.data(), size,
                /*stoppable=*/size >= 2 && name[0] == '_' && name[1] == 'R'};
  // Without DMGL_VERBOSE: no hashes or crate disambiguators, as rustfilt.
  const int ok = rust_demangle_callback(copy.c_str(), DMGL_PARAMS | DMGL_ANSI,
                                        AppendRust, &sink);
  if (!ok || sink.over || demangled.empty()) return false;
  *out = std::move(demangled);
  return true;
}

bool DemangleCxx(const char* name, std::string* out) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return false;
  out->assign(demangled);
  std::free(demangled);
  return true;
}

}  // namespace

bool Demangle(const char* name, std::string* out) {
  return DemangleRust(name, out) || DemangleCxx(name, out);
}

}  // namespace collector
}  // namespace ringprof
