// UTF-8 checks and repair for strings that enter a pprof or a series label.
//
// Pyroscope refuses a profile whose string table holds one string that is
// not valid UTF-8, and a series with a label value that is not; libprotobuf
// refuses to parse such a proto3 string at all. File names and symbols come
// from the workload (any bytes), so every string is repaired on its way in.
//
// Thread-safe (pure functions); no allocation beyond the returned string.
#ifndef RINGPROF_COLLECTOR_PPROF_UTF8_H_
#define RINGPROF_COLLECTOR_PPROF_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace ringprof {
namespace collector {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0
// when none starts there (an invalid or truncated sequence). i < s.size().
size_t Utf8SequenceLength(absl::string_view s, size_t i);

// Strict UTF-8 (as Go's utf8.ValidString): no overlong forms, no
// surrogates, nothing above U+10FFFF.
bool IsValidUtf8(absl::string_view s);

// `s` with every byte that is not part of a valid sequence replaced by
// U+FFFD, then cut to at most `max_bytes` on a character boundary.
std::string SanitizeUtf8(absl::string_view s, size_t max_bytes = SIZE_MAX);

// Longest prefix of valid UTF-8 `s` of at most `max_bytes` bytes that ends
// on a character boundary.
absl::string_view TruncateUtf8(absl::string_view s, size_t max_bytes);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_PPROF_UTF8_H_
