#include "base/cpu_list.h"

#include <charconv>
#include <string>

#include "base/file_util.h"

namespace warpscope {
namespace {
bool ParseUint(std::string_view s, uint32_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}
}  // namespace

StatusOr<std::vector<uint32_t>> ParseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::vector<uint32_t> cpus;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t dash = part.find('-');
    uint32_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseUint(part, &lo)) return InvalidArgumentError("bad CPU list entry '" + std::string(part) + "'");
      hi = lo;
    } else if (!ParseUint(part.substr(0, dash), &lo) || !ParseUint(part.substr(dash + 1), &hi) || hi < lo) {
      return InvalidArgumentError("bad CPU range '" + std::string(part) + "'");
    }
    for (uint32_t c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) return InvalidArgumentError("empty CPU list");
  return cpus;
}

StatusOr<std::vector<uint32_t>> OnlineCpus() {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString("/sys/devices/system/cpu/online"));
  return ParseCpuList(text);
}

}  // namespace warpscope
