// Human-facing renderings of pprof profiles: a self-contained HTML flame
// graph (no network needed to open it; click to zoom, search, hover shows
// self/total share), a red/blue differential flame graph, and a text top
// table. Implemented in collector/render/flamegraph.cc; collector/SYMBOLS.md
// describes what the pages show.
//
// Pure functions of their inputs; thread-safe. Stacks are read the pprof
// way: sample.location_id[0] is the leaf, and within a location line[0] is
// the innermost inlined function, so every inlined line becomes a frame.
// A location without lines is named "<mapping basename>+0x<file offset>".
// `sample_index` out of range selects the last value, as pprof does.
#ifndef RINGPROF_COLLECTOR_RENDER_FLAMEGRAPH_H_
#define RINGPROF_COLLECTOR_RENDER_FLAMEGRAPH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// One frame of the call tree the flame graphs draw (exposed for tests and
// tools). Trees are vectors in pre-order: [0] is the root "all", children
// follow their parent sorted by function name. Frames whose total is below
// 0.01% of the root's are pruned (their value still counts in every
// ancestor's total, so the parent shows a gap), and the threshold rises
// further if needed to keep at most kMaxFlameGraphNodes frames.
struct FlameGraphNode {
  int parent = -1;  // index of the parent node; -1 for the root
  int depth = 0;    // 0 for the root
  std::string function;
  int64_t total = 0;  // value of the samples whose stack passes through here
  int64_t self = 0;   // value of the samples whose stack ends here
  // Diff trees only: the same call path in the base profile (0 when it is
  // absent there) and the node's colour, "#rrggbb": red when the frame's
  // share of its profile's total grew from base to target, blue when it
  // shrank, grey when unchanged, more saturated the larger the change.
  int64_t base_total = 0;
  int64_t base_self = 0;
  std::string color;
};

inline constexpr int kMaxFlameGraphNodes = 50000;

std::vector<FlameGraphNode> BuildFlameGraphTree(
    const perftools::profiles::Profile& profile, int sample_index);

// The tree of `target`, each node annotated with its base values and colour.
// Frames present only in `base` do not appear (they have no width).
std::vector<FlameGraphNode> BuildDiffFlameGraphTree(
    const perftools::profiles::Profile& base,
    const perftools::profiles::Profile& target, int sample_index);

// `sample_index` selects the value (e.g. 1 = alloc_space in a memory
// profile); `title` heads the page.
std::string RenderFlameGraphHtml(const perftools::profiles::Profile& profile,
                                 int sample_index, const std::string& title);

// Frames grown from `base` to `target` in red, shrunk in blue (values are
// normalised to each profile's total).
std::string RenderDiffFlameGraphHtml(const perftools::profiles::Profile& base,
                                     const perftools::profiles::Profile& target,
                                     int sample_index,
                                     const std::string& title);

// `limit` rows of flat/cum per function, like `go tool pprof -top`.
std::string RenderTopTable(const perftools::profiles::Profile& profile,
                           int sample_index, int limit);

// Both of the above for one value of one profile, from one pass over its
// samples (what `ringprof run` writes for each merged profile), and the
// glance `ringprof run` prints: the value's total and its `hottest`
// functions by flat value (those above zero), each as "flat%  name" with
// the name shortened (short_name.h), e.g. " 60.3%  std::vector<…>::push_back".
struct FlameGraphAndTop {
  std::string html;
  std::string top_table;
  std::string total;  // e.g. "1.40s", "988MB"
  std::vector<std::string> hottest;
};
FlameGraphAndTop RenderFlameGraphAndTopTable(
    const perftools::profiles::Profile& profile, int sample_index,
    const std::string& title, int limit, int hottest = 0);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_RENDER_FLAMEGRAPH_H_
