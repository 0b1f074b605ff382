// Drives RingReader over an arbitrary (possibly hostile) file the way the
// collector does: open, poll until drained, decode every delivered record.
// Shared by the libFuzzer target and the random-mutation test. Returns what
// happened; crashing, hanging or leaking is the failure mode under test.
#ifndef RINGPROF_RINGFILE_READER_EXERCISE_H_
#define RINGPROF_RINGFILE_READER_EXERCISE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace ringprof {
namespace ringfile {
namespace testing {

struct ExerciseResult {
  absl::Status open_status;
  absl::Status poll_status;  // first Poll error, if any
  uint64_t polls = 0;
  uint64_t delivered = 0;
  uint64_t decoded = 0;  // delivered records whose Decode* succeeded
  uint64_t decode_errors = 0;
  uint64_t lost = 0;
};

// Polls at most `max_polls` times (each bounded by max_records).
ExerciseResult ExerciseRingFile(const std::string& path, int max_polls = 64);

// A valid ring file (2 rings x 4 slots x 256 bytes, 10240 bytes) holding one
// record of every type, 5 per ring so each ring lapped once; the same
// bytes every call.
const std::string& TemplateRingFile();

// Writes `bytes` to `path` (replacing any file there).
void WriteWholeFile(const std::string& path, absl::Span<const uint8_t> bytes);

}  // namespace testing
}  // namespace ringfile
}  // namespace ringprof

#endif  // RINGPROF_RINGFILE_READER_EXERCISE_H_
