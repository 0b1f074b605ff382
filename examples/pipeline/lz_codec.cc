#include "examples/pipeline/lz_codec.h"

#include <algorithm>
#include <cstring>

namespace ringprof {
namespace examples {
namespace {

constexpr int kHashBits = 15;
constexpr int kMaxChain = 24;        // candidates tried per position
constexpr size_t kWindow = 1 << 16;  // farthest match offset
constexpr size_t kMaxMatch = 1 << 12;

uint32_t Hash4(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return (v * 2654435761u) >> (32 - kHashBits);
}

void PutVarint(uint64_t value, std::vector<uint8_t>* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<uint8_t>(value));
}

bool GetVarint(const std::vector<uint8_t>& in, size_t* pos, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *pos < in.size(); shift += 7) {
    const uint8_t byte = in[(*pos)++];
    *value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

void EmitSequence(std::string_view input, size_t literal_start,
                  size_t literal_end, size_t match_length, size_t offset,
                  std::vector<uint8_t>* out) {
  PutVarint(literal_end - literal_start, out);
  out->insert(out->end(), input.begin() + literal_start,
              input.begin() + literal_end);
  PutVarint(match_length, out);
  if (match_length != 0) PutVarint(offset, out);
}

}  // namespace

std::vector<uint8_t> CompressBlock(std::string_view input) {
  std::vector<uint8_t> out;  // grows by push_back: no size guess up front
  PutVarint(input.size(), &out);
  std::vector<int32_t> head(size_t{1} << kHashBits, -1);
  std::vector<int32_t> chain(input.size(), -1);

  size_t literal_start = 0;
  size_t pos = 0;
  while (pos + kMinMatch <= input.size()) {
    const uint32_t h = Hash4(input.data() + pos);
    size_t best_length = 0;
    size_t best_offset = 0;
    int32_t candidate = head[h];
    for (int tries = 0; candidate >= 0 && tries < kMaxChain; ++tries) {
      const size_t offset = pos - static_cast<size_t>(candidate);
      if (offset > kWindow) break;
      const size_t limit = std::min(kMaxMatch, input.size() - pos);
      size_t length = 0;
      while (length < limit &&
             input[candidate + length] == input[pos + length]) {
        ++length;
      }
      if (length > best_length) {
        best_length = length;
        best_offset = offset;
      }
      candidate = chain[candidate];
    }
    chain[pos] = head[h];
    head[h] = static_cast<int32_t>(pos);

    if (best_length < static_cast<size_t>(kMinMatch)) {
      ++pos;
      continue;
    }
    EmitSequence(input, literal_start, pos, best_length, best_offset, &out);
    // Index the positions inside the match so later matches can find them.
    const size_t end = pos + best_length;
    for (++pos; pos < end && pos + kMinMatch <= input.size(); ++pos) {
      const uint32_t hm = Hash4(input.data() + pos);
      chain[pos] = head[hm];
      head[hm] = static_cast<int32_t>(pos);
    }
    pos = end;
    literal_start = end;
  }
  EmitSequence(input, literal_start, input.size(), 0, 0, &out);
  return out;
}

bool DecompressBlock(const std::vector<uint8_t>& compressed, std::string* out) {
  out->clear();
  size_t pos = 0;
  uint64_t size = 0;
  if (!GetVarint(compressed, &pos, &size) || size > (uint64_t{1} << 32)) {
    return false;
  }
  out->reserve(size);
  for (;;) {
    uint64_t literals = 0;
    uint64_t match_length = 0;
    if (!GetVarint(compressed, &pos, &literals) ||
        literals > compressed.size() - pos || out->size() + literals > size) {
      return false;
    }
    out->append(reinterpret_cast<const char*>(compressed.data() + pos),
                literals);
    pos += literals;
    if (!GetVarint(compressed, &pos, &match_length)) return false;
    if (match_length == 0) break;
    uint64_t offset = 0;
    if (match_length < static_cast<uint64_t>(kMinMatch) ||
        !GetVarint(compressed, &pos, &offset) || offset == 0 ||
        offset > out->size() || out->size() + match_length > size) {
      return false;
    }
    // Byte by byte: matches may overlap their own output.
    const size_t from = out->size() - offset;
    for (uint64_t i = 0; i < match_length; ++i)
      out->push_back((*out)[from + i]);
  }
  return pos == compressed.size() && out->size() == size;
}

}  // namespace examples
}  // namespace ringprof
