#include "emitter/config.h"

#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringprof {
namespace emitter {
namespace {

std::map<std::string, std::string>* g_env = nullptr;
std::vector<std::string>* g_lines = nullptr;

const char* FakeLookup(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}
void CollectLine(const char* line) { g_lines->push_back(line); }

class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() {
    g_env = &env_;
    g_lines = &lines_;
  }
  Config Load(const char* executable = "/usr/bin/my-server") {
    Config config;
    LoadConfig(FakeLookup, CollectLine, executable, &config);
    return config;
  }
  std::map<std::string, std::string> env_;
  std::vector<std::string> lines_;
};

TEST_F(ConfigTest, DefaultsWithEmptyEnvironment) {
  const Config config = Load();
  EXPECT_FALSE(config.disabled);
  EXPECT_STREQ(config.dir, "/tmp/ringprof");
  EXPECT_STREQ(config.service_name, "my-server");
  EXPECT_EQ(config.sample_bytes, 512 * 1024);
  EXPECT_EQ(config.max_frames, 128);
  EXPECT_EQ(config.ring_kib, 8 * 1024);
  EXPECT_EQ(config.file_mode, 0600u);
  EXPECT_EQ(config.min_samples_per_sec, 100);
  EXPECT_EQ(config.max_samples_per_sec, 2000);
  EXPECT_TRUE(config.track_frees);
  EXPECT_FALSE(config.ptracer_any);
  EXPECT_EQ(config.mutex_sample_ns, 1'000'000);
  EXPECT_EQ(config.block_sample_ns, 1'000'000);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(ConfigTest, ValidValuesAreTaken) {
  env_ = {{"RINGPROF_DIR", "/dev/shm/rings/"},
          {"RINGPROF_SERVICE_NAME", "checkout"},
          {"RINGPROF_SAMPLE_BYTES", "4096"},
          {"RINGPROF_MAX_FRAMES", "64"},
          {"RINGPROF_RING_KIB", "1024"},
          {"RINGPROF_FILE_MODE", "0640"},
          {"RINGPROF_MIN_SAMPLES_PER_SEC", "0"},
          {"RINGPROF_MAX_SAMPLES_PER_SEC", "50"},
          {"RINGPROF_TRACK_FREES", "0"},
          {"RINGPROF_PTRACER_ANY", "1"},
          {"RINGPROF_MUTEX_SAMPLE_NS", "0"},
          {"RINGPROF_BLOCK_SAMPLE_NS", "250000"}};
  const Config config = Load();
  EXPECT_STREQ(config.dir, "/dev/shm/rings");  // trailing slash dropped
  EXPECT_STREQ(config.service_name, "checkout");
  EXPECT_EQ(config.sample_bytes, 4096);
  EXPECT_EQ(config.max_frames, 64);
  EXPECT_EQ(config.ring_kib, 1024);
  EXPECT_EQ(config.file_mode, 0640u);
  EXPECT_EQ(config.min_samples_per_sec, 0);
  EXPECT_EQ(config.max_samples_per_sec, 50);
  EXPECT_FALSE(config.track_frees);
  EXPECT_TRUE(config.ptracer_any);
  EXPECT_EQ(config.mutex_sample_ns, 0);
  EXPECT_EQ(config.block_sample_ns, 250000);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(ConfigTest, FileModeIsOctalWithOrWithoutLeadingZero) {
  env_ = {{"RINGPROF_FILE_MODE", "640"}};
  EXPECT_EQ(Load().file_mode, 0640u);
  env_ = {{"RINGPROF_FILE_MODE", "0660"}};
  EXPECT_EQ(Load().file_mode, 0660u);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(ConfigTest, DisableSwitch) {
  for (const char* on : {"1", "true", "yes"}) {
    env_ = {{"RINGPROF_DISABLE", on}};
    EXPECT_TRUE(Load().disabled) << on;
  }
  for (const char* off : {"0", "false", "no", ""}) {
    env_ = {{"RINGPROF_DISABLE", off}};
    EXPECT_FALSE(Load().disabled) << off;
  }
  EXPECT_TRUE(lines_.empty());
  env_ = {{"RINGPROF_DISABLE", "maybe"}};
  EXPECT_FALSE(Load().disabled);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("RINGPROF_DISABLE='maybe'"), std::string::npos);
}

TEST_F(ConfigTest, EachBadValueReportsOneLineAndKeepsTheDefault) {
  const Config defaults = Load();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"RINGPROF_DIR", "relative/dir"},
      {"RINGPROF_DIR", std::string(600, 'x').insert(0, "/")},
      {"RINGPROF_SERVICE_NAME", ".."},
      {"RINGPROF_SERVICE_NAME", std::string(100, 'n')},
      {"RINGPROF_SAMPLE_BYTES", "0"},
      {"RINGPROF_SAMPLE_BYTES", "12k"},
      {"RINGPROF_SAMPLE_BYTES", "-5"},
      {"RINGPROF_SAMPLE_BYTES", "99999999999999999999999"},
      {"RINGPROF_MAX_FRAMES", "1001"},
      {"RINGPROF_RING_KIB", "10"},
      {"RINGPROF_FILE_MODE", "0644x"},
      {"RINGPROF_FILE_MODE", "0400"},  // owner must read and write
      {"RINGPROF_FILE_MODE", "0755"},  // no execute bits
      {"RINGPROF_MIN_SAMPLES_PER_SEC", "5000"},
      {"RINGPROF_MAX_SAMPLES_PER_SEC", "0"},
      {"RINGPROF_TRACK_FREES", "sometimes"},
      {"RINGPROF_PTRACER_ANY", "any"},
      {"RINGPROF_MUTEX_SAMPLE_NS", "1ms"},
      {"RINGPROF_BLOCK_SAMPLE_NS", "1000000000001"},
  };
  for (const auto& [name, value] : bad) {
    env_ = {{name, value}};
    lines_.clear();
    const Config config = Load();
    ASSERT_EQ(lines_.size(), 1u) << name << "=" << value;
    EXPECT_EQ(lines_[0].find("ringprof: ignoring " + name + "="), 0u)
        << lines_[0];
    EXPECT_EQ(lines_[0].back(), '\n');
    EXPECT_STREQ(config.dir, defaults.dir);
    EXPECT_STREQ(config.service_name, defaults.service_name);
    EXPECT_EQ(config.sample_bytes, defaults.sample_bytes);
    EXPECT_EQ(config.max_frames, defaults.max_frames);
    EXPECT_EQ(config.ring_kib, defaults.ring_kib);
    EXPECT_EQ(config.file_mode, defaults.file_mode);
    EXPECT_EQ(config.min_samples_per_sec, defaults.min_samples_per_sec);
    EXPECT_EQ(config.max_samples_per_sec, defaults.max_samples_per_sec);
    EXPECT_EQ(config.track_frees, defaults.track_frees);
    EXPECT_EQ(config.ptracer_any, defaults.ptracer_any);
    EXPECT_EQ(config.mutex_sample_ns, defaults.mutex_sample_ns);
    EXPECT_EQ(config.block_sample_ns, defaults.block_sample_ns);
  }
}

TEST_F(ConfigTest, ServiceNamesAreSafeFileNameComponents) {
  env_ = {{"RINGPROF_SERVICE_NAME", "a/b c*d"}};
  EXPECT_STREQ(Load().service_name, "a_b_c_d");
  env_.clear();
  EXPECT_STREQ(Load("").service_name, "unknown");
  EXPECT_STREQ(Load(nullptr).service_name, "unknown");
  EXPECT_STREQ(Load("/opt/app/bin/py thon3").service_name, "py_thon3");
}

TEST_F(ConfigTest, CpuTimerSettings) {
  CpuTimerConfig config;
  LoadCpuTimerConfig(FakeLookup, CollectLine, &config);
  EXPECT_EQ(config.hz, 100);
  EXPECT_EQ(config.signal, SIGRTMAX - 4);
  EXPECT_TRUE(lines_.empty());

  env_ = {{"RINGPROF_CPU_HZ", "250"}, {"RINGPROF_CPU_SIGNAL", "SIGRTMIN+3"}};
  config = CpuTimerConfig();
  LoadCpuTimerConfig(FakeLookup, CollectLine, &config);
  EXPECT_EQ(config.hz, 250);
  EXPECT_EQ(config.signal, SIGRTMIN + 3);
  EXPECT_TRUE(lines_.empty());

  // Bad values: one line each, defaults kept.
  env_ = {{"RINGPROF_CPU_HZ", "5000"}, {"RINGPROF_CPU_SIGNAL", "SIGUSR1"}};
  config = CpuTimerConfig();
  LoadCpuTimerConfig(FakeLookup, CollectLine, &config);
  EXPECT_EQ(config.hz, 100);
  EXPECT_EQ(config.signal, SIGRTMAX - 4);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0],
            "ringprof: ignoring RINGPROF_CPU_HZ='5000' (expected 0 (off) to "
            "1000); using 100\n");
  env_["RINGPROF_CPU_HZ"] = "0";
  lines_.clear();
  config = CpuTimerConfig();
  LoadCpuTimerConfig(FakeLookup, CollectLine, &config);
  EXPECT_EQ(config.hz, 0);
  EXPECT_EQ(lines_.size(), 1u);  // the signal only
}

}  // namespace
}  // namespace emitter
}  // namespace ringprof
