// Writes OTLP requests the encoder makes from profiles of every kind the
// collector produces (CPU with tags and spans, memory's four types) into
// DIR/NAME.pb, and DIR/NAME.want with what the pprof held: per sample type
// "type/unit=total", the sample count, the link count and the attribute
// keys, in the line format of decode/main.go.
//
//   write_requests DIR
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collector/otlp/encoder.h"
#include "collector/otlp/testing/pprof_fixture.h"

namespace {

using ringprof::collector::otlp::EncodeProfile;
using ringprof::collector::otlp::testing::PprofFixture;

std::string Expectation(const perftools::profiles::Profile& p) {
  std::map<std::string, int64_t> totals;
  std::set<std::string> keys;
  int samples = 0, links = 0;
  for (const auto& s : p.sample()) {
    bool span = false;
    std::set<std::string> sample_keys;
    for (const auto& l : s.label()) {
      const std::string& k = p.string_table(l.key());
      if (k == "span_id") span = true;
      if (k != "span_id" && k != "trace_id") sample_keys.insert(k);
    }
    for (int i = 0; i < s.value_size(); ++i) {
      if (s.value(i) == 0) continue;
      const auto& t = p.sample_type(i);
      totals[absl::StrCat(p.string_table(t.type()), "/",
                          p.string_table(t.unit()))] += s.value(i);
      ++samples;
      links += span ? 1 : 0;
      keys.insert(sample_keys.begin(), sample_keys.end());
      keys.insert("service.name");  // the resource's, on every sample
    }
  }
  std::string line;
  for (const auto& [k, v] : totals) absl::StrAppend(&line, k, "=", v, " ");
  absl::StrAppend(&line, "samples=", samples, " links=", links,
                  " attrs=", absl::StrJoin(keys, ","));
  return line;
}

bool Write(const std::string& path, const std::string& data) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  return std::fclose(f) == 0 && ok;
}

bool Emit(const std::string& dir, ringprof::collector::ProfileKind kind,
          const perftools::profiles::Profile& p) {
  const std::string name = ringprof::collector::KindName(kind);
  ::opentelemetry::proto::resource::v1::Resource resource;
  auto* kv = resource.add_attributes();
  kv->set_key("service.name");
  kv->mutable_value()->set_string_value("write_requests");
  kv = resource.add_attributes();
  kv->set_key("process.pid");
  kv->mutable_value()->set_int_value(1234);
  auto request = EncodeProfile(p, resource, "0123456789abcdef", kind);
  if (!request.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(),
                 std::string(request.status().message()).c_str());
    return false;
  }
  return Write(absl::StrCat(dir, "/", name, ".pb"),
               request->SerializeAsString()) &&
         Write(absl::StrCat(dir, "/", name, ".want"), Expectation(p));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_requests DIR\n");
    return 2;
  }
  PprofFixture cpu({{"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"},
                   10'000'000);
  cpu.AddSample({2, 1}, {30'000'000},
                {{"endpoint", "/checkout"}, {"span_id", "00000000000000ff"}});
  cpu.AddSample({2, 1}, {20'000'000},
                {{"endpoint", "/cart"}, {"span_id", "0000000000000100"}});
  cpu.AddSample({1}, {10'000'000}, {{"ringprof_cpu_source", "timer"}});
  PprofFixture memory({{"alloc_objects", "count"},
                       {"alloc_space", "bytes"},
                       {"inuse_objects", "count"},
                       {"inuse_space", "bytes"}},
                      {"space", "bytes"}, 0);
  memory.AddSample({2, 1}, {3, 3000, 0, 0}, {{"endpoint", "/checkout"}});
  memory.AddSample({1}, {1, 512, 1, 512});
  using ringprof::collector::ProfileKind;
  return Emit(argv[1], ProfileKind::kCpu, cpu.p) &&
                 Emit(argv[1], ProfileKind::kMemory, memory.p)
             ? 0
             : 1;
}
