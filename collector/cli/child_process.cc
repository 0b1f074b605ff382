#include "collector/cli/child_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
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

void WriteLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  ssize_t ignored = ::write(fd, text.data(), text.size());
  (void)ignored;
}

// The ring directory's *.ring files, then the directory itself (which the
// emitter only ever fills with ring files).
void DeleteRingDir(const std::string& dir) {
  if (dir.empty()) return;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* entry = ::readdir(d)) {
      if (absl::EndsWith(entry->d_name, ".ring")) {
        ::unlinkat(::dirfd(d), entry->d_name, 0);
      }
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// The pids whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return children;
  while (dirent* entry = ::readdir(d)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    char buffer[1024];
    const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
    std::fclose(f);
    buffer[n] = '\0';
    // "pid (comm) state ppid ...": comm may hold anything, up to the last ')'.
    const char* close_paren = std::strrchr(buffer, ')');
    char state = 0;
    int ppid = 0;
    if (close_paren != nullptr &&
        std::sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == parent) {
      children.push_back(pid);
    }
  }
  ::closedir(d);
  return children;
}

// ringprof is gone: the command and everything below it go too. As a child
// subreaper the supervisor inherits each orphan, so killing its children
// until none is left reaches the whole tree (except processes that made
// themselves a new session and were reparented elsewhere).
void KillTree(pid_t command) {
  if (command > 0) ::kill(command, SIGKILL);
  const pid_t self = ::getpid();
  for (int round = 0; round < 500; ++round) {  // bounded: 5 s
    for (pid_t child : ChildrenOf(self)) ::kill(child, SIGKILL);
    int status;
    pid_t reaped;
    while ((reaped = ::waitpid(-1, &status, WNOHANG)) > 0) {
    }
    if (reaped < 0 && errno == ECHILD) return;
    const timespec pause = {0, 10'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

[[noreturn]] void RunSupervisor(char* const* argv, char* const* envp,
                                const std::string& ring_dir, int life_fd,
                                int status_fd) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // The terminal's signals reach the command by themselves; ringprof
  // forwards the others. The supervisor must outlive both.
  for (int sig : kForwarded) ::signal(sig, SIG_IGN);
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);

  // 'G' once ringprof's collector runs; anything else: ringprof gave up.
  char go = 0;
  ssize_t n;
  while ((n = ::read(life_fd, &go, 1)) < 0 && errno == EINTR) {
  }
  if (n != 1 || go != 'G') {
    DeleteRingDir(ring_dir);
    ::_exit(0);
  }

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults = WaitedSignals();
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t command = 0;
  const int rc = posix_spawnp(&command, argv[0], nullptr, &attr, argv, envp);
  posix_spawnattr_destroy(&attr);
  WriteLine(status_fd,
            rc == 0 ? absl::StrCat("P ", command) : absl::StrCat("E ", rc));
  if (rc != 0) command = -1;

  while (true) {
    pollfd life = {life_fd, POLLIN, 0};
    ::poll(&life, 1, 50);
    int status;
    pid_t reaped;
    while ((reaped = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (reaped == command) {
        WriteLine(status_fd, absl::StrCat("X ", status));
        command = -1;
      }
    }
    if ((life.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    char byte = 0;
    const ssize_t n = ::read(life_fd, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte != 'D') KillTree(command);  // ringprof died
    DeleteRingDir(ring_dir);
    ::_exit(0);
  }
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

int CommandFate::ShellStatus() const {
  if (!known) return 128 + SIGKILL;
  return signaled ? 128 + signal : exit_code;
}

std::string CommandFate::Describe() const {
  if (!known) return "ended in an unknown way (its supervisor vanished)";
  if (!signaled) return absl::StrCat("exited with status ", exit_code);
  const char* name = sigabbrev_np(signal);
  return absl::StrCat("was killed by signal ", signal, " (",
                      name != nullptr ? absl::StrCat("SIG", name) : "?",
                      core_dumped ? ", core dumped" : "", ")");
}

CommandFate CommandFate::FromWaitStatus(int status) {
  CommandFate fate;
  fate.known = true;
  if (WIFSIGNALED(status)) {
    fate.signaled = true;
    fate.signal = WTERMSIG(status);
    fate.core_dumped = WCOREDUMP(status);
  } else {
    fate.exit_code = WEXITSTATUS(status);
  }
  return fate;
}

absl::StatusOr<ChildProcess> ChildProcess::Spawn(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::string& ring_dir) {
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

  int status_pipe[2], life_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  if (::pipe2(life_pipe, O_CLOEXEC) != 0) {
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t supervisor = ::fork();
  if (supervisor < 0) {
    for (int fd : {status_pipe[0], status_pipe[1], life_pipe[0], life_pipe[1]})
      ::close(fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (supervisor == 0) {
    ::close(status_pipe[0]);
    ::close(life_pipe[1]);
    RunSupervisor(args.data(), envp.data(), ring_dir, life_pipe[0],
                  status_pipe[1]);
  }
  ::close(status_pipe[1]);
  ::close(life_pipe[0]);
  return ChildProcess(supervisor, -1, status_pipe[0], life_pipe[1], argv[0]);
}

absl::Status ChildProcess::Start() {
  const char go = 'G';
  if (::write(life_fd_, &go, 1) != 1) {
    return absl::InternalError(
        absl::StrCat("cannot start ", command_, ": ", std::strerror(errno)));
  }
  // The first line: the command's pid, or why it could not start.
  std::string line;
  char byte;
  while (true) {
    const ssize_t n = ::read(status_fd_, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte == '\n') break;
    line.push_back(byte);
  }
  int value = 0;
  if (absl::StartsWith(line, "P ") &&
      absl::SimpleAtoi(line.substr(2), &value)) {
    pid_ = value;
    return absl::OkStatus();
  }
  const int error =
      absl::StartsWith(line, "E ") && absl::SimpleAtoi(line.substr(2), &value)
          ? value
          : ECHILD;
  Finish();
  return absl::NotFoundError(
      absl::StrCat("cannot run ", command_, ": ", std::strerror(error)));
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : supervisor_(other.supervisor_),
      pid_(other.pid_),
      status_fd_(other.status_fd_),
      life_fd_(other.life_fd_),
      command_(std::move(other.command_)),
      pending_(std::move(other.pending_)) {
  other.supervisor_ = -1;
  other.status_fd_ = -1;
  other.life_fd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (status_fd_ >= 0) ::close(status_fd_);
  if (life_fd_ >= 0) ::close(life_fd_);  // the supervisor stops the tree
}

namespace {

// The next signal sent to ringprof (blocked, so pending), from `signal_fd`
// (a signalfd) or, without one, sigtimedwait; 0 when none is pending.
int TakeSignal(int signal_fd, const sigset_t& set, int* code) {
  if (signal_fd >= 0) {
    signalfd_siginfo info;
    if (::read(signal_fd, &info, sizeof(info)) != sizeof(info)) return 0;
    *code = info.ssi_code;
    return static_cast<int>(info.ssi_signo);
  }
  siginfo_t info;
  const timespec no_wait = {0, 0};
  const int sig = ::sigtimedwait(&set, &info, &no_wait);
  *code = info.si_code;
  return sig > 0 ? sig : 0;
}

}  // namespace

CommandFate ChildProcess::Wait() {
  const sigset_t set = WaitedSignals();
  // Sleeps until the supervisor writes or a signal arrives (with no
  // signalfd: looks for signals every 50 ms).
  const int signal_fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  CommandFate fate;
  while (!ReadStatus(signal_fd, &fate)) {
    int code = 0;
    int sig;
    while ((sig = TakeSignal(signal_fd, set, &code)) != 0) {
      if (sig == SIGCHLD) continue;
      // Terminal-generated signals (si_code SI_KERNEL) reached the
      // command's process group already; forward only those sent to us
      // directly.
      if (code == SI_USER || code == SI_QUEUE || code == SI_TKILL) {
        ::kill(pid_, sig);
      }
    }
  }
  if (signal_fd >= 0) ::close(signal_fd);
  return fate;
}

bool ChildProcess::ReadStatus(int signal_fd, CommandFate* fate) {
  pollfd fds[2] = {{status_fd_, POLLIN, 0}, {signal_fd, POLLIN, 0}};
  if (::poll(fds, signal_fd >= 0 ? 2 : 1, signal_fd >= 0 ? -1 : 50) <= 0 ||
      fds[0].revents == 0) {
    return false;
  }
  char buffer[256];
  const ssize_t n = ::read(status_fd_, buffer, sizeof(buffer));
  if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
    // The supervisor is gone without a word: the command must not run on
    // unwatched.
    ::kill(pid_, SIGKILL);
    *fate = CommandFate();
    return true;
  }
  if (n > 0) pending_.append(buffer, static_cast<size_t>(n));
  size_t end;
  while ((end = pending_.find('\n')) != std::string::npos) {
    const std::string line = pending_.substr(0, end);
    pending_.erase(0, end + 1);
    int wait_status = 0;
    if (absl::StartsWith(line, "X ") &&
        absl::SimpleAtoi(line.substr(2), &wait_status)) {
      *fate = CommandFate::FromWaitStatus(wait_status);
      return true;
    }
  }
  return false;
}

void ChildProcess::Finish() {
  if (life_fd_ < 0) return;
  const char done = 'D';
  ssize_t ignored = ::write(life_fd_, &done, 1);
  (void)ignored;
  ::close(life_fd_);
  life_fd_ = -1;
  int status;
  while (::waitpid(supervisor_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace collector
}  // namespace ringprof
