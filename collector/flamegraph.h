// Human-facing renderings of pprof profiles: a self-contained HTML flame
// graph (no network needed to open it; click to zoom, search, hover shows
// self/total share), a red/blue differential flame graph, and a text top
// table. Implemented in collector/flamegraph.cc.
#ifndef RINGPROF_COLLECTOR_FLAMEGRAPH_H_
#define RINGPROF_COLLECTOR_FLAMEGRAPH_H_

#include <string>

#include "proto/profile.pb.h"

namespace ringprof {
namespace collector {

// `sample_index` selects the value (e.g. 1 = alloc_space in a memory
// profile); `title` heads the page.
std::string RenderFlameGraphHtml(const perftools::profiles::Profile& profile,
                                 int sample_index, const std::string& title);

// Frames grown from `base` to `target` in red, shrunk in blue (values are
// normalised to each profile's total).
std::string RenderDiffFlameGraphHtml(
    const perftools::profiles::Profile& base,
    const perftools::profiles::Profile& target, int sample_index,
    const std::string& title);

// `limit` rows of flat/cum per function, like `go tool pprof -top`.
std::string RenderTopTable(const perftools::profiles::Profile& profile,
                           int sample_index, int limit);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_FLAMEGRAPH_H_
