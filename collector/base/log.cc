#include "collector/base/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

std::atomic<bool> g_verbose{false};

void Write(absl::string_view level, absl::string_view message) {
  std::string line = absl::StrCat("ringprof: ", level, message, "\n");
  // One write per line so concurrent lines do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace

void SetVerboseLogging(bool verbose) { g_verbose.store(verbose); }

void LogInfo(absl::string_view message) {
  if (g_verbose.load(std::memory_order_relaxed)) Write("", message);
}
void LogWarning(absl::string_view message) { Write("warning: ", message); }
void LogError(absl::string_view message) { Write("error: ", message); }

}  // namespace collector
}  // namespace ringprof
