// CPU lists as the kernel writes them in /sys/devices/system/cpu/online: "0-3,5,7-8".
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warpscope {

StatusOr<std::vector<uint32_t>> ParseCpuList(std::string_view text);
// The CPUs online now, read from sysfs.
StatusOr<std::vector<uint32_t>> OnlineCpus();

}  // namespace warpscope
