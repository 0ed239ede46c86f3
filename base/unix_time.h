// The wall clock in unix nanoseconds: what profiles, batches and metric
// readings are stamped with.
#pragma once

#include <chrono>
#include <cstdint>

namespace warpscope {

inline int64_t UnixNanosNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace warpscope
