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
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpscope::query {

// A json tree as compact text. Strings are whatever agents and CUPTI sent:
// bytes that are not UTF-8 become U+FFFD instead of failing the answer.
std::string DumpJson(const nlohmann::json& j);

// Appends `text` as a quoted JSON string.
void AppendJsonString(std::string_view text, std::string* out);

// Appends a decimal integer.
void AppendJsonInt(int64_t value, std::string* out);

// String table of a JSON answer ("names", "binaries"): each distinct string
// once, in order of first use. Keeps views: the strings must outlive it.
class JsonStringTable {
 public:
  uint32_t Index(std::string_view s) {
    const auto [it, inserted] = index_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  void AppendArray(std::string* out) const {
    out->push_back('[');
    for (size_t i = 0; i < strings_.size(); ++i) {
      if (i != 0) out->push_back(',');
      AppendJsonString(strings_[i], out);
    }
    out->push_back(']');
  }

 private:
  std::unordered_map<std::string_view, uint32_t> index_;
  std::vector<std::string_view> strings_;
};

}  // namespace warpscope::query
