#include "base/http/request_head.h"

#include <string>

namespace warpscope::http {

RequestHeadState RequestHeadScanner::Scan(std::string_view bytes) {
  while (state_ == RequestHeadState::kIncomplete && scanned_ < bytes.size()) {
    const size_t i = scanned_++;
    // Limits on the line in progress, so an endless line is refused as it
    // grows rather than when (if ever) it ends.
    const size_t line_bytes = i + 1 - line_start_;
    if (!request_line_done_ && line_bytes > limits_.max_request_line_bytes) {
      state_ = RequestHeadState::kUriTooLong;
    } else if ((request_line_done_ && line_bytes > limits_.max_header_line_bytes) || i + 1 > limits_.max_head_bytes) {
      state_ = RequestHeadState::kTooLarge;
    } else if (bytes[i] == '\n' && i > line_start_ && bytes[i - 1] == '\r') {
      state_ = EndLine(bytes, i + 1);
      line_start_ = i + 1;
    }
  }
  return state_;
}

RequestHeadState RequestHeadScanner::EndLine(std::string_view bytes, size_t line_end) {
  const std::string_view line = bytes.substr(line_start_, line_end - 2 - line_start_);
  if (!request_line_done_) {
    request_line_done_ = true;
    // METHOD SP TARGET SP VERSION, each part non-empty.
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (line_start_ != 0 || sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1 || sp2 + 1 >= line.size()) {
      return RequestHeadState::kMalformed;
    }
    method_len_ = sp1;
    target_pos_ = sp1 + 1;
    target_len_ = sp2 - sp1 - 1;
    return RequestHeadState::kIncomplete;
  }
  if (line.empty()) {
    head_bytes_ = line_end;
    return RequestHeadState::kComplete;
  }
  if (++header_lines_ > limits_.max_header_lines) return RequestHeadState::kTooLarge;
  return RequestHeadState::kIncomplete;
}

std::string CannedErrorResponse(int status, std::string_view message) {
  const char* reason = status == 400   ? "Bad Request"
                       : status == 408 ? "Request Timeout"
                       : status == 414 ? "URI Too Long"
                       : status == 431 ? "Request Header Fields Too Large"
                       : status == 503 ? "Service Unavailable"
                                       : "Error";
  // The messages are fixed strings of ours: nothing to escape.
  const std::string body =
      "{\"error\": {\"code\": " + std::to_string(status) + ", \"message\": \"" + std::string(message) + "\"}}";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                    "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n";
  if (status == 503) out += "Retry-After: 1\r\n";
  out += "\r\n" + body;
  return out;
}

}  // namespace warpscope::http
