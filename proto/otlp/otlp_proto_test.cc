// Pins the wire numbering of opentelemetry-proto v1.10.0 where it differs
// from earlier releases: the bytes of hand-set messages are compared with
// the tags the specification gives (field number << 3 | wire type).
#include <string>

#include "gtest/gtest.h"
#include "proto/otlp/profiles_service.pb.h"

namespace {

namespace otlp = opentelemetry::proto::profiles::v1development;

TEST(OtlpProto, SampleFieldsHaveTheirV110Numbers) {
  otlp::Sample sample;
  sample.set_stack_index(3);           // 1: varint
  sample.add_attribute_indices(5);     // 2: packed
  sample.set_link_index(7);            // 3: varint
  sample.add_values(9);                // 4: packed
  sample.add_timestamps_unix_nano(1);  // 5: packed fixed64
  const std::string want =
      std::string("\x08\x03\x12\x01\x05\x18\x07\x22\x01\x09\x2a\x08", 12) +
      std::string("\x01\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(sample.SerializeAsString(), want);
}

TEST(OtlpProto, DictionaryAndProfileFieldNumbers) {
  opentelemetry::proto::collector::profiles::v1development::
      ExportProfilesServiceRequest request;
  request.mutable_dictionary()->add_string_table("x");  // 2 { 5: "x" }
  EXPECT_EQ(request.SerializeAsString(), std::string("\x12\x03\x2a\x01x", 5));

  otlp::Profile profile;
  profile.set_time_unix_nano(1);     // 3: fixed64
  profile.set_period(2);             // 6: varint
  profile.add_attribute_indices(4);  // 11: packed
  EXPECT_EQ(profile.SerializeAsString(),
            std::string("\x19\x01\0\0\0\0\0\0\0\x30\x02\x5a\x01\x04", 14));

  opentelemetry::proto::common::v1::AnyValue value;
  value.set_string_value_strindex(6);  // 8: varint
  EXPECT_EQ(value.SerializeAsString(), std::string("\x40\x06", 2));
}

}  // namespace
