// ReportConfigError (config.h): once per process tree.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>

#include "emitter/config.h"

namespace ringprof {
namespace emitter {
namespace {

// The settings that decide what the emitter prints.
bool IsSetting(const char* entry, size_t size) {
  return (size >= 9 && memcmp(entry, "RINGPROF_", 9) == 0) ||
         (size >= 11 && memcmp(entry, "LD_PRELOAD=", 11) == 0);
}

int CountOwnSettings() {
  int count = 0;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (IsSetting(*entry, strlen(*entry))) ++count;
  }
  return count;
}

bool OwnEntry(const char* entry, size_t size) {
  for (char** own = environ; own != nullptr && *own != nullptr; ++own) {
    if (strlen(*own) == size && memcmp(*own, entry, size) == 0) return true;
  }
  return false;
}

// Reads the parent's initial environment entry by entry: true when it
// preloads a library and its settings are exactly this process's (each of
// its entries is one of ours, and it has as many).
bool ParentSharesSettings() {
  char path[32] = "/proc/";
  char digits[16];
  int n = 0;
  for (unsigned pid = static_cast<unsigned>(getppid()); n == 0 || pid != 0;
       pid /= 10) {
    digits[n++] = static_cast<char>('0' + pid % 10);
  }
  size_t at = strlen(path);
  while (n > 0) path[at++] = digits[--n];
  memcpy(path + at, "/environ", 9);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char chunk[4096];
  char entry[4096];
  size_t size = 0;
  bool too_long = false, same = true;
  int settings = 0;
  bool preloads = false;
  ssize_t got;
  while (same && (got = read(fd, chunk, sizeof(chunk))) > 0) {
    for (ssize_t i = 0; i < got && same; ++i) {
      if (chunk[i] != '\0') {
        if (size < sizeof(entry)) {
          entry[size++] = chunk[i];
        } else {
          too_long = true;
        }
        continue;
      }
      if (IsSetting(entry, size)) {
        ++settings;
        preloads = preloads || memcmp(entry, "LD_PRELOAD=", 11) == 0;
        same = !too_long && OwnEntry(entry, size);
      }
      size = 0;
      too_long = false;
    }
  }
  close(fd);
  return same && preloads && settings == CountOwnSettings();
}

}  // namespace

void ReportConfigError(const char* line) {
  if (!LogToStderrInEnvironment(
          [](const char* name) -> const char* { return getenv(name); }) &&
      ParentSharesSettings()) {
    return;
  }
  ReportToStderr(line);
}

}  // namespace emitter
}  // namespace ringprof
