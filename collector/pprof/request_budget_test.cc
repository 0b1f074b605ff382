#include "collector/pprof/request_budget.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "collector/pprof/label_rules.h"
#include "collector/pprof/pprof_builder.h"
#include "collector/pprof/pprof_validate.h"
#include "collector/pprof/profile_kinds.h"
#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace {

using perftools::profiles::Profile;

// A memory profile of `stacks` distinct 20-frame stacks with long names.
Profile BigProfile(int stacks) {
  ProfileSpec spec = SpecOf(ProfileKind::kMemory);
  spec.time_nanos = 1'700'000'000'000'000'000;
  PprofBuilder b(spec);
  MappingSpec m;
  m.module.path = "/bin/app";
  const auto mapping = b.InternMapping(m);
  for (int s = 0; s < stacks; ++s) {
    std::vector<PprofBuilder::LocationId> stack;
    for (int f = 0; f < 20; ++f) {
      LineSpec line{
          absl::StrCat("ns::Class<", s, ">::method_", f, std::string(60, 'x')),
          "src/file.cc", f};
      stack.push_back(b.InternLocation(mapping, 0x1000 + s * 64 + f,
                                       absl::MakeConstSpan(&line, 1)));
    }
    b.AddSample(stack, {1 + s, 100 * (1 + s)});
  }
  return b.Build();
}

int64_t Total(const Profile& p, int index) {
  int64_t sum = 0;
  for (const auto& s : p.sample()) sum += s.value(index);
  return sum;
}

TEST(RequestBudgetTest, CostCountsLabelsAndProfile) {
  EXPECT_EQ(RequestCost({{"__name__", "memory"}, {"a", "bc"}}, 100),
            100u + 8 + 6 + 1 + 2);
}

TEST(RequestBudgetTest, FitsAProfileKeepingTotalsAndTheLargestStacks) {
  const Profile before = BigProfile(3000);
  ASSERT_GT(before.ByteSizeLong(), 2u << 20);
  absl::StatusOr<Profile> fitted = FitProfile(before, 1 << 20);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_LE(fitted->SerializeAsString().size(), 1u << 20);
  const Profile& after = *fitted;
  EXPECT_TRUE(ValidatePprof(after).ok()) << ValidatePprof(after);
  EXPECT_LT(after.sample_size(), before.sample_size());
  EXPECT_EQ(Total(after, 0), Total(before, 0));
  EXPECT_EQ(Total(after, 1), Total(before, 1));
  EXPECT_EQ(after.time_nanos(), before.time_nanos());
  EXPECT_EQ(after.string_table(after.sample_type(1).type()), "alloc_space");
  // The largest stack is still there, whole.
  bool has_largest = false;
  for (const auto& s : after.sample()) {
    has_largest |= s.value(1) == 300000 && s.location_id_size() == 20;
  }
  EXPECT_TRUE(has_largest);
  bool has_trimmed = false;
  for (const auto& f : after.function()) {
    has_trimmed |= after.string_table(f.name()) == "[trimmed]";
  }
  EXPECT_TRUE(has_trimmed);
}

TEST(RequestBudgetTest, TrimmingKeepsTheLabelsAndSpanIdsOfKeptSamples) {
  ProfileSpec spec = SpecOf(ProfileKind::kCpu, 10'000'000);
  PprofBuilder b(spec);
  for (int s = 0; s < 3000; ++s) {
    std::vector<PprofBuilder::LocationId> stack;
    for (int f = 0; f < 20; ++f) {
      LineSpec line{absl::StrCat("fn_", s, "_", f, std::string(60, 'x')),
                    "src/file.cc", f};
      stack.push_back(b.InternLocation(0, 0x1000 + s * 64 + f,
                                       absl::MakeConstSpan(&line, 1)));
    }
    const auto labels =
        b.InternLabels({{"request", absl::StrCat("r", s % 7)},
                        {std::string(kSpanIdLabel),
                         absl::StrCat(absl::Hex(s, absl::kZeroPad16))}});
    b.AddSample(stack, {int64_t{1000} * (1 + s)}, labels);
  }
  const Profile big = b.Build();
  ASSERT_GT(big.ByteSizeLong(), 2u << 20);
  absl::StatusOr<Profile> fitted = FitProfile(big, 1 << 20);
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  const Profile& after = *fitted;
  EXPECT_TRUE(ValidatePprof(after).ok()) << ValidatePprof(after);
  int labelled = 0;
  for (const auto& s : after.sample()) {
    std::string request, span;
    for (const auto& l : s.label()) {
      if (after.string_table(l.key()) == "request") {
        request = after.string_table(l.str());
      }
      if (after.string_table(l.key()) == kSpanIdLabel) {
        span = after.string_table(l.str());
      }
    }
    if (s.location_id_size() != 20) continue;  // "[trimmed]"
    // Each kept stack is the one its labels were given to.
    const int64_t index = s.value(0) / 1000 - 1;
    EXPECT_EQ(request, absl::StrCat("r", index % 7));
    EXPECT_EQ(span, absl::StrCat(absl::Hex(index, absl::kZeroPad16)));
    ++labelled;
  }
  EXPECT_GT(labelled, 100);
  EXPECT_LT(after.sample_size(), 3000);
}

TEST(RequestBudgetTest, SmallProfileUnchangedAndBrokenOnesRefused) {
  const Profile small = BigProfile(3);
  EXPECT_EQ(FitProfile(small, 1 << 20)->SerializeAsString(),
            small.SerializeAsString());
  EXPECT_EQ(FitProfile(small, 8).status().code(),
            absl::StatusCode::kResourceExhausted);
  Profile untyped = small;
  untyped.clear_sample_type();
  EXPECT_EQ(FitProfile(untyped, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  Profile dangling = small;
  dangling.mutable_sample(0)->add_location_id(9999);
  EXPECT_EQ(FitProfile(dangling, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collector
}  // namespace ringprof
