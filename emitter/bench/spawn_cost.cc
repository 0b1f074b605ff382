// Runs a command N times, one after the other (posix_spawn + waitpid), and
// prints the CPU time (user + system) the children used, per run, in
// microseconds: the per-process cost of whatever the environment preloads.
//
// Usage: spawn_cost N CMD [ARGS...]
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: spawn_cost N CMD [ARGS...]\n");
    return 2;
  }
  const int runs = std::atoi(argv[1]);
  for (int i = 0; i < runs; ++i) {
    pid_t pid;
    if (posix_spawn(&pid, argv[2], nullptr, nullptr, argv + 2, environ) != 0) {
      std::perror("posix_spawn");
      return 1;
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "spawn_cost: %s failed\n", argv[2]);
      return 1;
    }
  }
  rusage usage;
  getrusage(RUSAGE_CHILDREN, &usage);
  const double us = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 +
                    usage.ru_utime.tv_usec + usage.ru_stime.tv_usec;
  std::printf("%.1f\n", us / runs);
  return 0;
}
