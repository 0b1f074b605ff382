// Runs the ringdump binary on synthetic ring files and checks what it prints.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ringfile/format.h"
#include "ringfile/test_util.h"
#include "ringfile/writer.h"

namespace ringprof {
namespace ringfile {
namespace {

using ::ringprof::ringfile::testing::AppendAllocSample;
using ::ringprof::ringfile::testing::AppendFixed;
using ::ringprof::ringfile::testing::AppendLabel;
using ::ringprof::ringfile::testing::AppendModuleMap;
using ::ringprof::ringfile::testing::AppendThreadName;
using ::ringprof::ringfile::testing::PatchValue;
using ::ringprof::ringfile::testing::TempRingPath;
using ::ringprof::ringfile::testing::TestWriterOptions;
using ::testing::HasSubstr;
using ::testing::Not;

struct RunResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

RunResult RunRingdump(const std::string& args) {
  const std::string binary =
      absl::StrCat(getenv("TEST_SRCDIR"), "/ringprof/ringfile/ringdump");
  FILE* pipe = popen(absl::StrCat(binary, " ", args, " 2>&1").c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  RunResult result{-1, ""};
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.output.append(buffer, n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(RingdumpTest, PrintsHeaderRecordsAndTotals) {
  const std::string path = TempRingPath("dump");
  RingWriter writer;
  ASSERT_EQ(writer.Create(TestWriterOptions(path)), 0);
  ModuleMap module = {};
  module.start = 0x400000;
  module.size = 0x1000;
  const uint8_t build_id[] = {0xab, 0xcd};
  ASSERT_TRUE(AppendModuleMap(writer, module, "/bin/app", build_id));
  AllocSample sample = {};
  sample.tid = 77;
  sample.requested_size = 24;
  sample.weight_bytes = 524288;
  sample.flags = kSampleTruncated | kSampleTimingOnly;
  const uint64_t frames[] = {0x400123, 0x400456};
  ASSERT_TRUE(AppendAllocSample(writer, sample, frames, 1));
  ThreadName name = {};
  name.tid = 77;
  ASSERT_TRUE(AppendThreadName(writer, name, "work\ner"));
  Label label = {};
  ASSERT_TRUE(AppendLabel(writer, label, "k", "v"));
  ProcessEnd end = {};
  end.exit_status = 0;
  ASSERT_TRUE(AppendFixed(writer, RecordType::kProcessEnd, end));
  writer.MarkProcessEnded();

  RunResult result = RunRingdump(path);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("version        2"));
  EXPECT_THAT(result.output, HasSubstr("2 rings x 64 slots x 1152 bytes"));
  EXPECT_THAT(result.output, HasSubstr("pid            4242"));
  EXPECT_THAT(result.output, HasSubstr("\"test-service\""));
  EXPECT_THAT(result.output,
              HasSubstr("ModuleMap 0x400000-0x401000 offset=0 bias=0 "
                        "build_id=abcd path=\"/bin/app\""));
  EXPECT_THAT(result.output,
              HasSubstr("[ring 1 #0] "));  // the sample went to ring 1
  EXPECT_THAT(result.output,
              HasSubstr("AllocSample tid=77 size=24 weight=524288"));
  EXPECT_THAT(result.output, HasSubstr("frames=2 truncated timing-only"));
  EXPECT_THAT(result.output, HasSubstr("#1   0x0000000000400456"));
  EXPECT_THAT(result.output, HasSubstr("name=\"work\\x0aer\""));
  EXPECT_THAT(result.output, HasSubstr("Label \"k\"=\"v\""));
  EXPECT_THAT(result.output, HasSubstr("ProcessEnd exit_status=0"));
  EXPECT_THAT(result.output, HasSubstr("records 5 delivered, 0 lost"));
  EXPECT_THAT(result.output, HasSubstr("process ended"));
  // Per-type counts close the totals, named by ringfile's one table.
  EXPECT_THAT(result.output, HasSubstr("\n  ModuleMap     1\n"));
  EXPECT_THAT(result.output, HasSubstr("\n  AllocSample   1\n"));
  EXPECT_THAT(result.output, HasSubstr("\n  ProcessEnd    1\n"));

  RunResult limited = RunRingdump(absl::StrCat("--max=1 ", path));
  EXPECT_EQ(limited.exit_code, 0);
  EXPECT_THAT(limited.output, HasSubstr("records 1 delivered"));
}

TEST(RingdumpTest, CorruptFileIsReportedWithExitCode2) {
  const std::string path = TempRingPath("dump-corrupt");
  RingWriter writer;
  ASSERT_EQ(writer.Create(TestWriterOptions(path)), 0);
  PatchValue(path, offsetof(FileHeader, version), uint32_t{7});
  RunResult result = RunRingdump(path);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("unsupported ring file version 7"));
  EXPECT_THAT(result.output, Not(HasSubstr("records")));
}

TEST(RingdumpTest, Usage) {
  EXPECT_EQ(RunRingdump("").exit_code, 1);
  EXPECT_EQ(RunRingdump("--bogus x").exit_code, 1);
}

}  // namespace
}  // namespace ringfile
}  // namespace ringprof
