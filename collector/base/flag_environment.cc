#include "collector/base/flag_environment.h"

#include <cstdlib>
#include <map>

#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ringprof {
namespace collector {
namespace {

// flag name -> variable; never destroyed (used until exit).
std::map<std::string, std::string>& Registry() {
  static auto* registry = new std::map<std::string, std::string>();
  return *registry;
}

}  // namespace

bool RegisterFlagEnvironment(std::initializer_list<FlagVariable> flags) {
  for (const FlagVariable& f : flags) Registry()[f.flag] = f.variable;
  return true;
}

bool RegisterRingprofFlagEnvironment(std::initializer_list<const char*> flags) {
  for (const char* flag : flags) {
    Registry()[flag] = absl::StrCat("RINGPROF_", absl::AsciiStrToUpper(flag));
  }
  return true;
}

absl::Status ApplyEnvironmentToFlags() {
  for (const auto& [name, variable] : Registry()) {
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr || *value == '\0') continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) {
      return absl::InternalError(
          absl::StrCat("no flag --", name, " for ", variable));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("environment variable ", variable, ": ", error));
    }
  }
  return absl::OkStatus();
}

std::string FlagVariableOf(absl::string_view flag) {
  auto it = Registry().find(std::string(flag));
  return it == Registry().end() ? "" : it->second;
}

std::vector<std::pair<std::string, std::string>> RegisteredFlagVariables() {
  return {Registry().begin(), Registry().end()};
}

}  // namespace collector
}  // namespace ringprof
