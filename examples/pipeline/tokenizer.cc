#include "examples/pipeline/tokenizer.h"

#include <cctype>

namespace ringprof {
namespace examples {
namespace {

bool IsTokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         c == '/' || c == '.';
}

// Lower-cases and collapses each run of digits into one '#', so that
// "/api/v1/orders/4711" and "/api/v1/orders/42" count as one template, as
// log-template miners do. Keeps the dictionary bounded by the vocabulary.
std::string NormalizeToken(std::string_view raw) {
  std::string token;
  token.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(raw[i]);
    if (std::isdigit(c)) {
      if (token.empty() || token.back() != '#') token.push_back('#');
    } else {
      token.push_back(static_cast<char>(std::tolower(c)));
    }
  }
  return token;
}

}  // namespace

TokenStats TokenizeBlock(std::string_view text) {
  TokenStats stats;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !IsTokenChar(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && IsTokenChar(text[i])) ++i;
    if (i > start) {
      std::string token = NormalizeToken(text.substr(start, i - start));
      ++stats.counts[std::move(token)];
      ++stats.tokens;
    }
  }
  return stats;
}

void MergeTokenStats(const TokenStats& block, TokenStats* total) {
  total->tokens += block.tokens;
  for (const auto& [token, count] : block.counts) total->counts[token] += count;
}

}  // namespace examples
}  // namespace ringprof
