// Durations on the command line: "10" (seconds), "10s", "500ms", "2m", "1h", "1.5s".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope {

StatusOr<std::chrono::nanoseconds> ParseDuration(std::string_view text);
// "1.5s", "250ms", "2m" — for logs and summaries.
std::string FormatDuration(std::chrono::nanoseconds d);

}  // namespace warpscope
