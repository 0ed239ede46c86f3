#include "storage/embedded/dictionary/content_ids.h"

#include <gtest/gtest.h>

#include <string>

namespace warpscope::dictionary {
namespace {

TEST(ContentIdsTest, FindsWhatWasAddedAcrossGrowth) {
  ContentIds ids;
  for (int i = 0; i < 100'000; ++i) EXPECT_EQ(ids.Add("key-" + std::to_string(i)), static_cast<uint64_t>(i + 1));
  ids.Commit();
  for (int i = 0; i < 100'000; ++i) ASSERT_EQ(ids.Find("key-" + std::to_string(i)), static_cast<uint64_t>(i + 1));
  EXPECT_EQ(ids.Find("key-100000"), 0u);
  EXPECT_EQ(ids.Find(""), 0u);
  EXPECT_EQ(ids.Find("key-1 "), 0u);
}

TEST(ContentIdsTest, EmptyAndBinaryKeysAreDistinct) {
  ContentIds ids;
  const std::string zero(1, '\0'), zeros(2, '\0');
  uint64_t a = ids.Add(""), b = ids.Add(zero), c = ids.Add(zeros);
  EXPECT_EQ(ids.Find(""), a);
  EXPECT_EQ(ids.Find(zero), b);
  EXPECT_EQ(ids.Find(zeros), c);
}

TEST(ContentIdsTest, RollbackTakesBackStagedIdsOnly) {
  ContentIds ids;
  ids.Add("kept");
  ids.Commit();
  for (int i = 0; i < 5000; ++i) ids.Add("staged-" + std::to_string(i));  // grows the table while staged
  ids.Rollback();
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(ids.Find("kept"), 1u);
  EXPECT_EQ(ids.Find("staged-0"), 0u);
  EXPECT_EQ(ids.Find("staged-4999"), 0u);
  EXPECT_EQ(ids.Add("next"), 2u);  // the staged ids are handed out again
  EXPECT_EQ(ids.Find("next"), 2u);
}

TEST(ContentIdsTest, LoadKeepsIdsAndContinuesAfterTheHighest) {
  ContentIds ids;
  ids.Load("c", 7);
  ids.Load("a", 3);
  ids.Rollback();  // loaded entries are committed
  EXPECT_EQ(ids.Find("c"), 7u);
  EXPECT_EQ(ids.Find("a"), 3u);
  EXPECT_EQ(ids.Add("d"), 8u);
}

}  // namespace
}  // namespace warpscope::dictionary
