// libFuzzer target for RingReader: `bazel run --config=fuzz
// //ringfile:reader_fuzz -- -max_total_time=300`. Without --config=fuzz the
// same binary is built with a standalone main that replays input files.
//
// The first input byte picks the mode: even = the rest of the input is the
// whole file; odd = the rest is a list of 3-byte patches (offset u16 LE,
// value) applied to a valid template file (offset 0xffff truncates the file
// to value * 64 bytes), which reaches the record paths far more often than
// raw bytes would.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ringfile/reader_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ringprof::ringfile::testing::ExerciseRingFile;
  using ringprof::ringfile::testing::TemplateRingFile;
  using ringprof::ringfile::testing::WriteWholeFile;
  static const std::string* const path = [] {
    const char* dir = getenv("TMPDIR");
    return new std::string(absl::StrCat(dir != nullptr ? dir : "/tmp",
                                        "/reader_fuzz.", getpid(), ".ring"));
  }();
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    WriteWholeFile(*path, absl::MakeConstSpan(data + 1, size - 1));
  } else {
    std::string bytes = TemplateRingFile();
    for (size_t i = 1; i + 3 <= size; i += 3) {
      const uint32_t offset = data[i] | (uint32_t{data[i + 1]} << 8);
      if (offset == 0xffff) {
        bytes.resize(std::min<size_t>(bytes.size(), size_t{data[i + 2]} * 64));
      } else if (!bytes.empty()) {
        bytes[offset % bytes.size()] = static_cast<char>(data[i + 2]);
      }
    }
    WriteWholeFile(*path, absl::MakeConstSpan(
                              reinterpret_cast<const uint8_t*>(bytes.data()),
                              bytes.size()));
  }
  ExerciseRingFile(*path);
  return 0;
}
