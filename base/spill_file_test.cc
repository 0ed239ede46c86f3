#include "base/spill_file.h"

#include <gtest/gtest.h>

#include <random>

namespace warpscope {
namespace {

struct Item {
  uint32_t key;
  uint32_t order;  // when it was added: ties keep it within a run and by run across runs
};
struct ByKey {
  bool operator()(const Item& a, const Item& b) const { return a.key < b.key; }
};

std::vector<Item> Shuffled(size_t n, uint32_t keys) {
  std::mt19937 rng(7);
  std::vector<Item> items;
  for (uint32_t i = 0; i < n; ++i) items.push_back({static_cast<uint32_t>(rng() % keys), i});
  return items;
}

// Past the in-memory bound, items go to runs in a spill file and come back
// merged in order, ties in the order they were added; the file is counted
// while it exists and nothing of it is left behind.
TEST(SortedRunsTest, SpilledItemsMergeInOrderAsAStableSort) {
  const std::vector<Item> items = Shuffled(10'000, 300);
  std::vector<Item> want = items;
  std::stable_sort(want.begin(), want.end(), ByKey());
  const uint64_t disk_before = SpillDiskBytes();
  {
    SortedRuns<Item, ByKey> runs(100, 333, testing::TempDir());
    for (const Item& i : items) ASSERT_TRUE(runs.Add(i).ok());
    ASSERT_TRUE(runs.Finish().ok());
    ASSERT_TRUE(runs.spilled());
    EXPECT_LE(runs.in_memory(), 333u);
    EXPECT_EQ(SpillDiskBytes(), disk_before + items.size() * sizeof(Item));
    std::vector<Item> got;
    ASSERT_TRUE(runs.Merge([&](const Item& i) {
                      got.push_back(i);
                      return Status::Ok();
                    }).ok());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].key, want[i].key) << i;
      ASSERT_EQ(got[i].order, want[i].order) << i;
    }
  }
  EXPECT_EQ(SpillDiskBytes(), disk_before);
}

TEST(SortedRunsTest, ASmallSetStaysInMemory) {
  SortedRuns<Item, ByKey> runs(100, 10, testing::TempDir());
  for (const Item& i : Shuffled(100, 50)) ASSERT_TRUE(runs.Add(i).ok());
  ASSERT_TRUE(runs.Finish().ok());
  EXPECT_FALSE(runs.spilled());
  EXPECT_TRUE(std::is_sorted(runs.Sorted().begin(), runs.Sorted().end(), ByKey()));
}

// No directory to spill to: everything stays in memory, said so.
TEST(SortedRunsTest, NoSpillFileKeepsEverythingInMemory) {
  SortedRuns<Item, ByKey> runs(10, 10, "/nonexistent/warpscope");
  for (const Item& i : Shuffled(1000, 50)) ASSERT_TRUE(runs.Add(i).ok());
  ASSERT_TRUE(runs.Finish().ok());
  EXPECT_FALSE(runs.spilled());
  EXPECT_TRUE(runs.spill_failed());
  EXPECT_EQ(runs.Sorted().size(), 1000u);
}

TEST(SpillFileTest, WritesAndReadsBackByOffset) {
  StatusOr<SpillFile> f = SpillFile::Create(testing::TempDir());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE(f->Append("hello ", 6).ok());
  ASSERT_TRUE(f->Append("world", 5).ok());
  char buf[5];
  ASSERT_TRUE(f->ReadAt(6, buf, 5).ok());
  EXPECT_EQ(std::string(buf, 5), "world");
  EXPECT_FALSE(f->ReadAt(8, buf, 5).ok()) << "past the end";
  EXPECT_FALSE(SpillFile::Create("/nonexistent/warpscope").ok());
}

}  // namespace
}  // namespace warpscope
