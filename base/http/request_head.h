// RequestHeadScanner: finds where an HTTP/1.1 request head (request line and
// header lines, up to the blank line) ends in the bytes a connection has sent
// so far, and enforces the head's limits *before* anything parses it, so a
// client that sends no end, or megabytes of headers, costs a bounded buffer
// and never a worker thread (connection_server.h reads heads this way).
//
// The rules follow what cpp-httplib's parser accepts: lines end in CRLF, the
// head ends at the first empty line. Scanning is incremental (each byte is
// looked at once, however slowly the head trickles in).
//
// One scanner per request; not thread-safe (the connection's owner uses it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace warpscope::http {

struct RequestHeadLimits {
  // The whole head: request line, header lines and the blank line. Over it: 431.
  size_t max_head_bytes = 64 << 10;
  // Header lines. Over it: 431.
  size_t max_header_lines = 100;
  // One header line with its CRLF (cpp-httplib refuses longer ones). Over it: 431.
  size_t max_header_line_bytes = 8192;
  // The request line with its CRLF (cpp-httplib's URI limit). Over it: 414.
  size_t max_request_line_bytes = 8192;
};

enum class RequestHeadState {
  kIncomplete,      // no blank line yet, all limits kept
  kComplete,        // head_bytes() is the head's length
  kTooLarge,        // 431 Request Header Fields Too Large
  kUriTooLong,      // 414 URI Too Long
  kMalformed,       // 400: a request line that is not "METHOD SP TARGET SP VERSION"
};

class RequestHeadScanner {
 public:
  explicit RequestHeadScanner(const RequestHeadLimits& limits) : limits_(limits) {}

  // `bytes` is everything received for this request so far (a prefix of what
  // it will be: earlier calls saw shorter prefixes of the same bytes).
  // Returns the state; once it is not kIncomplete it stays.
  RequestHeadState Scan(std::string_view bytes);

  RequestHeadState state() const { return state_; }
  // Valid once kComplete.
  size_t head_bytes() const { return head_bytes_; }
  // The request line's method and target (path with query string) within
  // `bytes` (the same bytes Scan saw), once the request line is complete.
  std::string_view method(std::string_view bytes) const { return bytes.substr(0, method_len_); }
  std::string_view target(std::string_view bytes) const { return bytes.substr(target_pos_, target_len_); }
  // Whether any byte of the request has arrived (the header deadline runs
  // from then).
  bool started() const { return scanned_ > 0; }

 private:
  RequestHeadState EndLine(std::string_view bytes, size_t line_end);

  RequestHeadLimits limits_;
  RequestHeadState state_ = RequestHeadState::kIncomplete;
  size_t scanned_ = 0;     // bytes looked at
  size_t line_start_ = 0;  // where the current line began
  size_t header_lines_ = 0;
  bool request_line_done_ = false;
  size_t head_bytes_ = 0;
  size_t method_len_ = 0, target_pos_ = 0, target_len_ = 0;
};

// The HTTP status line and JSON body for a head refused by the scanner (or by
// the connection layer itself: 408, 503), as a whole response that closes the
// connection.
std::string CannedErrorResponse(int status, std::string_view message);

}  // namespace warpscope::http
