#include "base/duration.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace warpscope {

StatusOr<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  const std::string s(text);
  if (s.empty()) return InvalidArgumentError("empty duration");
  char* end = nullptr;
  errno = 0;
  const double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !std::isfinite(number)) {
    return InvalidArgumentError("bad duration '" + s + "' (examples: 10, 10s, 500ms, 2m)");
  }
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ns") scale = 1;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else if (unit == "d") scale = 86400e9;
  else return InvalidArgumentError("bad duration unit '" + unit + "' in '" + s + "' (use ms, s, m, h or d)");
  const double ns = number * scale;
  if (ns < 0) return InvalidArgumentError("negative duration '" + s + "'");
  if (ns > 1e18) return InvalidArgumentError("duration '" + s + "' is too long");
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
}

std::string FormatDuration(std::chrono::nanoseconds d) {
  const int64_t ns = d.count();
  char buf[64];
  if (ns % 60'000'000'000 == 0 && ns >= 60'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%lldm", static_cast<long long>(ns / 60'000'000'000));
  } else if (ns >= 1'000'000'000) {
    std::snprintf(buf, sizeof(buf), "%gs", static_cast<double>(ns) / 1e9);
  } else {
    std::snprintf(buf, sizeof(buf), "%gms", static_cast<double>(ns) / 1e6);
  }
  return buf;
}

}  // namespace warpscope
