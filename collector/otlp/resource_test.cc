#include "collector/otlp/resource.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace {

std::map<std::string, std::string> AsMap(
    const ::opentelemetry::proto::resource::v1::Resource& r) {
  std::map<std::string, std::string> out;
  for (const auto& kv : r.attributes()) {
    EXPECT_EQ(out.count(kv.key()), 0u) << kv.key();
    out[kv.key()] = kv.value().has_int_value()
                        ? "int:" + std::to_string(kv.value().int_value())
                        : kv.value().string_value();
  }
  return out;
}

TEST(BuildResource, NamesFactsBySemanticConventions) {
  ResourceFacts facts;
  facts.series_labels = {{"__name__", "process_cpu"},
                         {"__session_id__", "0123456789abcdef"},
                         {"service_name", "checkout"},
                         {"hostname", "node-1"},
                         {"pod", "checkout-7f"},
                         {"namespace", "shop"},
                         {"region", "eu"},
                         {"pid", "42"}};
  facts.pid = 42;
  facts.executable_name = "server";
  facts.extra = {{"service.version", "1.2.3"},
                 {"service.name", "ignored"},
                 {"container.id", std::string(64, 'a')}};
  const auto m = AsMap(BuildResource(facts));
  EXPECT_EQ(m.at("service.name"), "checkout");  // ours wins over extra
  EXPECT_EQ(m.at("process.pid"), "int:42");
  EXPECT_EQ(m.at("process.executable.name"), "server");
  EXPECT_EQ(m.at("host.name"), "node-1");
  EXPECT_EQ(m.at("k8s.pod.name"), "checkout-7f");
  EXPECT_EQ(m.at("k8s.namespace.name"), "shop");
  EXPECT_EQ(m.at("container.id"), std::string(64, 'a'));
  EXPECT_EQ(m.at("region"), "eu");
  EXPECT_EQ(m.at("service.version"), "1.2.3");
  for (const char* absent :
       {"__name__", "__session_id__", "pid", "service_name", "hostname"}) {
    EXPECT_EQ(m.count(absent), 0u) << absent;
  }
}

TEST(ExecutableName, BasenameOfTheMainMapping) {
  perftools::profiles::Profile p;
  EXPECT_EQ(ExecutableName(p), "");
  p.add_string_table("");
  p.add_string_table("/usr/sbin/redis-server");
  p.add_mapping()->set_filename(1);
  EXPECT_EQ(ExecutableName(p), "redis-server");
  p.mutable_mapping(0)->set_filename(7);  // out of range
  EXPECT_EQ(ExecutableName(p), "");
}

TEST(ParseKeyValueList, SdkSyntaxWithPercentEncoding) {
  absl::StatusOr<Attributes> a = ParseKeyValueList(
      " service.version=1.2 , deployment.environment.name=prod%2Ceu,", "x");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0],
            std::make_pair(std::string("service.version"), std::string("1.2")));
  EXPECT_EQ((*a)[1].second, "prod,eu");
  EXPECT_TRUE(ParseKeyValueList("", "header").ok());
  EXPECT_FALSE(ParseKeyValueList("novalue", "header").ok());
  EXPECT_FALSE(ParseKeyValueList("=x", "header").ok());
  EXPECT_FALSE(ParseKeyValueList("k=%4", "header").ok());
  EXPECT_FALSE(ParseKeyValueList("k=%zz", "header").ok());
  // Errors never quote a value.
  absl::StatusOr<Attributes> bad =
      ParseKeyValueList("Authorization=Bearer%zsecret", "header");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find("secret"), absl::string_view::npos);
}

}  // namespace
}  // namespace otlp
}  // namespace collector
}  // namespace ringprof
