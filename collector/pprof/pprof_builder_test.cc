#include "collector/pprof/pprof_builder.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/pprof/go_pprof_testutil.h"
#include "collector/pprof/pprof_io.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/pprof/profile_kinds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;
using ::testing::HasSubstr;

// Sum of value `index` over all samples.
int64_t Total(const Profile& p, int index) {
  int64_t sum = 0;
  for (const auto& s : p.sample()) sum += s.value(index);
  return sum;
}

std::string FunctionOf(const Profile& p, uint64_t location_id, int line = 0) {
  for (const auto& l : p.location()) {
    if (l.id() != location_id) continue;
    for (const auto& f : p.function()) {
      if (f.id() == l.line(line).function_id()) return p.string_table(f.name());
    }
  }
  return "<none>";
}

PprofBuilder::LocationId Fn(PprofBuilder& b, PprofBuilder::MappingId m,
                            uint64_t address, const std::string& name) {
  LineSpec line{name, "file.cc", 10};
  return b.InternLocation(m, address, absl::MakeConstSpan(&line, 1));
}

TEST(PprofBuilderTest, ProducesValidCpuProfileWithMappingsAndInlines) {
  ProfileSpec spec = SpecOf(ProfileKind::kCpu, 10'000'000);
  spec.time_nanos = 1'700'000'000'000'000'000;
  spec.duration_nanos = 10'000'000'000;
  PprofBuilder b(spec);
  MappingSpec m;
  m.module.start = 0x400000;
  m.module.size = 0x100000;
  m.module.path = "/bin/app";
  m.module.build_id_hex = "abcdef0123";
  m.has_functions = true;
  const auto mapping = b.InternMapping(m);
  // One location with an inlined callee: two Line entries, innermost first.
  std::vector<LineSpec> inlined = {{"inner", "a.h", 3}, {"outer", "a.cc", 9}};
  const auto leaf = b.InternLocation(mapping, 0x401000, inlined);
  const auto main = Fn(b, mapping, 0x402000, "main");
  b.AddSample({leaf, main}, {20'000'000});
  b.AddSample({leaf, main}, {10'000'000});  // same stack: aggregated
  b.AddSample({main}, {10'000'000});
  b.AddSample({main}, {0});  // all-zero: dropped

  Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  EXPECT_EQ(p.string_table(0), "");
  EXPECT_EQ(p.sample_size(), 2);
  EXPECT_EQ(Total(p, 0), 40'000'000);
  EXPECT_EQ(p.period(), 10'000'000);
  EXPECT_EQ(p.string_table(p.period_type().type()), "cpu");
  EXPECT_EQ(p.string_table(p.sample_type(0).unit()), "nanoseconds");
  ASSERT_EQ(p.mapping_size(), 1);
  EXPECT_EQ(p.string_table(p.mapping(0).build_id()), "abcdef0123");
  const auto& first = p.sample(0);  // the largest first
  EXPECT_EQ(first.value(0), 30'000'000);
  EXPECT_EQ(FunctionOf(p, first.location_id(0), 0), "inner");
  EXPECT_EQ(FunctionOf(p, first.location_id(0), 1), "outer");
}

TEST(PprofBuilderTest, TrimsSmallestStacksIntoOneSampleKeepingTotals) {
  PyroscopeLimits limits;
  limits.max_samples = 100;
  PprofBuilder b(SpecOf(ProfileKind::kMemory), limits);
  int64_t total_bytes = 0;
  for (int i = 1; i <= 1000; ++i) {
    const auto loc = Fn(b, 0, 0x1000 + i, absl::StrCat("f", i));
    b.AddSample({loc}, {1, i});
    total_bytes += i;
  }
  Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p, limits).ok()) << ValidatePprof(p, limits);
  EXPECT_EQ(p.sample_size(), 100);
  EXPECT_EQ(Total(p, 1), total_bytes);
  EXPECT_EQ(Total(p, 0), 1000);
  // The kept ones are the largest; the rest went to "[trimmed]".
  EXPECT_EQ(FunctionOf(p, p.sample(0).location_id(0)), "f1000");
  EXPECT_EQ(FunctionOf(p, p.sample(99).location_id(0)), "[trimmed]");
  EXPECT_EQ(p.sample(99).value(0), 901);
  // Locations of trimmed stacks are not written out.
  EXPECT_EQ(p.location_size(), 100);
}

TEST(PprofBuilderTest, DefaultSampleLimitHoldsForManyDistinctStacks) {
  PprofBuilder b(SpecOf(ProfileKind::kCpu, 10'000'000));
  const auto root = Fn(b, 0, 1, "root");
  int64_t total = 0;
  for (int i = 0; i < 17000; ++i) {
    b.AddSample({Fn(b, 0, 0x10000 + i, absl::StrCat("f", i)), root},
                {10'000'000 + i});
    total += 10'000'000 + i;
  }
  Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  EXPECT_EQ(p.sample_size(), 16000);
  EXPECT_EQ(Total(p, 0), total);
}

