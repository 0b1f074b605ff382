// A small LZ77 codec (hash-chain match finder, varint-coded sequences), the
// pipeline example's CPU-heavy stage. Not a format anyone should store: it
// exists to be a realistic, recognisable hot path (CompressBlock).
//
// Compressed layout: varint(uncompressed size), then sequences of
//   varint(literal_length) literal bytes varint(match_length) [varint(offset)]
// where match_length 0 ends the block (no offset follows), otherwise
// match_length >= kMinMatch and 1 <= offset <= bytes produced so far.
//
// Thread-compatible: every call allocates its own match-finder tables.
#ifndef RINGPROF_EXAMPLES_PIPELINE_LZ_CODEC_H_
#define RINGPROF_EXAMPLES_PIPELINE_LZ_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringprof {
namespace examples {

inline constexpr int kMinMatch = 4;

std::vector<uint8_t> CompressBlock(std::string_view input);

// Returns false on malformed input (never reads or writes out of bounds).
bool DecompressBlock(const std::vector<uint8_t>& compressed, std::string* out);

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_PIPELINE_LZ_CODEC_H_
