#include "examples/common/flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ringprof {
namespace examples {
namespace {

void PrintUsage(FILE* out, const char* program, const char* summary,
                std::initializer_list<IntFlag> flags) {
  std::fprintf(out, "usage: %s [flags]\n%s\n\nflags:\n", program, summary);
  for (const IntFlag& flag : flags) {
    std::fprintf(out, "  --%s=N  %s (default %d, %d..%d)\n", flag.name,
                 flag.help, *flag.value, flag.min, flag.max);
  }
}

bool ParseValue(const IntFlag& flag, const char* text) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < flag.min ||
      value > flag.max) {
    std::fprintf(stderr, "bad value for --%s: '%s' (want %d..%d)\n", flag.name,
                 text, flag.min, flag.max);
    return false;
  }
  *flag.value = static_cast<int>(value);
  return true;
}

}  // namespace

bool ParseIntFlags(int argc, char** argv, const char* summary,
                   std::initializer_list<IntFlag> flags, int* exit_code) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      PrintUsage(stdout, argv[0], summary, flags);
      *exit_code = 0;
      return false;
    }
    const IntFlag* matched = nullptr;
    const char* value = nullptr;
    for (const IntFlag& flag : flags) {
      const std::string prefix = std::string("--") + flag.name;
      if (arg == prefix && i + 1 < argc) {
        matched = &flag;
        value = argv[++i];
        break;
      }
      if (arg.compare(0, prefix.size() + 1, prefix + "=") == 0) {
        matched = &flag;
        value = argv[i] + prefix.size() + 1;
        break;
      }
    }
    if (matched == nullptr) {
      std::fprintf(stderr, "unknown or incomplete flag: %s\n", argv[i]);
      PrintUsage(stderr, argv[0], summary, flags);
      *exit_code = 2;
      return false;
    }
    if (!ParseValue(*matched, value)) {
      *exit_code = 2;
      return false;
    }
  }
  return true;
}

}  // namespace examples
}  // namespace ringprof
