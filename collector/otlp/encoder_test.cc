#include "collector/otlp/encoder.h"

#include <map>
#include <string>

#include "collector/otlp/testing/pprof_fixture.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

namespace pb = ::opentelemetry::proto::profiles::v1development;
using ::opentelemetry::proto::resource::v1::Resource;
using ::perftools::profiles::Profile;
using testing::PprofFixture;

Resource ServiceResource() {
  Resource r;
  auto* kv = r.add_attributes();
  kv->set_key("service.name");
  kv->mutable_value()->set_string_value("app");
  return r;
}

const std::string& S(const ExportRequest& r, int32_t index) {
  return r.dictionary().string_table(index);
}

std::string FunctionOf(const ExportRequest& r, int32_t location_index) {
  const auto& loc = r.dictionary().location_table(location_index);
  EXPECT_EQ(loc.lines_size(), 1);
  return S(r, r.dictionary()
                  .function_table(loc.lines(0).function_index())
                  .name_strindex());
}

TEST(EncodeProfile, CpuProfileKeepsTypesStacksTagsAndSpans) {
  PprofFixture f({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 10'000'000);
  f.AddSample({2, 1}, {30'000'000},
              {{"endpoint", "/checkout"}, {"span_id", "00000000000000ff"}});
  f.AddSample({1}, {10'000'000});
  absl::StatusOr<ExportRequest> r = EncodeProfile(
      f.p, ServiceResource(), "0123456789abcdef", ProfileKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();

  ASSERT_EQ(r->resource_profiles_size(), 1);
  EXPECT_EQ(r->resource_profiles(0).resource().attributes(0).key(),
            "service.name");
  const pb::ScopeProfiles& scope = r->resource_profiles(0).scope_profiles(0);
  EXPECT_EQ(scope.scope().name(), "ringprof");
  ASSERT_EQ(scope.profiles_size(), 1);
  const pb::Profile& prof = scope.profiles(0);
  // OpenTelemetry's CPU convention, which Pyroscope stores as process_cpu.
  EXPECT_EQ(S(*r, prof.sample_type().type_strindex()), "samples");
  EXPECT_EQ(S(*r, prof.sample_type().unit_strindex()), "count");
  EXPECT_EQ(S(*r, prof.period_type().type_strindex()), "cpu");
  EXPECT_EQ(S(*r, prof.period_type().unit_strindex()), "nanoseconds");
  EXPECT_EQ(prof.period(), 10'000'000);
  EXPECT_EQ(prof.time_unix_nano(), 1'700'000'000'000'000'000u);
  EXPECT_EQ(prof.duration_nano(), 10'000'000'000u);
  EXPECT_EQ(prof.profile_id().size(), 16u);

  ASSERT_EQ(prof.samples_size(), 2);
  const pb::Sample& hot = prof.samples(0);
  EXPECT_EQ(hot.values(0), 3);  // periods: 30 ms of CPU time
  EXPECT_EQ(prof.samples(1).values(0), 1);
  const auto& stack = r->dictionary().stack_table(hot.stack_index());
  ASSERT_EQ(stack.location_indices_size(), 2);
  EXPECT_EQ(FunctionOf(*r, stack.location_indices(0)), "hot");  // leaf first
  EXPECT_EQ(FunctionOf(*r, stack.location_indices(1)), "main");
  // endpoint, then the resource's service.name; span_id went to the link.
  ASSERT_EQ(hot.attribute_indices_size(), 2);
  const auto& tag = r->dictionary().attribute_table(hot.attribute_indices(0));
  EXPECT_EQ(S(*r, tag.key_strindex()), "endpoint");
  EXPECT_EQ(tag.value().string_value(), "/checkout");
  const auto& service =
      r->dictionary().attribute_table(hot.attribute_indices(1));
  EXPECT_EQ(S(*r, service.key_strindex()), "service.name");
  EXPECT_EQ(service.value().string_value(), "app");
  ASSERT_NE(hot.link_index(), 0);
  EXPECT_EQ(r->dictionary().link_table(hot.link_index()).span_id(),
            std::string("\0\0\0\0\0\0\0\xff", 8));
  EXPECT_EQ(prof.samples(1).link_index(), 0);
  ASSERT_EQ(prof.samples(1).attribute_indices_size(), 1);  // service.name
  EXPECT_EQ(prof.samples(1).attribute_indices(0), hot.attribute_indices(1));
}

TEST(EncodeProfile, MappingCarriesBuildIdAndDictionaryStartsWithZeros) {
  PprofFixture f({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 1);
  f.AddSample({1}, {5});
  absl::StatusOr<ExportRequest> r =
      EncodeProfile(f.p, Resource(), "", ProfileKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  const pb::ProfilesDictionary& d = r->dictionary();
  EXPECT_EQ(d.string_table(0), "");
  for (int size : {d.mapping_table_size(), d.location_table_size(),
                   d.function_table_size(), d.link_table_size(),
                   d.attribute_table_size(), d.stack_table_size()}) {
    EXPECT_GE(size, 1);
  }
  EXPECT_EQ(d.mapping_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.stack_table(0).location_indices_size(), 0);
  ASSERT_EQ(d.mapping_table_size(), 2);
  const pb::Mapping& m = d.mapping_table(1);
  EXPECT_EQ(S(*r, m.filename_strindex()), "/bin/app");
  EXPECT_EQ(m.memory_start(), 0x1000u);
  EXPECT_EQ(m.memory_limit(), 0x9000u);
  EXPECT_EQ(m.file_offset(), 0x100u);
  ASSERT_EQ(m.attribute_indices_size(), 1);
  const auto& build_id = d.attribute_table(m.attribute_indices(0));
  EXPECT_EQ(S(*r, build_id.key_strindex()), "process.executable.build_id.gnu");
  EXPECT_EQ(build_id.value().string_value(), "abcd");
  EXPECT_EQ(d.location_table(1).mapping_index(), 1);
  EXPECT_EQ(d.location_table(1).address(), 0x1010u);
}

TEST(EncodeProfile, MemoryProfileBecomesOneProfilePerTypeWithSameTotals) {
  PprofFixture f({{"alloc_objects", "count"},
                  {"alloc_space", "bytes"},
                  {"inuse_objects", "count"},
                  {"inuse_space", "bytes"}},
                 {"space", "bytes"}, 0);
  f.AddSample({2, 1}, {3, 3000, 0, 0});
  f.AddSample({1}, {1, 512, 1, 512});
  absl::StatusOr<ExportRequest> r =
      EncodeProfile(f.p, Resource(), "id", ProfileKind::kMemory);
  ASSERT_TRUE(r.ok()) << r.status();
  const pb::ScopeProfiles& scope = r->resource_profiles(0).scope_profiles(0);
  ASSERT_EQ(scope.profiles_size(), 4);
  std::map<std::string, int64_t> totals;
  std::map<std::string, int> samples;
  for (const pb::Profile& prof : scope.profiles()) {
    const std::string type = S(*r, prof.sample_type().type_strindex());
    // Named "memory" by Pyroscope, as through Push.
    EXPECT_EQ(S(*r, prof.period_type().type_strindex()), "memory");
    EXPECT_EQ(S(*r, prof.period_type().unit_strindex()), "bytes");
    EXPECT_EQ(prof.period(), 1);  // the pprof's 0: values already scaled
    for (const pb::Sample& s : prof.samples()) {
      ASSERT_EQ(s.values_size(), 1);
      totals[type] += s.values(0);
      ++samples[type];
    }
  }
  EXPECT_EQ(totals["alloc_objects"], 4);
  EXPECT_EQ(totals["alloc_space"], 3512);
  EXPECT_EQ(totals["inuse_objects"], 1);
  EXPECT_EQ(totals["inuse_space"], 512);
  EXPECT_EQ(samples["inuse_space"], 1);  // the zero-valued sample is left out
  // Distinct ids per profile of one request.
  EXPECT_NE(scope.profiles(0).profile_id(), scope.profiles(1).profile_id());
}

// A value that is not a whole number of sampling periods (CPU time a
// dropped sample left to the next, a thread that was not sampled) makes
// the period the largest that divides every value: the totals stay exact.
TEST(EncodeProfile, CpuPeriodDividesEveryValue) {
  PprofFixture f({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 1'000);
  f.AddSample({1}, {2'500});
  f.AddSample({2}, {1'000});
  f.AddSample({2, 1}, {0});
  absl::StatusOr<ExportRequest> r =
      EncodeProfile(f.p, Resource(), "", ProfileKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  const pb::Profile& prof =
      r->resource_profiles(0).scope_profiles(0).profiles(0);
  EXPECT_EQ(S(*r, prof.sample_type().type_strindex()), "samples");
  EXPECT_EQ(prof.period(), 500);
  ASSERT_EQ(prof.samples_size(), 2);
  EXPECT_EQ(prof.samples(0).values(0), 5);
  EXPECT_EQ(prof.samples(1).values(0), 2);
}

// Without a period there is no convention to follow: the pprof's types.
TEST(EncodeProfile, CpuProfileWithoutPeriodKeepsItsTypes) {
  PprofFixture f({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 0);
  f.AddSample({1}, {2'500});
  absl::StatusOr<ExportRequest> r =
      EncodeProfile(f.p, Resource(), "", ProfileKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  const pb::Profile& prof =
      r->resource_profiles(0).scope_profiles(0).profiles(0);
  EXPECT_EQ(S(*r, prof.sample_type().type_strindex()), "cpu");
  EXPECT_EQ(prof.period(), 1);
  EXPECT_EQ(prof.samples(0).values(0), 2'500);
}

TEST(EncodeProfile, NumericLabelsAndTraceIdsAndBadSpanIds) {
  PprofFixture f({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 1);
  auto* s = f.AddSample({1}, {1},
                        {{"trace_id", "0102030405060708090a0b0c0d0e0f10"},
                         {"span_id", "0000000000000001"}});
  auto* num = s->add_label();
  num->set_key(f.Str("bytes"));
  num->set_num(42);
  num->set_num_unit(f.Str("bytes"));
  f.AddSample({2}, {1}, {{"span_id", "not-hex"}});
  absl::StatusOr<ExportRequest> r =
      EncodeProfile(f.p, Resource(), "", ProfileKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  const pb::Profile& prof =
      r->resource_profiles(0).scope_profiles(0).profiles(0);
  const pb::Link& link =
      r->dictionary().link_table(prof.samples(0).link_index());
  EXPECT_EQ(link.trace_id().size(), 16u);
  EXPECT_EQ(link.trace_id()[15], '\x10');
  ASSERT_EQ(prof.samples(0).attribute_indices_size(), 1);
  const auto& a =
      r->dictionary().attribute_table(prof.samples(0).attribute_indices(0));
  EXPECT_EQ(a.value().int_value(), 42);
  EXPECT_EQ(S(*r, a.unit_strindex()), "bytes");
  // A span id that is not 16 hex digits stays a plain attribute.
  EXPECT_EQ(prof.samples(1).link_index(), 0);
  ASSERT_EQ(prof.samples(1).attribute_indices_size(), 1);
}

// Pyroscope names an OTLP profile by its period type: the lock-contention
// and blocking profiles, which share Go's (contentions/count), must not.
TEST(EncodeProfile, MutexAndBlockProfilesGetTheirOwnPeriodTypes) {
  std::map<std::string, std::string> period_types;
  for (const std::string name : {"mutex", "block"}) {
    PprofFixture f({{"contentions", "count"}, {"delay", "nanoseconds"}},
                   {"contentions", "count"}, 1);
    f.AddSample({1}, {3, 3'000'000});
    absl::StatusOr<ExportRequest> r =
        EncodeProfile(f.p, Resource(), "", FindProfileKind(name)->kind);
    ASSERT_TRUE(r.ok()) << r.status();
    const pb::ScopeProfiles& scope = r->resource_profiles(0).scope_profiles(0);
    ASSERT_EQ(scope.profiles_size(), 2);
    for (const pb::Profile& prof : scope.profiles()) {
      EXPECT_EQ(S(*r, prof.period_type().type_strindex()), name);
      EXPECT_EQ(S(*r, prof.period_type().unit_strindex()), "count");
    }
    EXPECT_EQ(S(*r, scope.profiles(1).sample_type().type_strindex()), "delay");
  }
}

TEST(EncodeProfile, RefusesUndefinedReferences) {
  PprofFixture f({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 1);
  f.AddSample({7}, {1});
  EXPECT_TRUE(absl::IsInvalidArgument(
      EncodeProfile(f.p, Resource(), "", ProfileKind::kCpu).status()));
  PprofFixture g({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, 1);
  g.p.mutable_function(0)->set_name(999);
  EXPECT_TRUE(absl::IsInvalidArgument(
      EncodeProfile(g.p, Resource(), "", ProfileKind::kCpu).status()));
}

}  // namespace
}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
