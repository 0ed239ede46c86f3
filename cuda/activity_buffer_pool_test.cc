#include "cuda/activity_buffer_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace warpscope::cuda {
namespace {

TEST(ActivityBufferPool, BoundedAndReused) {
  ActivityBufferPool pool;
  pool.Configure(64 << 10, 3);
  std::vector<uint8_t*> taken;
  for (int i = 0; i < 3; ++i) {
    size_t size = 0;
    uint8_t* b = pool.Take(&size);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(size, 64u << 10);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);  // CUPTI wants 8-byte alignment
    b[size - 1] = 1;                                      // the whole buffer is ours
    taken.push_back(b);
  }
  size_t size = 123;
  EXPECT_EQ(pool.Take(&size), nullptr);  // exhausted: CUPTI drops
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(pool.denied(), 1u);
  pool.Give(taken.back());
  uint8_t* again = pool.Take(&size);
  EXPECT_EQ(again, taken.back());  // reused, not reallocated
  taken.back() = again;
  EXPECT_EQ(pool.allocated(), 3u);
  for (uint8_t* b : taken) pool.Give(b);
  pool.Trim();
  EXPECT_EQ(pool.allocated(), 0u);
}

TEST(ActivityBufferPool, BuffersOfAnOldSizeAreFreedOnReturn) {
  ActivityBufferPool pool;
  pool.Configure(64 << 10, 2);
  size_t size = 0;
  uint8_t* old_buffer = pool.Take(&size);
  ASSERT_NE(old_buffer, nullptr);
  pool.Configure(128 << 10, 2);  // a new connection's config
  uint8_t* fresh = pool.Take(&size);
  ASSERT_NE(fresh, nullptr);
  EXPECT_EQ(size, 128u << 10);
  pool.Give(old_buffer);  // freed, not pooled
  EXPECT_EQ(pool.allocated(), 1u);
  pool.Give(fresh);
  EXPECT_EQ(pool.allocated(), 1u);
  pool.Trim();
  EXPECT_EQ(pool.allocated(), 0u);
}

}  // namespace
}  // namespace warpscope::cuda
