// The process-wide metrics registry and its Prometheus text rendering.
//
// Naming conventions understood by RenderText (text format 0.0.4):
//  - A registered name may carry a label set: `ringprof_x_total{type="cpu"}`.
//    Every name with the same part before `{` belongs to one metric family;
//    `# HELP` and `# TYPE` are written once, from the first registration.
//  - Histograms are registered as their component series: counters
//    `<base>_bucket{le="..."}` and `<base>_count`, and a gauge `<base>_sum`.
//    When a `<base>_bucket` series exists, the three render as one family of
//    `# TYPE <base> histogram` (see collector/shipping/histogram.h).
#include "collector/base/metrics.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace ringprof {
namespace collector {
namespace {

std::string FamilyName(const std::string& name) {
  return name.substr(0, name.find('{'));
}

bool StripSuffix(const std::string& s, const std::string& suffix,
                 std::string* base) {
  if (s.size() <= suffix.size() ||
      s.compare(s.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  *base = s.substr(0, s.size() - suffix.size());
  return true;
}

// HELP text escaping: backslash and line feed (exposition format 0.0.4).
std::string EscapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

Metrics& Metrics::Get() {
  // Leaked on purpose: counters are referenced from threads and static
  // objects that may outlive any destruction order we could pick.
  static Metrics* const metrics = new Metrics();
  return *metrics;
}

Counter& Metrics::GetCounter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_) {
    if (e.name == name) return e.counter;
  }
  entries_.emplace_back();
  Entry& e = entries_.back();
  e.name = name;
  e.help = help;
  e.is_counter = true;
  return e.counter;
}

Gauge& Metrics::GetGauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Entry& e : entries_) {
    if (e.name == name) return e.gauge;
  }
  entries_.emplace_back();
  Entry& e = entries_.back();
  e.name = name;
  e.help = help;
  e.is_counter = false;
  return e.gauge;
}

std::string Metrics::RenderText() const {
  std::lock_guard<std::mutex> lock(mu_);

  // Histogram bases: families named <base>_bucket.
  std::map<std::string, bool> histogram_bases;
  for (const Entry& e : entries_) {
    std::string base;
    if (StripSuffix(FamilyName(e.name), "_bucket", &base)) {
      histogram_bases[base] = true;
    }
  }
  auto family_of = [&](const Entry& e) {
    const std::string family = FamilyName(e.name);
    std::string base;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (StripSuffix(family, suffix, &base) && histogram_bases.count(base)) {
        return base;
      }
    }
    return family;
  };

  // Families in first-registration order, each with its series.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const Entry*>> families;
  for (const Entry& e : entries_) {
    const std::string family = family_of(e);
    auto& members = families[family];
    if (members.empty()) order.push_back(family);
    members.push_back(&e);
  }

  std::string out;
  for (const std::string& family : order) {
    const std::vector<const Entry*>& members = families[family];
    const char* type = histogram_bases.count(family) ? "histogram"
                       : members.front()->is_counter ? "counter"
                                                     : "gauge";
    out += "# HELP " + family + " " + EscapeHelp(members.front()->help) + "\n";
    out += "# TYPE " + family + " " + type + "\n";
    for (const Entry* e : members) {
      out += e->name;
      out += ' ';
      out += e->is_counter ? std::to_string(e->counter.value())
                           : FormatDouble(e->gauge.value());
      out += '\n';
    }
  }
  return out;
}

}  // namespace collector
}  // namespace ringprof
