#include "agent/process/node_name.h"

#include <limits.h>
#include <unistd.h>

namespace warpscope {

std::string NodeName(const char* override_value) {
  if (override_value != nullptr && override_value[0] != '\0') return override_value;
  char buf[HOST_NAME_MAX + 1] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

}  // namespace warpscope
