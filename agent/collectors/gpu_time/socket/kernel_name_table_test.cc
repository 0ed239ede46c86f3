#include "agent/collectors/gpu_time/socket/kernel_name_table.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace warpscope {
namespace {

constexpr size_t kOverhead = KernelNameTable::kNameOverheadBytes;

// A name whose table cost (text twice plus the overhead) is exactly `cost`.
std::string NameCosting(size_t cost, char fill) {
  return "_Z" + std::string((cost - kOverhead) / 2 - 2, fill);
}

TEST(KernelNameTable, OneEntryPerNameWhileItLivesWithItsDisplayForm) {
  KernelNameTable table(1 << 20, [](std::string_view raw) { return "shown:" + std::string(raw); });
  auto a = table.Intern("_Z1av");
  auto again = table.Intern("_Z1av");
  auto b = table.Intern("_Z1bv");
  ASSERT_TRUE(a && again && b);
  EXPECT_EQ(a.get(), again.get());
  EXPECT_NE(a->key, b->key);
  EXPECT_EQ(a->text.system_name, "_Z1av");
  EXPECT_EQ(a->text.name, "shown:_Z1av");
  const KernelNameTableStats s = table.stats();
  EXPECT_EQ(s.names, 2u);
  EXPECT_EQ(s.interned, 2u);
  EXPECT_EQ(s.bytes, 2 * (5 + 11 + kOverhead));
}

TEST(KernelNameTable, WarmNamesAreEvictedOldestFirstToMakeRoom) {
  KernelNameTable table(3428);  // names up to 3428 - 3428 / 8 = 3000
  const std::string first = NameCosting(1000, 'a'), second = NameCosting(1000, 'b'), third = NameCosting(1000, 'c');
  const uint64_t first_key = table.Intern(first)->key;
  table.Intern(second);
  table.Intern(third);
  EXPECT_EQ(table.stats().bytes, 3000u) << "held warm by the table alone";
  ASSERT_TRUE(table.Intern(NameCosting(1000, 'd')));
  KernelNameTableStats s = table.stats();
  EXPECT_EQ(s.evicted, 1u);
  EXPECT_EQ(s.bytes, 3000u);
  EXPECT_NE(table.Intern(first)->key, first_key) << "the oldest went; it comes back as a new name";
  EXPECT_EQ(table.stats().peak_bytes, 3000u);
  EXPECT_EQ(table.stats().budget_bytes, 3428u);
}

TEST(KernelNameTable, NamesInUseAreNeverEvictedAndNewOnesAreRefused) {
  KernelNameTable table(2285);  // names up to 2285 - 285 = 2000
  auto held = table.Intern(NameCosting(1000, 'a'));
  auto also = table.Intern(NameCosting(1000, 'b'));
  ASSERT_TRUE(held && also);
  EXPECT_EQ(table.Intern(NameCosting(1000, 'c')), nullptr);
  EXPECT_TRUE(table.Charge(285)) << "the eighth kept for charges";
  EXPECT_FALSE(table.Charge(1));
  table.Release(285);
  KernelNameTableStats s = table.stats();
  EXPECT_EQ(s.refused, 2u);
  EXPECT_EQ(s.evicted, 0u);
  EXPECT_EQ(s.bytes, 2000u);
  EXPECT_EQ(held->text.system_name, NameCosting(1000, 'a')) << "still intact";
  EXPECT_EQ(table.Intern(NameCosting(2100, 'x')), nullptr) << "larger than the names' share";

  // Once the holder lets go, its name is only warm, and room can be made.
  also.reset();
  EXPECT_TRUE(table.Charge(1200));
  EXPECT_EQ(table.stats().bytes, 2200u);
  table.Release(1200);
  EXPECT_EQ(table.stats().bytes, 1000u);
}

TEST(KernelNameTable, NamesReleasedOnOtherThreadsGiveTheirBytesBackAndMayOutliveTheTable) {
  std::vector<std::shared_ptr<const InternedKernelName>> names;
  {
    KernelNameTable table(64 << 10);
    for (int i = 0; i < 200; ++i) {
      auto n = table.Intern("_Z" + std::to_string(i) + "kernel");
      if (n) names.push_back(n);
    }
    // Other threads let go of names while this one interns more.
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      std::vector<std::shared_ptr<const InternedKernelName>> mine(names.begin() + t * 50, names.begin() + t * 50 + 50);
      threads.emplace_back([mine = std::move(mine)]() mutable { mine.clear(); });
    }
    names.clear();
    for (int i = 0; i < 2000; ++i) {
      auto n = table.Intern("_Z" + std::to_string(i) + "other" + std::string(100, 'y'));
      EXPECT_LE(table.stats().bytes, 64u << 10);
      if (i % 100 == 0 && n) names.push_back(n);
    }
    for (auto& t : threads) t.join();
    EXPECT_LE(table.stats().peak_bytes, 64u << 10);
    EXPECT_GT(table.stats().evicted, 0u);
  }
  for (const auto& n : names) EXPECT_NE(n->text.system_name.find("other"), std::string::npos);
  names.clear();  // the deleters run after the table is gone
}

TEST(KernelNameTable, PlaceholdersHaveTheirOwnKeys) {
  EXPECT_EQ(KernelNameTable::UnknownName()->key, KernelNameTable::kUnknownKey);
  EXPECT_EQ(KernelNameTable::UnknownName()->text.name, "[unknown kernel]");
  EXPECT_EQ(KernelNameTable::RefusedName()->key, KernelNameTable::kRefusedKey);
  EXPECT_NE(KernelNameTable::RefusedName()->text.name.find("budget"), std::string::npos);
}

}  // namespace
}  // namespace warpscope
