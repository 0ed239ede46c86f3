// How many points a series answer over [from, to) at `step` has, shared by
// both stores so that they refuse the same queries.
// Pure; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace warpscope::storage {

// Prometheus' cap on points per series; bounds a query's memory too.
inline constexpr int64_t kMaxSeriesSteps = 11'000;

// Steps t = from + k * step covering [from, to) (to > from, step > 0):
// InvalidArgument past kMaxSeriesSteps.
inline StatusOr<int64_t> SeriesStepCount(int64_t from_ns, int64_t to_ns, int64_t step_ns) {
  const int64_t steps = (to_ns - from_ns - 1) / step_ns + 1;
  if (steps > kMaxSeriesSteps) {
    return InvalidArgumentError("range / step gives " + std::to_string(steps) + " points, limit " +
                                std::to_string(kMaxSeriesSteps));
  }
  return steps;
}

}  // namespace warpscope::storage
