#include "cuda/launch_times.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace warpscope::cuda {
namespace {

LaunchTime At(uint64_t enter_ns, uint32_t tid) {
  LaunchTime t;
  t.enter_ns = enter_ns;
  t.duration_ns = 3000;
  t.tid = tid;
  t.kind = 1;
  t.flags = 2;
  return t;
}

TEST(LaunchTimeTable, FindsWhatWasPutUnderItsIdAndEpoch) {
  auto table = std::make_unique<LaunchTimeTable>();
  LaunchTime got;
  EXPECT_FALSE(table->Find(1, 42, &got));  // never written
  ASSERT_TRUE(table->Put(1, 42, At(1000, 7)));
  ASSERT_TRUE(table->Find(1, 42, &got));
  EXPECT_EQ(got.enter_ns, 1000u);
  EXPECT_EQ(got.duration_ns, 3000u);
  EXPECT_EQ(got.tid, 7u);
  EXPECT_EQ(got.kind, 1u);
  EXPECT_EQ(got.flags, 2u);
  EXPECT_FALSE(table->Find(2, 42, &got)) << "another attachment's id 42";
  EXPECT_FALSE(table->Find(1, 43, &got));
}

TEST(LaunchTimeTable, ALaterLaunchInTheSameSlotHidesTheEarlierOne) {
  auto table = std::make_unique<LaunchTimeTable>();
  ASSERT_TRUE(table->Put(1, 5, At(100, 1)));
  ASSERT_TRUE(table->Put(1, 5 + LaunchTimeTable::kSlots, At(200, 2)));
  LaunchTime got;
  EXPECT_FALSE(table->Find(1, 5, &got)) << "overwritten: missing, not the other launch's time";
  ASSERT_TRUE(table->Find(1, 5 + LaunchTimeTable::kSlots, &got));
  EXPECT_EQ(got.enter_ns, 200u);
}

// Writers race on the same slots while a reader looks: every answer the
// reader accepts is one a writer put, whole (tid and time of the same launch).
TEST(LaunchTimeTable, AReaderNeverSeesAMixOfTwoLaunches) {
  auto table = std::make_unique<LaunchTimeTable>();
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> writers;
  for (uint32_t w = 1; w <= 3; ++w) {
    writers.emplace_back([&, w] {
      ready.fetch_add(1);
      for (uint64_t i = 1; !stop.load(std::memory_order_relaxed); ++i) {
        const uint32_t id = static_cast<uint32_t>((i % 4) * LaunchTimeTable::kSlots + 9);  // four ids, one slot
        table->Put(1, id, At(id * 1000ull + w, w));
      }
    });
  }
  while (ready.load() < 3) std::this_thread::yield();
  // Until 20,000 reads found their launch, or 10 s: three writers on a
  // 2-core machine often hold the slot, so reads fail (never mix) most times.
  uint64_t found = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint64_t i = 0; found < 20000 && ((i & 0xffff) != 0 || std::chrono::steady_clock::now() < deadline); ++i) {
    const uint32_t id = static_cast<uint32_t>((i % 4) * LaunchTimeTable::kSlots + 9);
    LaunchTime got;
    if (!table->Find(1, id, &got)) continue;
    ++found;
    ASSERT_EQ(got.enter_ns, id * 1000ull + got.tid) << "fields of two launches";
  }
  stop = true;
  for (std::thread& t : writers) t.join();
  EXPECT_GE(found, 1000u) << "too few reads found their launch to show anything";
}

}  // namespace
}  // namespace warpscope::cuda
