#include "storage/embedded/column_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

namespace warpscope::segment {
namespace {

TEST(ColumnCodecTest, VarintRoundTripsEdgeValues) {
  const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, (1ull << 35) - 1, 1ull << 63,
                             std::numeric_limits<uint64_t>::max()};
  std::string buf;
  for (uint64_t v : values) PutVarint64(&buf, v);
  ByteReader r(buf);
  for (uint64_t v : values) {
    uint64_t got = 0;
    ASSERT_TRUE(r.GetVarint64(&got));
    EXPECT_EQ(got, v);
  }
  EXPECT_TRUE(r.done());
}

TEST(ColumnCodecTest, ZigZagRoundTrips) {
  const int64_t values[] = {0, 1, -1, 63, -64, std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  for (int64_t v : values) EXPECT_EQ(ZigZagDecode(ZigZagEncode(v)), v);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
}

TEST(ColumnCodecTest, MalformedVarintsAreRejected) {
  uint64_t v = 0;
  {
    const std::string cut("\x80\x80", 2);  // continuation bit but no next byte
    ByteReader r(cut);
    EXPECT_FALSE(r.GetVarint64(&v));
  }
  {
    const std::string too_long(11, '\x80');
    ByteReader r(too_long);
    EXPECT_FALSE(r.GetVarint64(&v));
  }
  {
    std::string overflow(9, '\xff');
    overflow.push_back('\x02');  // the tenth byte may only be 0 or 1
    ByteReader r(overflow);
    EXPECT_FALSE(r.GetVarint64(&v));
  }
}

TEST(ColumnCodecTest, FixedWidthIsLittleEndian) {
  std::string buf;
  PutFixed32(&buf, 0x01020304);
  PutFixed64(&buf, 0x0102030405060708ull);
  EXPECT_EQ(buf.substr(0, 4), std::string("\x04\x03\x02\x01", 4));
  EXPECT_EQ(LoadFixed64(buf.data() + 4), 0x0102030405060708ull);
  ByteReader r(buf.data(), 11);
  uint32_t a = 0;
  uint64_t b = 0;
  EXPECT_TRUE(r.GetFixed32(&a));
  EXPECT_FALSE(r.GetFixed64(&b));  // only 7 bytes left
}

TEST(ColumnCodecTest, ChunksRoundTripCompressibleAndIncompressible) {
  ZstdCompressor cctx = NewZstdCompressor();
  ZstdDecompressor dctx = NewZstdDecompressor();
  std::mt19937_64 rng(1);
  std::string noise(1000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  const std::string inputs[] = {std::string(), std::string(5000, 'a'), noise, "xy"};
  std::string file, scratch;
  for (const std::string& in : inputs) ASSERT_TRUE(AppendChunk(cctx.get(), 3, in, &scratch, &file).ok());
  // The repetitive chunk compresses; the noise is stored, costing only its header.
  EXPECT_LT(file.size(), 5000u + noise.size());
  ByteReader r(file);
  for (const std::string& in : inputs) {
    std::string out;
    ASSERT_TRUE(ReadChunk(dctx.get(), &r, 1 << 20, &out).ok());
    EXPECT_EQ(out, in);
  }
  EXPECT_TRUE(r.done());
}

TEST(ColumnCodecTest, ChunkLargerThanAllowedIsDataLoss) {
  ZstdCompressor cctx = NewZstdCompressor();
  ZstdDecompressor dctx = NewZstdDecompressor();
  std::string file, scratch, out;
  ASSERT_TRUE(AppendChunk(cctx.get(), 3, std::string(5000, 'a'), &scratch, &file).ok());
  ByteReader r(file);
  const Status s = ReadChunk(dctx.get(), &r, 4999, &out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
}

TEST(ColumnCodecTest, ChunkPayloadCutShortIsDataLoss) {
  ZstdCompressor cctx = NewZstdCompressor();
  ZstdDecompressor dctx = NewZstdDecompressor();
  std::string file, scratch;
  ASSERT_TRUE(AppendChunk(cctx.get(), 3, std::string(5000, 'a'), &scratch, &file).ok());
  for (size_t len = 0; len < file.size(); ++len) {
    ByteReader r(file.data(), len);
    std::string out;
    EXPECT_EQ(ReadChunk(dctx.get(), &r, 1 << 20, &out).code(), StatusCode::kDataLoss) << len;
  }
}

}  // namespace
}  // namespace warpscope::segment