TEST(PprofBuilderTest, ByteLimitTrimsUntilTheProfileFits) {
  PyroscopeLimits limits;
  limits.max_bytes = 64 << 10;
  PprofBuilder b(SpecOf(ProfileKind::kCpu, 10'000'000), limits);
  std::vector<PprofBuilder::LocationId> stack;
  int64_t total = 0;
  for (int i = 0; i < 2000; ++i) {
    stack.clear();
    for (int d = 0; d < 8; ++d) {
      stack.push_back(Fn(b, 0, 0x10000 + i * 64 + d,
                         absl::StrCat("some::long::namespace::Function", i, "_",
                                      d, "<std::vector<int>>")));
    }
    b.AddSample(stack, {10'000'000});
    total += 10'000'000;
  }
  Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p, limits).ok()) << ValidatePprof(p, limits);
  EXPECT_LE(p.ByteSizeLong(), limits.max_bytes);
  EXPECT_GT(p.sample_size(), 10);  // trimmed, not emptied
  EXPECT_EQ(Total(p, 0), total);
}

TEST(PprofBuilderTest, DeepStacksKeepInnermostFramesUnderTruncatedRoot) {
  PprofBuilder b(SpecOf(ProfileKind::kCpu, 10'000'000));
  std::vector<PprofBuilder::LocationId> stack;
  for (int d = 0; d < 1500; ++d) {
    stack.push_back(Fn(b, 0, 0x1000 + d, absl::StrCat("frame", d)));
  }
  b.AddSample(stack, {10'000'000});
  Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  ASSERT_EQ(p.sample(0).location_id_size(), 1000);
  EXPECT_EQ(FunctionOf(p, p.sample(0).location_id(0)), "frame0");
  EXPECT_EQ(FunctionOf(p, p.sample(0).location_id(999)), "[truncated]");
}

TEST(PprofBuilderTest, ValidatorRejectsWhatPyroscopeRejects) {
  PprofBuilder b(SpecOf(ProfileKind::kCpu, 10'000'000));
  b.AddSample({Fn(b, 0, 1, "f")}, {1});
  Profile good = b.Build();
  ASSERT_TRUE(ValidatePprof(good).ok());

  Profile p = good;
  p.set_string_table(0, "x");
  EXPECT_FALSE(ValidatePprof(p).ok());
  p = good;
  p.mutable_location(0)->set_id(0);
  EXPECT_FALSE(ValidatePprof(p).ok());
  p = good;
  p.clear_period_type();
  EXPECT_FALSE(ValidatePprof(p).ok());
  p = good;
  p.mutable_sample(0)->add_value(1);
  EXPECT_FALSE(ValidatePprof(p).ok());
  p = good;
  p.add_string_table("cpu-time");
  p.mutable_sample_type(0)->set_type(p.string_table_size() - 1);
  EXPECT_FALSE(ValidatePprof(p).ok());
}

TEST(PprofBuilderTest, ValidatorChecksTheIngestionWindowAndSampleLabels) {
  constexpr int64_t kNow = int64_t{1'700'000'000} * 1'000'000'000;
  constexpr int64_t kMinute = int64_t{60} * 1'000'000'000;
  ProfileSpec spec = SpecOf(ProfileKind::kCpu, 10'000'000);
  spec.time_nanos = kNow - 5 * kMinute;
  PprofBuilder b(spec);
  b.AddSample({Fn(b, 0, 1, "f")}, {1});
  Profile good = b.Build();
  ASSERT_TRUE(ValidatePprof(good, {}, kNow).ok());

  Profile p = good;
  p.set_time_nanos(kNow - 61 * kMinute);
  EXPECT_TRUE(absl::IsOutOfRange(ValidatePprof(p, {}, kNow)));
  EXPECT_TRUE(ValidatePprof(p).ok()) << "no window without a clock";
  p.set_time_nanos(kNow + 11 * kMinute);
  EXPECT_TRUE(absl::IsInvalidArgument(ValidatePprof(p, {}, kNow)));

  p = good;
  PyroscopeLimits limits;
  limits.max_sample_labels = 1;
  for (int i = 0; i < 2; ++i) p.mutable_sample(0)->add_label()->set_key(0);
  EXPECT_THAT(ValidatePprof(p, limits).message(), HasSubstr("labels"));
  p.mutable_sample(0)->mutable_label(0)->set_key(9999);
  EXPECT_THAT(ValidatePprof(p).message(), HasSubstr("label string index"));

  const size_t bytes = good.SerializeAsString().size();
  limits = {};
  limits.max_bytes = bytes;
  EXPECT_TRUE(ValidatePprof(good, limits, kNow).ok());
  limits.max_bytes = bytes - 1;
  EXPECT_THAT(ValidatePprof(good, limits, kNow).message(), HasSubstr("bytes"));
}

TEST(PprofBuilderTest, WorkloadBytesBecomeValidUtf8ThatSurvivesParsing) {
  PyroscopeLimits limits;
  limits.max_string_bytes = 64;
  PprofBuilder b(SpecOf(ProfileKind::kCpu, 10'000'000), limits);
  MappingSpec m;
  m.module.path = "/srv/bin_caf\xe9/app";
  m.module.build_id_hex = "\xff\xfe";
  const auto mapping = b.InternMapping(m);
  LineSpec bad{"ns::f\xc0\xafoo", "/src/\xe9.cc", 1};
  const auto loc =
      b.InternLocation(mapping, 0x10, absl::MakeConstSpan(&bad, 1));
  // Longer than the limit, with a 2-byte character straddling the cut.
  const std::string long_name = std::string(63, 'x') + "\xc3\xa9";
  b.AddSample({loc, Fn(b, mapping, 0x20, long_name)}, {1});
  Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p, limits).ok()) << ValidatePprof(p, limits);
  // libprotobuf refuses a proto3 string that is not UTF-8: this must parse.
  Profile parsed;
  ASSERT_TRUE(parsed.ParseFromString(p.SerializeAsString()));
  EXPECT_EQ(parsed.string_table(parsed.mapping(0).filename()),
            "/srv/bin_caf\xEF\xBF\xBD/app");
  EXPECT_EQ(FunctionOf(parsed, parsed.sample(0).location_id(0)),
            "ns::f\xEF\xBF\xBD\xEF\xBF\xBDoo");
  EXPECT_EQ(FunctionOf(parsed, parsed.sample(0).location_id(1)),
            std::string(63, 'x'));

  p.add_string_table("\xe9");
  EXPECT_THAT(ValidatePprof(p).message(), HasSubstr("UTF-8"));
}

