// Function names a person reads at a glance, as flame graph tools show
// them: the demangled C++ name without its template arguments, parameter
// list, qualifiers, clone suffix or (for a template function) return type.
//
//   std::__cxx11::basic_string<char, std::char_traits<char>,
//       std::allocator<char> >::_M_construct<char const*>(char const*,
//       char const*, std::forward_iterator_tag) [clone .isra.0]
//     -> std::__cxx11::basic_string<…>::_M_construct<…>
//   void std::condition_variable::wait<Q::Pop()::{lambda()#1}>(...)
//     -> std::condition_variable::wait<…>
//   ns::(anonymous namespace)::Parse(char const*) const
//     -> ns::(anonymous namespace)::Parse
//
// Kept as they are: C names, operators (`operator<<`, `operator()`,
// `operator new[]`), scopes in parentheses (`(anonymous namespace)`), and
// Rust's qualified paths (`<[A] as core::cmp::PartialEq<…>>::eq`: a `<` at
// the start of a name or of a path segment opens a path, not template
// arguments; the arguments inside it are elided). Names the collector made
// up ("[libc.so.6] 0x1230", "hotloop+0x1234", "[lost]") have none of these
// and come back unchanged.
//
// Pure; thread-safe. Bounded: linear in the name's length.
#ifndef RINGPROF_COLLECTOR_RENDER_SHORT_NAME_H_
#define RINGPROF_COLLECTOR_RENDER_SHORT_NAME_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

std::string ShortFunctionName(absl::string_view name);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_RENDER_SHORT_NAME_H_
