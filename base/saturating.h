// Saturating int64 arithmetic for values summed from untrusted input (sample
// values, merged rows, query totals): a sum that would overflow sticks at
// INT64_MAX / INT64_MIN instead of wrapping (signed overflow is undefined
// behaviour, and a wrapped total turns a hot stack negative). Stateless; any
// thread.
#pragma once

#include <cstdint>
#include <limits>

namespace warpscope {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) [[unlikely]] {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) [[unlikely]] {
    return (a < 0) == (b < 0) ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return out;
}

// a += b, saturating.
inline void SaturatingAddTo(int64_t& a, int64_t b) { a = SaturatingAdd(a, b); }

}  // namespace warpscope
