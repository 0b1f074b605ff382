// PprofFixture: a small hand-made pprof (one mapping /bin/app with build id
// "abcd", locations 1 = main and 2 = hot) to which tests add samples.
//
// Thread-compatible. Test only.
#ifndef RINGPROF_COLLECTOR_OTLP_TESTING_PPROF_FIXTURE_H_
#define RINGPROF_COLLECTOR_OTLP_TESTING_PPROF_FIXTURE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace otlp {
namespace testing {

// A pprof with the given sample types and one mapping (/bin/app, build id
// "abcd"), functions main <- hot, and samples added by AddSample.
class PprofFixture {
 public:
  PprofFixture(std::vector<std::pair<std::string, std::string>> types,
               std::pair<std::string, std::string> period_type,
               int64_t period) {
    Str("");
    for (const auto& [type, unit] : types) {
      auto* t = p.add_sample_type();
      t->set_type(Str(type));
      t->set_unit(Str(unit));
    }
    p.mutable_period_type()->set_type(Str(period_type.first));
    p.mutable_period_type()->set_unit(Str(period_type.second));
    p.set_period(period);
    p.set_time_nanos(1'700'000'000'000'000'000);
    p.set_duration_nanos(10'000'000'000);
    auto* m = p.add_mapping();
    m->set_id(1);
    m->set_memory_start(0x1000);
    m->set_memory_limit(0x9000);
    m->set_file_offset(0x100);
    m->set_filename(Str("/bin/app"));
    m->set_build_id(Str("abcd"));
    for (const char* name : {"main", "hot"}) {
      auto* f = p.add_function();
      f->set_id(p.function_size());
      f->set_name(Str(name));
      f->set_system_name(Str(name));
      f->set_filename(Str("app.cc"));
      auto* l = p.add_location();
      l->set_id(p.location_size());
      l->set_mapping_id(1);
      l->set_address(0x1000 + 16 * p.location_size());
      auto* line = l->add_line();
      line->set_function_id(f->id());
      line->set_line(10 * p.location_size());
    }
  }

  int64_t Str(const std::string& s) {
    for (int i = 0; i < p.string_table_size(); ++i) {
      if (p.string_table(i) == s) return i;
    }
    p.add_string_table(s);
    return p.string_table_size() - 1;
  }

  perftools::profiles::Sample* AddSample(
      std::vector<uint64_t> locations, std::vector<int64_t> values,
      std::vector<std::pair<std::string, std::string>> labels = {}) {
    auto* s = p.add_sample();
    for (uint64_t l : locations) s->add_location_id(l);
    for (int64_t v : values) s->add_value(v);
    for (const auto& [k, v] : labels) {
      auto* label = s->add_label();
      label->set_key(Str(k));
      label->set_str(Str(v));
    }
    return s;
  }

  perftools::profiles::Profile p;
};

}  // namespace testing
}  // namespace otlp
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_OTLP_TESTING_PPROF_FIXTURE_H_
