// The `ringprof` commands, one file each; each returns the process's exit
// status. Flags are parsed before they run (ringprof_main.cc).
#ifndef RINGPROF_COLLECTOR_CLI_COMMANDS_H_
#define RINGPROF_COLLECTOR_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace ringprof {
namespace collector {

// run.cc: runs `command` with the emitter preloaded and profiles it.
int RunCommand(const std::vector<std::string>& command);
// collect.cc: the sidecar, until SIGTERM.
int CollectCommand();
// diff.cc: BASE TARGET -> an HTML diff flame graph.
int DiffCommand(const std::vector<std::string>& files);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_CLI_COMMANDS_H_
