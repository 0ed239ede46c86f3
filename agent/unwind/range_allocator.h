// First-fit allocator of index ranges in a fixed-size BPF array (unwind rows,
// process mapping slices). Freed ranges coalesce with their neighbours.
// Single-thread owned (the agent loop that owns UnwindTableLoader).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace warpscope {

class RangeAllocator {
 public:
  explicit RangeAllocator(uint32_t capacity);

  // Returns the first index of a free range of `count` (> 0) slots, or nullopt when none fits.
  std::optional<uint32_t> Allocate(uint32_t count);
  // Frees a range previously returned by Allocate with the same count.
  void Free(uint32_t first, uint32_t count);

  uint32_t capacity() const { return capacity_; }
  uint32_t used() const { return used_; }
  uint32_t largest_free() const;

 private:
  uint32_t capacity_;
  uint32_t used_ = 0;
  std::map<uint32_t, uint32_t> free_;  // first -> count, non-adjacent
};

}  // namespace warpscope
