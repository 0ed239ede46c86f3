// The "top functions" summary printed after `warpscope-agent record`: which
// functions the CPU time went to, by self and by total (inclusive) samples.
// Pure functions; safe on any thread that owns the Profile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/profile.h"

namespace warpscope {

// Cost of one function, in samples. Functions are identified by (name,
// binary): the same name in two binaries is two rows. Inlined functions count
// as functions of their own (their frames are expanded from Location.lines).
struct FunctionCost {
  std::string name;    // display name (see frame_names.h), never empty
  std::string binary;  // the mapping's filename (full path), "[kernel.kallsyms]", or "" if unknown
  int64_t self = 0;    // samples where this function is the innermost frame of the leaf location
  int64_t total = 0;   // samples whose stack contains it at least once (recursion counted once)
};

// The n functions with the most self samples, sorted by self descending, then
// name, then binary (deterministic for ties).
std::vector<FunctionCost> TopFunctions(const Profile& profile, size_t n);

// A fixed-width table for terminals, e.g.
//   1,234 samples over 10.0s at 99 Hz (12.5s of CPU time). Top 2 of 57 functions by self time:
//      SELF%    TOTAL%    SAMPLES  FUNCTION        [binary]
//     40.00%    80.00%        494  compute_kernel  [myapp]
// Percentages are of all samples. Ends with a newline.
std::string FormatTopFunctions(const Profile& profile, size_t n);

}  // namespace warpscope
