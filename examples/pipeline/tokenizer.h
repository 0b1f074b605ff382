// TokenizeBlock: splits log text into tokens (runs of letters, digits and
// '_' '-' '/' '.'), normalises them (lower case, each digit run becomes '#')
// and counts them, the way a log-template indexing stage would.
// Thread-compatible; allocates a dictionary per call, like real code does.
#ifndef RINGPROF_EXAMPLES_PIPELINE_TOKENIZER_H_
#define RINGPROF_EXAMPLES_PIPELINE_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ringprof {
namespace examples {

struct TokenStats {
  uint64_t tokens = 0;
  std::unordered_map<std::string, uint64_t> counts;
};

TokenStats TokenizeBlock(std::string_view text);

// Adds `block`'s counts into `total`.
void MergeTokenStats(const TokenStats& block, TokenStats* total);

}  // namespace examples
}  // namespace ringprof

#endif  // RINGPROF_EXAMPLES_PIPELINE_TOKENIZER_H_
