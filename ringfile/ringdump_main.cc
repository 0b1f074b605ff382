// `ringdump [--follow] [--max=N] [--quiet] FILE` (ringdump.h).
#include <string>
#include <vector>

#include "ringfile/ringdump.h"

int main(int argc, char** argv) {
  return ringprof::ringfile::RingDump(
      std::vector<std::string>(argv + 1, argv + argc), "ringdump");
}
