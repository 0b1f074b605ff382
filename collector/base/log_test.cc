#include "collector/base/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

// Captures what is written to stderr between construction and Take().
class StderrCapture {
 public:
  StderrCapture() {
    char path[] = "/tmp/log_test.XXXXXX";
    fd_ = mkstemp(path);
    unlink(path);
    saved_ = dup(STDERR_FILENO);
    dup2(fd_, STDERR_FILENO);
  }
  std::string Take() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    std::string out;
    char buf[4096];
    lseek(fd_, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd_, buf, sizeof(buf))) > 0;) out.append(buf, n);
    close(fd_);
    return out;
  }

 private:
  int fd_;
  int saved_;
};

TEST(LogTest, ParsesLevels) {
  LogLevel level;
  ASSERT_TRUE(ParseLogLevel("WARN", &level));
  EXPECT_EQ(level, LogLevel::kWarning);
  ASSERT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("loud", &level));
}

TEST(LogTest, LevelAppliesToEveryLine) {
  SetLogLevel(LogLevel::kError);
  StderrCapture capture;
  LogDebug("d");
  LogInfo("i");
  LogWarning("w");
  LogError("e");
  EXPECT_EQ(capture.Take(), "ringprof: error: e\n");

  SetLogLevel(LogLevel::kDebug);
  StderrCapture all;
  LogDebug("d");
  LogInfo("i");
  LogWarning("w");
  EXPECT_EQ(all.Take(), "ringprof: d\nringprof: i\nringprof: warning: w\n");
  SetLogLevel(LogLevel::kInfo);
}

TEST(LogTest, RateLimitedLogCountsWhatItSuppresses) {
  SetLogLevel(LogLevel::kInfo);
  // An interval no test run reaches: only the first line per key prints.
  RateLimitedLog log(int64_t{3600} * 1000000000);
  StderrCapture capture;
  log.Log(LogLevel::kWarning, "a", "first");
  log.Log(LogLevel::kWarning, "a", "second");
  log.Log(LogLevel::kWarning, "b", "other key");
  log.Log(LogLevel::kDebug, "c", "below the level");
  EXPECT_EQ(capture.Take(),
            "ringprof: warning: first\nringprof: warning: other key\n");

  RateLimitedLog burst(int64_t{3600} * 1000000000, 2);
  StderrCapture burst_capture;
  for (const char* m : {"1", "2", "3", "4"})
    burst.Log(LogLevel::kError, "k", m);
  EXPECT_EQ(burst_capture.Take(), "ringprof: error: 1\nringprof: error: 2\n");

  burst.set_burst(3);  // --log-lines-per-cause
  StderrCapture raised;
  for (const char* m : {"5", "6"}) burst.Log(LogLevel::kError, "k", m);
  EXPECT_EQ(raised.Take(),
            "ringprof: error: 5 (2 similar messages suppressed)\n");

  RateLimitedLog every_time(0);
  StderrCapture again;
  every_time.Log(LogLevel::kInfo, "a", "one");
  every_time.Log(LogLevel::kInfo, "a", "two");
  EXPECT_EQ(again.Take(), "ringprof: one\nringprof: two\n");
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
