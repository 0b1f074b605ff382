// Fuzz target: ParseRingState on arbitrary bytes must return a state within
// its documented bounds or an error, and a parsed state must survive a
// serialize/parse round trip unchanged.
#include <cstdint>
#include <cstdlib>

#include "collector/ingest/ring_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ringprof::collector::ParseRingState;
  using ringprof::collector::RingState;
  using ringprof::collector::SerializeRingState;
  absl::StatusOr<RingState> state = ParseRingState(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!state.ok()) return 0;
  if (state->positions.empty() || state->positions.size() > 64 ||
      state->modules.size() > ringprof::collector::kMaxSavedModules ||
      state->labels.size() > ringprof::collector::kMaxSavedLabels) {
    abort();
  }
  absl::StatusOr<RingState> again = ParseRingState(SerializeRingState(*state));
  if (!again.ok() || again->positions != state->positions ||
      again->modules.size() != state->modules.size() ||
      again->labels != state->labels ||
      again->emitted_until_unix_ns != state->emitted_until_unix_ns) {
    abort();
  }
  return 0;
}
