// One left-to-right pass keeps the name up to its parameter list, copying
// scopes and paths and writing "<…>" for each outermost template argument
// list; a second pass drops a template function's return type.
#include "collector/render/short_name.h"

#include <cstddef>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

constexpr absl::string_view kElided = "<…>";

bool IsIdentifierChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '$' || c == '.';
}

// The index just past the bracket group opening at name[open] ('(', '<',
// '{' or '['), counting every kind of bracket; name.size() when it never
// closes. A '>' inside parentheses ("(N>0)") does not close a '<'.
size_t GroupEnd(absl::string_view name, size_t open) {
  int depth = 0;
  for (size_t i = open; i < name.size(); ++i) {
    switch (name[i]) {
      case '(':
      case '<':
      case '{':
      case '[':
        ++depth;
        break;
      case '>':
        if (i > 0 && name[i - 1] == '-') break;  // "->" in an expression
        [[fallthrough]];
      case ')':
      case '}':
      case ']':
        if (--depth == 0) return i + 1;
        break;
      default:
        break;
    }
  }
  return name.size();
}

// The length of the operator token after "operator" at name[i]: "()",
// " new[]", "<<", "->*"... (a conversion operator's type is kept too).
size_t OperatorLength(absl::string_view name, size_t i) {
  const absl::string_view rest = name.substr(i);
  if (absl::StartsWith(rest, "()")) return 2;
  size_t n = 0;
  if (!rest.empty() && rest[0] == ' ') {
    n = 1;
    while (n < rest.size() && IsIdentifierChar(rest[n])) ++n;
    if (absl::StartsWith(rest.substr(n), "[]")) n += 2;
    return n;
  }
  while (n < rest.size() &&
         absl::string_view("<>=!+-*/%&|^~,[]").find(rest[n]) !=
             absl::string_view::npos) {
    ++n;
  }
  return n;
}

// Whether a '<' at this point of the output opens a path (Rust's
// "<T as Trait>::f") rather than template arguments: at the start of the
// name or of a path segment.
bool OpensPath(absl::string_view out) {
  return out.empty() || absl::EndsWith(out, "::") || absl::EndsWith(out, "<");
}

// Nesting of scopes elided inside (a hostile name may nest deeper: the rest
// is copied as it is).
constexpr int kMaxDepth = 8;

// Pass one: the name up to its parameter list, template arguments elided.
// Top-level parentheses followed by "::" are a scope and stay; the first
// others are the parameter list, and the rest (qualifiers, " [clone …]")
// goes with them. Inside a scope (`depth` > 0: "Push(std::vector<…>)::",
// "{lambda(int)#1}") only template arguments are elided.
std::string ElideArguments(absl::string_view name, int depth) {
  std::string out;
  out.reserve(name.size());
  int path_depth = 0;  // open Rust paths ('<' kept)
  size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    if (absl::StartsWith(name.substr(i), "operator") &&
        (i == 0 || !IsIdentifierChar(name[i - 1])) &&
        (i + 8 == name.size() || !IsIdentifierChar(name[i + 8]))) {
      const size_t length = 8 + OperatorLength(name, i + 8);
      absl::StrAppend(&out, name.substr(i, length));
      i += length;
      continue;
    }
    if (c == '<') {
      if (OpensPath(out)) {
        ++path_depth;
        out += c;
        ++i;
      } else {
        out.append(kElided.data(), kElided.size());
        i = GroupEnd(name, i);
      }
      continue;
    }
    if (c == '>' && path_depth > 0) {
      --path_depth;
      out += c;
      ++i;
      continue;
    }
    if (c == '(' || c == '{' || (c == '[' && (i == 0 || name[i - 1] != ' '))) {
      const size_t end = GroupEnd(name, i);
      if (c == '(' && depth == 0 && path_depth == 0 &&
          !absl::StartsWith(name.substr(end), "::")) {
        break;  // the parameter list
      }
      if (c == '[' || depth >= kMaxDepth || end - i < 2) {
        absl::StrAppend(&out, name.substr(i, end - i));
      } else {
        out += c;
        absl::StrAppend(
            &out, ElideArguments(name.substr(i + 1, end - i - 2), depth + 1));
        out += name[end - 1];
      }
      i = end;
      continue;
    }
    if (c == '[' && depth == 0 && path_depth == 0) break;  // " [clone .0]"
    out += c;
    ++i;
  }
  if (depth == 0) {
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }
  return out;
}

// The index of the first space outside brackets at or after `from`, or npos.
size_t TopLevelSpace(absl::string_view text, size_t from) {
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') return i;
    if (c == '(' || c == '<' || c == '{' || c == '[') {
      i = GroupEnd(text, i) - 1;
    }
  }
  return absl::string_view::npos;
}

}  // namespace

std::string ShortFunctionName(absl::string_view name) {
  std::string out = ElideArguments(name, /*depth=*/0);
  // Pass two: "void ns::f<…>" is a template function with its return type;
  // a space with no scope after it belongs to the name ("operator new",
  // "[libc.so.6] 0x1230").
  size_t space = TopLevelSpace(out, 0);
  while (space != absl::string_view::npos &&
         absl::StrContains(absl::string_view(out).substr(space + 1), "::")) {
    out.erase(0, space + 1);
    space = TopLevelSpace(out, 0);
  }
  return out.empty() ? std::string(name) : out;
}

}  // namespace collector
}  // namespace ringprof
