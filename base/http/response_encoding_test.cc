#include "base/http/response_encoding.h"

#include <zlib.h>
#include <zstd.h>

#include <string>

#include "gtest/gtest.h"

namespace warpscope::http {
namespace {

std::string Gunzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(1 << 22, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

std::string Unzstd(const std::string& data) {
  std::string out(1 << 22, '\0');
  const size_t n = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

std::string FlameJson() {
  std::string s = "{\"names\":[";
  for (int i = 0; i < 5000; ++i) s += "\"ns::Function" + std::to_string(i) + "\",";
  return s + "\"\"]}";
}

std::string HeaderOf(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(ResponseEncodingTest, ChoosesZstdThenGzipAndNeverBrotli) {
  EXPECT_EQ(ChooseBodyEncoding("gzip, deflate, br, zstd"), BodyEncoding::kZstd);
  EXPECT_EQ(ChooseBodyEncoding("gzip, deflate, br"), BodyEncoding::kGzip);
  EXPECT_EQ(ChooseBodyEncoding("br"), BodyEncoding::kIdentity);
  EXPECT_EQ(ChooseBodyEncoding(""), BodyEncoding::kIdentity);
  EXPECT_EQ(ChooseBodyEncoding("identity"), BodyEncoding::kIdentity);
  EXPECT_EQ(ChooseBodyEncoding("X-GZIP"), BodyEncoding::kGzip);
  EXPECT_EQ(ChooseBodyEncoding("*"), BodyEncoding::kZstd);
}

TEST(ResponseEncodingTest, QZeroRefusesACoding) {
  EXPECT_EQ(ChooseBodyEncoding("zstd;q=0, gzip"), BodyEncoding::kGzip);
  EXPECT_EQ(ChooseBodyEncoding("zstd; q=0.0 , gzip;q=0.5"), BodyEncoding::kGzip);
  EXPECT_EQ(ChooseBodyEncoding("*, zstd;q=0"), BodyEncoding::kGzip);
  EXPECT_EQ(ChooseBodyEncoding("*;q=0"), BodyEncoding::kIdentity);
  EXPECT_TRUE(ParseAcceptEncoding("gzip;q=1").gzip);
  EXPECT_FALSE(ParseAcceptEncoding("gzip;q=0").gzip);
}

TEST(ResponseEncodingTest, CompressibleTypes) {
  EXPECT_TRUE(CompressibleContentType("application/json"));
  EXPECT_TRUE(CompressibleContentType("Application/JSON; charset=utf-8"));
  EXPECT_TRUE(CompressibleContentType("text/plain; version=0.0.4"));
  EXPECT_TRUE(CompressibleContentType("text/javascript; charset=utf-8"));
  EXPECT_TRUE(CompressibleContentType("image/svg+xml"));
  EXPECT_FALSE(CompressibleContentType("application/octet-stream"));  // pprof: already gzip
  EXPECT_FALSE(CompressibleContentType("image/png"));
}

TEST(ResponseEncodingTest, LargeJsonIsCompressedAndDecodesToTheSameBytes) {
  const std::string json = FlameJson();
  for (const char* accept : {"zstd", "gzip"}) {
    HttpResponse r = HttpResponse::Json(200, json);
    EncodeResponseBody(accept, &r);
    EXPECT_EQ(HeaderOf(r, "Content-Encoding"), accept);
    EXPECT_EQ(HeaderOf(r, "Vary"), "Accept-Encoding");
    EXPECT_LT(r.body.size(), json.size() / 4) << accept;
    EXPECT_EQ(std::string(accept) == "zstd" ? Unzstd(r.body) : Gunzip(r.body), json) << accept;
  }
}

TEST(ResponseEncodingTest, SmallAlreadyEncodedOrBinaryBodiesAreLeftAlone) {
  HttpResponse small = HttpResponse::Json(200, "{\"ok\":true}");
  EncodeResponseBody("zstd, gzip", &small);
  EXPECT_EQ(small.body, "{\"ok\":true}");
  EXPECT_EQ(HeaderOf(small, "Content-Encoding"), "");
  EXPECT_EQ(HeaderOf(small, "Vary"), "Accept-Encoding");  // a cache must still tell them apart

  HttpResponse encoded = HttpResponse::Json(200, FlameJson());
  encoded.headers.emplace_back("Content-Encoding", "gzip");
  const std::string before = encoded.body;
  EncodeResponseBody("zstd", &encoded);
  EXPECT_EQ(encoded.body, before);

  HttpResponse binary;
  binary.content_type = "application/octet-stream";
  binary.body = FlameJson();
  EncodeResponseBody("zstd, gzip", &binary);
  EXPECT_EQ(binary.body, FlameJson());
  EXPECT_TRUE(binary.headers.empty());

  HttpResponse refused = HttpResponse::Json(200, FlameJson());
  EncodeResponseBody("br", &refused);
  EXPECT_EQ(refused.body, FlameJson());
  EXPECT_EQ(HeaderOf(refused, "Content-Encoding"), "");
}

}  // namespace
}  // namespace warpscope::http
