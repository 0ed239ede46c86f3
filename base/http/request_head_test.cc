#include "base/http/request_head.h"

#include <gtest/gtest.h>

#include <string>

namespace warpscope::http {
namespace {

RequestHeadState ScanAll(const std::string& bytes, RequestHeadLimits limits = {}, RequestHeadScanner* out = nullptr) {
  RequestHeadScanner s(limits);
  RequestHeadState state = s.Scan(bytes);
  if (out) *out = s;
  return state;
}

TEST(RequestHeadTest, FindsTheEndAndTheRequestLine) {
  const std::string head = "POST /api/v1/ingest?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n";
  RequestHeadScanner s({});
  ASSERT_EQ(s.Scan(head + "abc"), RequestHeadState::kComplete);
  EXPECT_EQ(s.head_bytes(), head.size());
  EXPECT_EQ(s.method(head), "POST");
  EXPECT_EQ(s.target(head), "/api/v1/ingest?x=1");
}

TEST(RequestHeadTest, ByteByByteGivesTheSameAnswer) {
  const std::string head = "GET /healthz HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n";
  RequestHeadScanner s({});
  EXPECT_FALSE(s.started());
  for (size_t n = 1; n < head.size(); ++n) {
    ASSERT_EQ(s.Scan(std::string_view(head).substr(0, n)), RequestHeadState::kIncomplete) << n;
    EXPECT_TRUE(s.started());
  }
  ASSERT_EQ(s.Scan(head), RequestHeadState::kComplete);
  EXPECT_EQ(s.head_bytes(), head.size());
  EXPECT_EQ(s.target(head), "/healthz");
}

TEST(RequestHeadTest, LimitsAreExact) {
  RequestHeadLimits limits;
  limits.max_header_lines = 3;
  limits.max_head_bytes = 200;
  limits.max_header_line_bytes = 50;
  limits.max_request_line_bytes = 40;
  const std::string line = "GET / HTTP/1.1\r\n";
  // Three header lines pass, four do not.
  EXPECT_EQ(ScanAll(line + "a: 1\r\nb: 2\r\nc: 3\r\n\r\n", limits), RequestHeadState::kComplete);
  EXPECT_EQ(ScanAll(line + "a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n", limits), RequestHeadState::kTooLarge);
  // A header line of exactly 50 bytes with its CRLF passes; 51 does not, and
  // is refused before it ends.
  EXPECT_EQ(ScanAll(line + "x: " + std::string(45, 'v') + "\r\n\r\n", limits), RequestHeadState::kComplete);
  EXPECT_EQ(ScanAll(line + "x: " + std::string(46, 'v') + "\r\n\r\n", limits), RequestHeadState::kTooLarge);
  EXPECT_EQ(ScanAll(line + "x: " + std::string(60, 'v'), limits), RequestHeadState::kTooLarge);
  // The request line: 40 bytes pass, 41 are 414, also before the line ends.
  EXPECT_EQ(ScanAll("GET /" + std::string(24, 'p') + " HTTP/1.1\r\n\r\n", limits), RequestHeadState::kComplete);
  EXPECT_EQ(ScanAll("GET /" + std::string(25, 'p') + " HTTP/1.1\r\n\r\n", limits), RequestHeadState::kUriTooLong);
  EXPECT_EQ(ScanAll("GET /" + std::string(100, 'p'), limits), RequestHeadState::kUriTooLong);
  // The whole head: 200 bytes.
  limits.max_header_line_bytes = 1000;
  std::string big = line + "x: " + std::string(200 - line.size() - 3 - 4, 'v') + "\r\n\r\n";
  ASSERT_EQ(big.size(), 200u);
  EXPECT_EQ(ScanAll(big, limits), RequestHeadState::kComplete);
  EXPECT_EQ(ScanAll(line + "x: " + std::string(200, 'v'), limits), RequestHeadState::kTooLarge);
}

TEST(RequestHeadTest, MalformedRequestLines) {
  for (const std::string bad : {"\r\n\r\n", "GET\r\n\r\n", "GET /\r\n\r\n", " / HTTP/1.1\r\n\r\n", "GET  HTTP/1.1\r\n\r\n",
                                "GET / \r\n\r\n"}) {
    EXPECT_EQ(ScanAll(bad), RequestHeadState::kMalformed) << bad;
  }
}

TEST(RequestHeadTest, BareLineFeedsNeverEndTheHead) {
  // cpp-httplib needs CRLF; a head of bare LFs stays incomplete (and the
  // connection layer's header deadline ends it).
  EXPECT_EQ(ScanAll("GET / HTTP/1.1\nHost: a\n\n"), RequestHeadState::kIncomplete);
}

TEST(RequestHeadTest, CannedResponsesAreWholeHttpAnswers) {
  const std::string r = CannedErrorResponse(431, "too big");
  EXPECT_EQ(r.rfind("HTTP/1.1 431 Request Header Fields Too Large\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos);
  const std::string body = "{\"error\": {\"code\": 431, \"message\": \"too big\"}}";
  EXPECT_NE(r.find("Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body), std::string::npos) << r;
  EXPECT_NE(CannedErrorResponse(503, "busy").find("Retry-After: 1\r\n"), std::string::npos);
}

}  // namespace
}  // namespace warpscope::http
