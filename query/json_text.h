// Appending JSON text directly to a std::string: the query API's big arrays
// (flame-graph nodes, string tables) are written this way because building
// an nlohmann::json tree of 50k nodes first costs more than the answer itself.
//
// Strings are always valid JSON and valid UTF-8, whatever the input bytes:
// '"', '\\' and control characters are escaped, and every byte that is not
// part of a well-formed UTF-8 sequence becomes U+FFFD (one per bad byte).
// Pure functions; safe on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warpscope::query {

// Appends `text` as a quoted JSON string.
void AppendJsonString(std::string_view text, std::string* out);

// Appends a decimal integer.
void AppendJsonInt(int64_t value, std::string* out);

}  // namespace warpscope::query
