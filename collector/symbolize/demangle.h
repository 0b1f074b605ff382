// Demangling of linkage names as the toolchains' own tools print them:
// Rust's legacy and v0 manglings as `rustfilt` prints them (crate hashes
// and disambiguators dropped: `main::churn_map`,
// `<[A] as core::cmp::PartialEq<[B]>>::eq`), C++ (Itanium ABI) as
// `c++filt` prints it, with parameter types (`ns::F(int)`).
//
// Rust is demangled by GNU libiberty's rust_demangle_callback (Debian's
// libiberty-dev, linked statically), C++ by the C++ runtime's
// abi::__cxa_demangle. A legacy Rust symbol is also a valid Itanium name
// (`_ZN4main9churn_map17h…E`): Rust is tried first, and libiberty takes a
// `_ZN` name for Rust only when it ends in Rust's `h` + 16 hex digits hash.
//
// Names come from the workload's files, so they are hostile: a Rust v0
// name of a few hundred bytes can expand exponentially through
// back-references; the Rust output is capped (kMaxDemangledBytes) and the
// demangler stopped as soon as the cap is reached, so every name costs
// time and memory in proportion to the cap at most.
//
// Thread-safe (no shared state). Allocates; not for signal handlers.
#ifndef RINGPROF_COLLECTOR_SYMBOLIZE_DEMANGLE_H_
#define RINGPROF_COLLECTOR_SYMBOLIZE_DEMANGLE_H_

#include <cstddef>
#include <string>

namespace ringprof {
namespace collector {

// Longest demangled Rust name kept; a longer one is not demangled.
inline constexpr size_t kMaxDemangledBytes = 64 << 10;

// Demangles `name` (NUL-terminated) into *out; false, leaving *out
// untouched, when it is not a Rust or C++ mangled name or does not
// demangle (the caller then shows it as it is).
bool Demangle(const char* name, std::string* out);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SYMBOLIZE_DEMANGLE_H_
