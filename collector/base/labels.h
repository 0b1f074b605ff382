// Labels: a label set as the collector hands it on (series labels, sample
// labels, a workload's Label records, tags): name/value pairs in a given
// order. The rules about them are collector/pprof/label_rules.h.
//
// Thread-compatible plain data.
#ifndef RINGPROF_COLLECTOR_BASE_LABELS_H_
#define RINGPROF_COLLECTOR_BASE_LABELS_H_

#include <string>
#include <utility>
#include <vector>

namespace ringprof {
namespace collector {

using Labels = std::vector<std::pair<std::string, std::string>>;

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_LABELS_H_
