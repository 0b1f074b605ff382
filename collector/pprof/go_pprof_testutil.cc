#include "collector/pprof/go_pprof_testutil.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace ringprof {
namespace collector {
namespace {

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

}  // namespace

absl::StatusOr<std::string> RunGoPprof(const std::vector<std::string>& args) {
  const char* go = nullptr;
  for (const char* candidate : {"/usr/bin/go", "/usr/local/go/bin/go"}) {
    if (::access(candidate, X_OK) == 0) {
      go = candidate;
      break;
    }
  }
  if (go == nullptr) return absl::UnavailableError("go is not installed");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string home = tmp != nullptr ? tmp : "/tmp";
  std::string command = absl::StrCat(
      "env HOME=", ShellQuote(home), " GOCACHE=", ShellQuote(home + "/gocache"),
      " PPROF_TMPDIR=", ShellQuote(home), " GOFLAGS= ", go,
      " tool pprof -symbolize=none");
  for (const std::string& arg : args)
    absl::StrAppend(&command, " ", ShellQuote(arg));
  absl::StrAppend(&command, " 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("popen failed");
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, n);
  int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(
        absl::StrCat("go tool pprof failed (", status, "): ", output));
  }
  return output;
}

}  // namespace collector
}  // namespace ringprof
