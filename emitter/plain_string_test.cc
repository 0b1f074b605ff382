// The inline string helpers answer as the libc functions they stand for.
#include "emitter/plain_string.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

TEST(PlainStringTest, SameStringIsStrcmpEqual) {
  const char* const kStrings[] = {"",     "a",   "ab",     "abc",
                                  "abd",  "b",   "malloc", "malloc_usable_size",
                                  "\xff", "\x7f"};
  for (const char* a : kStrings) {
    for (const char* b : kStrings) {
      SCOPED_TRACE(std::string(a) + " vs " + b);
      EXPECT_EQ(SameString(a, b), strcmp(a, b) == 0);
    }
  }
}

TEST(PlainStringTest, HasPrefixIsStrncmpEqual) {
  for (const char* s : {"", "RINGPROF", "RINGPROF_", "RINGPROF_DIR=/tmp",
                        "ringprof_DIR", "linux-vdso.so.1", "linux-gate"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(HasPrefix(s, "RINGPROF_", 9), strncmp(s, "RINGPROF_", 9) == 0);
    EXPECT_EQ(HasPrefix(s, "linux-vdso", 10),
              strncmp(s, "linux-vdso", 10) == 0);
    EXPECT_TRUE(HasPrefix(s, "", 0));
  }
}

TEST(PlainStringTest, AfterLastSlashIsTheFileName) {
  EXPECT_STREQ(AfterLastSlash("/lib/x86_64-linux-gnu/libc.so.6"), "libc.so.6");
  EXPECT_STREQ(AfterLastSlash("libc.so.6"), "libc.so.6");
  EXPECT_STREQ(AfterLastSlash("/usr/lib/"), "");
  EXPECT_STREQ(AfterLastSlash(""), "");
  EXPECT_STREQ(AfterLastSlash("/"), "");
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
