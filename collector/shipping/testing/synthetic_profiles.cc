#include "collector/shipping/testing/synthetic_profiles.h"

#include <time.h>

#include <cstdio>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace testing {
namespace {

class StringTable {
 public:
  explicit StringTable(perftools::profiles::Profile* p) : p_(p) { Id(""); }
  int64_t Id(const std::string& s) {
    auto [it, inserted] = ids_.emplace(s, p_->string_table_size());
    if (inserted) p_->add_string_table(s);
    return it->second;
  }

 private:
  perftools::profiles::Profile* p_;
  std::map<std::string, int64_t> ids_;
};

}  // namespace

WindowProfile MakeWindowProfile(ProfileKind kind, const std::string& service,
                                uint32_t pid, int64_t from_unix_ns,
                                int64_t until_unix_ns,
                                const SyntheticShape& shape) {
  perftools::profiles::Profile p;
  StringTable strings(&p);
  const bool cpu = kind == ProfileKind::kCpu;
  auto add_type = [&](perftools::profiles::ValueType* vt, const char* type,
                      const char* unit) {
    vt->set_type(strings.Id(type));
    vt->set_unit(strings.Id(unit));
  };
  if (cpu) {
    add_type(p.add_sample_type(), "cpu", "nanoseconds");
    add_type(p.mutable_period_type(), "cpu", "nanoseconds");
    p.set_period(10000000);
  } else {
    add_type(p.add_sample_type(), "alloc_objects", "count");
    add_type(p.add_sample_type(), "alloc_space", "bytes");
    add_type(p.mutable_period_type(), "space", "bytes");
    p.set_period(512 * 1024);
  }
  p.set_time_nanos(from_unix_ns);
  p.set_duration_nanos(until_unix_ns - from_unix_ns);

  auto* mapping = p.add_mapping();
  mapping->set_id(1);
  mapping->set_memory_start(0x400000);
  mapping->set_memory_limit(0x800000);
  mapping->set_filename(strings.Id("/usr/bin/" + service));
  mapping->set_has_functions(true);
  for (int f = 1; f <= shape.functions; ++f) {
    auto* fn = p.add_function();
    fn->set_id(f);
    fn->set_name(strings.Id(absl::StrCat(
        "workload::Component", f % 7, "::Function", f, "(int, char const*)")));
    fn->set_system_name(fn->name());
    fn->set_filename(strings.Id(absl::StrCat("src/component", f % 7, ".cc")));
    auto* loc = p.add_location();
    loc->set_id(f);
    loc->set_mapping_id(1);
    loc->set_address(0x400000 + 0x40 * f);
    auto* line = loc->add_line();
    line->set_function_id(f);
    line->set_line(10 + f);
  }
  std::mt19937_64 rng(shape.seed * 7919 + pid);
  std::uniform_int_distribution<int> pick(1, shape.functions);
  for (int s = 0; s < shape.distinct_stacks; ++s) {
    auto* sample = p.add_sample();
    for (int d = 0; d < shape.stack_depth; ++d)
      sample->add_location_id(pick(rng));
    const int64_t ticks = 1 + static_cast<int64_t>(rng() % 50);
    if (cpu) {
      sample->add_value(ticks * 10000000);
    } else {
      sample->add_value(ticks);
      sample->add_value(ticks * 512 * 1024);
    }
  }

  WindowProfile w;
  w.kind = kind;
  w.labels = {{"service_name", service}};
  char session[17];
  std::snprintf(session, sizeof(session), "%016x", pid);
  w.session_id = session;
  w.from_unix_ns = from_unix_ns;
  w.until_unix_ns = until_unix_ns;
  w.profile =
      std::make_shared<const perftools::profiles::Profile>(std::move(p));
  w.pid = pid;
  w.service_name = service;
  return w;
}

int64_t AlignedWindowStartNs(int windows_ago) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const int64_t aligned_s = ts.tv_sec - ts.tv_sec % 10;
  return (aligned_s - 10 * int64_t{windows_ago}) * 1000000000;
}

}  // namespace testing
}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
