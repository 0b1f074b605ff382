/* preload_probe: a shared object whose only job is to announce, on stderr,
 * that the dynamic loader honoured LD_PRELOAD in this process. Used by
 * sandbox_test.sh to tell "LD_PRELOAD does not work in this sandbox" apart
 * from "libringprof.so does not work". */
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void AnnounceLoaded(void) {
  char line[64];
  const int n =
      snprintf(line, sizeof(line), "preload_probe: loaded pid=%d\n", getpid());
  if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n);
}
