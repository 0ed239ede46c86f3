// Query-string parsing for the API: "a=1&tag=x&tag=y&q=a%2Bb+c". Pure
// functions; any thread.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace warpscope::http {

// Percent-decodes; with plus_is_space, '+' decodes to ' ' (the form encoding
// that browsers' URLSearchParams produce). Malformed escapes stay as written.
std::string PercentDecode(std::string_view s, bool plus_is_space);

// Splits the part of `target` after '?' into decoded key/value pairs, keeping
// repeats in order. A key without '=' gets an empty value.
std::multimap<std::string, std::string> ParseQueryString(std::string_view target);

}  // namespace warpscope::http
