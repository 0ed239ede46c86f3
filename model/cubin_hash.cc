#include "model/cubin_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace warpscope {

std::string CubinHash(std::string_view bytes) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(bytes.data(), bytes.size()));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(kCubinHashDigits);
  for (unsigned char b : canonical.digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool IsCubinHash(std::string_view text) {
  if (text.size() != kCubinHashDigits) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace warpscope
