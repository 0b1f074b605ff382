#include "collector/base/hex.h"

namespace ringprof {
namespace collector {

std::string HexEncode(const uint8_t* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0xf]);
  }
  return hex;
}

std::string HexId(uint64_t value) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(value >> (56 - 8 * i));
  return HexEncode(bytes, sizeof(bytes));
}

}  // namespace collector
}  // namespace ringprof
