#include "model/cubin_hash.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

TEST(CubinHashTest, IsXxh3128InCanonicalHex) {
  // XXH3_128bits("") is 99aa06d3014798d86001c324468d497f (xxhsum -H2 of an empty file).
  EXPECT_EQ(CubinHash(""), "99aa06d3014798d86001c324468d497f");
  EXPECT_EQ(CubinHash("cubin").size(), kCubinHashDigits);
  EXPECT_NE(CubinHash("cubin"), CubinHash("cubim"));
  EXPECT_TRUE(IsCubinHash(CubinHash("cubin")));
}

TEST(CubinHashTest, OnlyThirtyTwoLowercaseHexDigitsAreHashes) {
  EXPECT_TRUE(IsCubinHash("0123456789abcdef0123456789abcdef"));
  EXPECT_FALSE(IsCubinHash("0123456789ABCDEF0123456789abcdef"));
  EXPECT_FALSE(IsCubinHash("0123456789abcdef0123456789abcde"));
  EXPECT_FALSE(IsCubinHash("0123456789abcdef0123456789abcdef0"));
  EXPECT_FALSE(IsCubinHash("0123456789abcdef0123456789abcdeg"));
  EXPECT_FALSE(IsCubinHash("../../../../etc/passwd..........."));
  EXPECT_FALSE(IsCubinHash(""));
}

}  // namespace
}  // namespace warpscope
