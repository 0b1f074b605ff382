// Proves the offline protoc pipeline: pprof and push messages round-trip.
#include <string>

#include "gtest/gtest.h"
#include "proto/profile.pb.h"
#include "proto/push.pb.h"

namespace {

TEST(ProfileProto, RoundTripsThroughWireFormat) {
  perftools::profiles::Profile profile;
  profile.add_string_table("");
  profile.add_string_table("cpu");
  profile.set_period(10'000'000);
  std::string bytes;
  ASSERT_TRUE(profile.SerializeToString(&bytes));

  perftools::profiles::Profile parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.string_table(1), "cpu");
  EXPECT_EQ(parsed.period(), 10'000'000);
}

TEST(PushProto, CarriesLabelsAndRawProfile) {
  push::v1::PushRequest request;
  auto* series = request.add_series();
  auto* label = series->add_labels();
  label->set_name("__name__");
  label->set_value("process_cpu");
  series->add_samples()->set_raw_profile("pprof-bytes");
  std::string bytes;
  ASSERT_TRUE(request.SerializeToString(&bytes));

  push::v1::PushRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.series_size(), 1);
  EXPECT_EQ(parsed.series(0).labels(0).value(), "process_cpu");
  EXPECT_EQ(parsed.series(0).samples(0).raw_profile(), "pprof-bytes");
}

}  // namespace
