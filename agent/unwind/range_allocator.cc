#include "agent/unwind/range_allocator.h"

#include <algorithm>

#include "base/logging.h"

namespace warpscope {

RangeAllocator::RangeAllocator(uint32_t capacity) : capacity_(capacity) {
  if (capacity > 0) free_.emplace(0, capacity);
}

std::optional<uint32_t> RangeAllocator::Allocate(uint32_t count) {
  if (count == 0) return std::nullopt;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < count) continue;
    const uint32_t first = it->first;
    const uint32_t remaining = it->second - count;
    free_.erase(it);
    if (remaining > 0) free_.emplace(first + count, remaining);
    used_ += count;
    return first;
  }
  return std::nullopt;
}

void RangeAllocator::Free(uint32_t first, uint32_t count) {
  if (count == 0) return;
  CHECK(first + count <= capacity_) << "range beyond capacity";
  CHECK(used_ >= count) << "double free";
  used_ -= count;
  auto next = free_.lower_bound(first);
  CHECK(next == free_.end() || next->first >= first + count) << "freeing a free range";
  if (next != free_.end() && next->first == first + count) {
    count += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    CHECK(prev->first + prev->second <= first) << "freeing a free range";
    if (prev->first + prev->second == first) {
      prev->second += count;
      return;
    }
  }
  free_.emplace(first, count);
}

uint32_t RangeAllocator::largest_free() const {
  uint32_t best = 0;
  for (const auto& [first, count] : free_) best = std::max(best, count);
  return best;
}

}  // namespace warpscope
