// Lower-case hexadecimal, as build ids are written in pprof mappings and
// /usr/lib/debug/.build-id paths.
//
// Thread-safe, pure.
#ifndef RINGPROF_COLLECTOR_BASE_HEX_H_
#define RINGPROF_COLLECTOR_BASE_HEX_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringprof {
namespace collector {

// Two digits per byte, in order.
std::string HexEncode(const uint8_t* bytes, size_t size);

// `value` as 16 digits, most significant first (a span id).
std::string HexId(uint64_t value);

}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_BASE_HEX_H_
