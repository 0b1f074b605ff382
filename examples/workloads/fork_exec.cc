// Children of every kind: fork (no exec), fork + exec, posix_spawn and
// vfork + exec, each of which allocates 4 MiB in 1 MiB blocks (every block
// is recorded at the emitter's default settings, see alloc_storm.cc), and a
// fork child that exits without allocating anything (it should leave no
// ring file). Prints one line per process: `<kind> <pid>` for kind in
// parent, fork, fork_exec, spawn, vfork, fork_quiet.
//
// Usage: fork_exec            (the parent)
//        fork_exec child      (what the exec'd children run)
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

__attribute__((noinline)) void AllocateBlocks(const char* who) {
  for (int i = 0; i < 4; ++i) {
    void* volatile block = malloc((1 << 20) + 64 * i);
    free(block);
  }
  (void)who;
}

bool WaitOk(pid_t pid) {
  int status = 0;
  const bool ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0;
  if (!ok) fprintf(stderr, "child %d: wait status 0x%x\n", pid, status);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "child") == 0) {
    AllocateBlocks("exec child");
    return 0;
  }
  setvbuf(stdout, nullptr, _IONBF, 0);
  printf("parent %d\n", getpid());
  AllocateBlocks("parent");
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  char child_arg[] = "child";
  char* child_argv[] = {self, child_arg, nullptr};

  const pid_t forked = fork();
  if (forked == 0) {
    AllocateBlocks("fork child");
    exit(0);
  }
  printf("fork %d\n", forked);

  const pid_t fork_exec = fork();
  if (fork_exec == 0) {
    AllocateBlocks("fork child before exec");
    execv(self, child_argv);
    _exit(127);
  }
  printf("fork_exec %d\n", fork_exec);

  pid_t spawned = 0;
  if (posix_spawn(&spawned, self, nullptr, nullptr, child_argv, environ) != 0) {
    return 1;
  }
  printf("spawn %d\n", spawned);

  const pid_t vforked = vfork();
  if (vforked == 0) {
    execv(self, child_argv);
    _exit(127);
  }
  printf("vfork %d\n", vforked);

  const pid_t quiet = fork();
  if (quiet == 0) _exit(0);
  printf("fork_quiet %d\n", quiet);

  const bool ok = WaitOk(forked) && WaitOk(fork_exec) && WaitOk(spawned) &&
                  WaitOk(vforked) && WaitOk(quiet);
  return ok ? 0 : 1;
}
