#include "storage/clickhouse/sip_hash.h"

#include <cstring>

namespace warpscope::clickhouse {
namespace {

inline uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline void Round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = Rotl(v1, 13);
  v1 ^= v0;
  v0 = Rotl(v0, 32);
  v2 += v3;
  v3 = Rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = Rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = Rotl(v1, 17);
  v1 ^= v2;
  v2 = Rotl(v2, 32);
}

inline uint64_t LoadLe64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only (x86-64, arm64), as row_binary.h
  return v;
}

}  // namespace

uint64_t SipHash64(std::string_view bytes) {
  // Key (k0, k1) = (0, 0).
  uint64_t v0 = 0x736f6d6570736575ull;
  uint64_t v1 = 0x646f72616e646f6dull;
  uint64_t v2 = 0x6c7967656e657261ull;
  uint64_t v3 = 0x7465646279746573ull;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  const size_t whole = n & ~size_t{7};
  for (size_t i = 0; i < whole; i += 8) {
    const uint64_t m = LoadLe64(p + i);
    v3 ^= m;
    Round(v0, v1, v2, v3);
    Round(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (size_t i = 0; i < (n & 7); ++i) last |= static_cast<uint64_t>(p[whole + i]) << (8 * i);
  v3 ^= last;
  Round(v0, v1, v2, v3);
  Round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) Round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace warpscope::clickhouse
