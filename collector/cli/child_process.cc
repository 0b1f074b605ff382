#include "collector/cli/child_process.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace ringprof {
namespace collector {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

sigset_t WaitedSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kForwarded) sigaddset(&set, sig);
  sigaddset(&set, SIGCHLD);
  return set;
}

}  // namespace

void BlockForwardedSignals() {
  // SIGCHLD's default action is "ignore", which may discard it even while
  // blocked: give it a handler so it stays pending for sigwaitinfo.
  struct sigaction sa = {};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, nullptr);
  sigset_t set = WaitedSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::StatusOr<ChildProcess> ChildProcess::Spawn(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) return absl::InvalidArgumentError("no command to run");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    bool replaced = false;
    for (const auto& [name, value] : env) {
      if (absl::StartsWith(*e, name + "=")) replaced = true;
    }
    if (!replaced) env_strings.emplace_back(*e);
  }
  for (const auto& [name, value] : env) {
    env_strings.push_back(absl::StrCat(name, "=", value));
  }
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults = WaitedSignals();
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  const int rc =
      posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot run ", argv[0], ": ", std::strerror(rc)));
  }
  return ChildProcess(pid);
}

int ChildProcess::Wait() {
  const sigset_t set = WaitedSignals();
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      continue;
    }
    if (done < 0 && errno != EINTR) return 127;
    siginfo_t info;
    const timespec timeout = {0, 200'000'000};  // also re-checks waitpid
    const int sig = ::sigtimedwait(&set, &info, &timeout);
    if (sig <= 0 || sig == SIGCHLD) continue;
    // Terminal-generated signals (si_code SI_KERNEL) reached the child's
    // process group already; forward only those sent to us directly.
    if (info.si_code == SI_USER || info.si_code == SI_QUEUE ||
        info.si_code == SI_TKILL) {
      ::kill(pid_, sig);
    }
  }
}

}  // namespace collector
}  // namespace ringprof