TEST(PprofBuilderTest, GoToolPprofReadsIt) {
  PprofBuilder b(SpecOf(ProfileKind::kMemory));
  MappingSpec m;
  m.module.start = 0x7f0000000000;
  m.module.size = 0x100000;
  m.module.path = "/usr/lib/libfoo.so";
  m.module.build_id_hex = "0011223344556677";
  const auto mapping = b.InternMapping(m);
  const auto hot = Fn(b, mapping, 0x7f0000001000, "hot_function");
  const auto unresolved = Fn(b, mapping, 0x7f0000002000, "libfoo.so+0x2000");
  const auto main = Fn(b, mapping, 0x7f0000003000, "main");
  b.AddSample({hot, main}, {3, 3 << 20});
  b.AddSample({unresolved, main}, {1, 1 << 20});
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/memory.pb.gz");
  ASSERT_TRUE(WriteProfileFile(path, b.Build().SerializeAsString()).ok());

  absl::StatusOr<std::string> top =
      RunGoPprof({"-top", "-sample_index=alloc_space", path});
  if (absl::IsUnavailable(top.status())) GTEST_SKIP() << top.status();
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_THAT(*top, HasSubstr("hot_function"));
  EXPECT_THAT(*top, HasSubstr("libfoo.so+0x2000"));
  EXPECT_THAT(*top, HasSubstr("4MB total"));
  absl::StatusOr<std::string> raw = RunGoPprof({"-raw", path});
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_THAT(*raw, HasSubstr("0011223344556677"));
}

TEST(PprofBuilderTest, SampleLabelsSplitSamplesAndGoToolPprofFiltersOnThem) {
  PprofBuilder b(SpecOf(ProfileKind::kCpu, 10'000'000));
  const auto mapping = b.InternMapping(MappingSpec{});
  const auto hot = Fn(b, mapping, 0x1000, "hot_function");
  const auto main = Fn(b, mapping, 0x2000, "main");
  const auto light = b.InternLabels({{"endpoint", "/light"}});
  const auto heavy = b.InternLabels({{"endpoint", "/heavy"}});
  EXPECT_EQ(b.InternLabels({{"endpoint", "/light"}}), light);
  EXPECT_EQ(b.InternLabels({}), 0u);
  b.AddSample({hot, main}, {10'000'000}, light);
  b.AddSample({hot, main}, {30'000'000}, heavy);
  b.AddSample({hot, main}, {30'000'000}, heavy);
  b.AddSample({hot, main}, {5'000'000});
  const Profile p = b.Build();
  ASSERT_TRUE(ValidatePprof(p).ok()) << ValidatePprof(p);
  ASSERT_EQ(p.sample_size(), 3);  // same stack, three label sets
  int64_t heavy_ns = 0;
  for (const auto& s : p.sample()) {
    for (const auto& label : s.label()) {
      if (p.string_table(label.str()) == "/heavy") heavy_ns += s.value(0);
    }
  }
  EXPECT_EQ(heavy_ns, 60'000'000);

  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/labels.pb.gz");
  ASSERT_TRUE(WriteProfileFile(path, p.SerializeAsString()).ok());
  absl::StatusOr<std::string> top =
      RunGoPprof({"-top", "-tagfocus=endpoint=/heavy", path});
  if (absl::IsUnavailable(top.status())) GTEST_SKIP() << top.status();
  ASSERT_TRUE(top.ok()) << top.status();
  // Of the 75ms, the filter keeps the two /heavy samples.
  EXPECT_THAT(*top, HasSubstr("tagfocus=endpoint=/heavy"));
  EXPECT_THAT(*top, HasSubstr("accounting for 60ms"));
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
