#include "collector/ingest/ring_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "collector/ingest/ring_state.pb.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

std::string TempDir() {
  std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/stateXXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

RingState Example() {
  RingState state;
  state.pid = 42;
  state.process_start_ticks = 7;
  state.created_monotonic_ns = 100;
  state.created_realtime_ns = 200;
  state.positions = {10, 0, 3, 99};
  state.consumed = {12, 0, 3, 120};
  state.emitted_until_unix_ns = 1'700'000'000'000'000'000;
  state.modules.push_back({"/bin/app", "abcd", 0x400000, 0x1000, 0, 0});
  state.labels.emplace_back("region", "eu");
  state.cpu_timer = true;
  state.cpu_period_ns = 10'000'000;
  return state;
}

TEST(RingStateTest, RoundTripsThroughAFile) {
  const std::string dir = TempDir();
  ASSERT_TRUE(SaveRingState(dir, "/rings/app.1.2.ring", Example()).ok());
  EXPECT_EQ(RingStatePath(dir, "/rings/app.1.2.ring"),
            dir + "/app.1.2.ring.state");
  auto loaded = LoadRingState(dir, "/elsewhere/app.1.2.ring");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_TRUE(loaded->has_value());
  const RingState& s = **loaded;
  EXPECT_EQ(s.positions, Example().positions);
  EXPECT_EQ(s.consumed, Example().consumed);
  EXPECT_EQ(s.emitted_until_unix_ns, Example().emitted_until_unix_ns);
  ASSERT_EQ(s.modules.size(), 1u);
  EXPECT_EQ(s.modules[0].path, "/bin/app");
  EXPECT_EQ(s.modules[0].build_id_hex, "abcd");
  EXPECT_EQ(s.labels, Example().labels);
  EXPECT_TRUE(s.cpu_timer);

  ringfile::FileInfo info;
  info.pid = 42;
  info.process_start_ticks = 7;
  info.created_monotonic_ns = 100;
  info.created_realtime_ns = 200;
  info.ring_count = 4;
  EXPECT_TRUE(StateMatches(s, info));
  info.created_monotonic_ns = 101;  // another file of the same name
  EXPECT_FALSE(StateMatches(s, info));

  auto missing = LoadRingState(dir, "/rings/none.ring");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  RemoveRingState(dir, "/rings/app.1.2.ring");
  EXPECT_FALSE(LoadRingState(dir, "/rings/app.1.2.ring")->has_value());
}

TEST(RingStateTest, RejectsOutOfBoundsStates) {
  EXPECT_FALSE(ParseRingState("not a proto \xff\xff").ok());
  state::RingStateProto proto;
  proto.set_version(1);
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());  // no rings
  for (int i = 0; i < 65; ++i) proto.add_positions(0);
  for (int i = 0; i < 65; ++i) proto.add_consumed(0);
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());  // 65 rings
  proto.clear_positions();
  proto.clear_consumed();
  proto.add_positions(0);
  proto.add_consumed(uint64_t{1} << 63);
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  proto.clear_positions();
  proto.clear_consumed();
  proto.add_positions(6);
  proto.add_consumed(5);  // consumed below the resume position
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  proto.clear_positions();
  proto.add_positions(5);
  EXPECT_TRUE(ParseRingState(proto.SerializeAsString()).ok());
  auto* module = proto.add_modules();
  module->set_size(0);
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  module->set_size(10);
  module->set_start(~uint64_t{0});
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  module->set_start(0);
  module->set_build_id_hex(std::string(66, 'a'));
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  module->set_build_id_hex("ABCD");  // not lower-case hex
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  module->set_build_id_hex("");
  module->set_path(std::string(kMaxSavedStringBytes + 1, 'p'));
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
  module->set_path("/ok");
  EXPECT_TRUE(ParseRingState(proto.SerializeAsString()).ok());
  proto.set_version(2);
  EXPECT_FALSE(ParseRingState(proto.SerializeAsString()).ok());
}

TEST(RingStateTest, SpecialFilesAreRefusedWithoutBlocking) {
  const std::string dir = TempDir();
  const std::string fifo = dir + "/fifo.ring.state";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(LoadRingState(dir, "fifo.ring").ok());  // returns: no hang
  ASSERT_EQ(symlink("/etc/passwd", (dir + "/link.ring.state").c_str()), 0);
  EXPECT_FALSE(LoadRingState(dir, "link.ring").ok());
  {
    std::ofstream big(dir + "/big.ring.state");
    big << std::string(kMaxStateBytes + 1, 'x');
  }
  EXPECT_FALSE(LoadRingState(dir, "big.ring").ok());
}

TEST(RingStateTest, OrphanedStatesAreRemoved) {
  const std::string rings = TempDir();
  const std::string states = TempDir();
  std::ofstream(rings + "/live.ring") << "x";
  ASSERT_TRUE(SaveRingState(states, "live.ring", Example()).ok());
  ASSERT_TRUE(SaveRingState(states, "gone.ring", Example()).ok());
  RemoveOrphanedStates(states, rings);
  EXPECT_TRUE(LoadRingState(states, "live.ring")->has_value());
  EXPECT_FALSE(LoadRingState(states, "gone.ring")->has_value());
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
