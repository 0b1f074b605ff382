#include "collector/pprof/utf8.h"

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

TEST(Utf8Test, ValidStrings) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("/srv/bin_caf\xc3\xa9/app"));
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x94\xa5"));  // U+1F525
}

TEST(Utf8Test, InvalidStrings) {
  EXPECT_FALSE(IsValidUtf8("/srv/bin_caf\xe9/app"));  // Latin-1 byte
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));              // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));          // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));      // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\x80"));                  // lone continuation
}

TEST(Utf8Test, SanitizeReplacesEachBadByte) {
  EXPECT_EQ(SanitizeUtf8("/srv/bin_caf\xe9/app"),
            "/srv/bin_caf\xEF\xBF\xBD/app");
  EXPECT_EQ(SanitizeUtf8("a\xff\xfe"), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(SanitizeUtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_TRUE(IsValidUtf8(SanitizeUtf8("\xe2\x82\xe2\x82\xac\xc0")));
}

TEST(Utf8Test, SanitizeCutsOnCharacterBoundary) {
  EXPECT_EQ(SanitizeUtf8("ab\xc3\xa9", 3), "ab");
  EXPECT_EQ(SanitizeUtf8("ab\xff", 4), "ab");  // U+FFFD needs 3 bytes
  EXPECT_EQ(SanitizeUtf8("abc", 0), "");
}

TEST(Utf8Test, Truncate) {
  EXPECT_EQ(TruncateUtf8("caf\xc3\xa9", 4), "caf");
  EXPECT_EQ(TruncateUtf8("caf\xc3\xa9", 5), "caf\xc3\xa9");
  EXPECT_EQ(TruncateUtf8("abc", 2), "ab");
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
