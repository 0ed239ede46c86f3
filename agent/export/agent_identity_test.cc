#include "agent/export/agent_identity.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "base/file_util.h"

namespace warpscope {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/ws_identity_XXXXXX";
  return mkdtemp(tmpl);
}

TEST(AgentIdentityTest, AgentIdIsCreatedOnceAndStable) {
  const std::string dir = TempDir() + "/state/nested";
  auto id = LoadOrCreateAgentId(dir);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->size(), 32u);
  EXPECT_EQ(id->find_first_not_of("0123456789abcdef"), std::string::npos);
  auto again = LoadOrCreateAgentId(dir);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *id);
  auto other = LoadOrCreateAgentId(TempDir());
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *id) << "random per installation";
}

TEST(AgentIdentityTest, GarbledAgentIdIsReplaced) {
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomically(dir + "/agent-id", "not an id\n").ok());
  auto id = LoadOrCreateAgentId(dir);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->size(), 32u);
  EXPECT_EQ(*ReadFileToString(dir + "/agent-id"), *id + "\n");
}

TEST(AgentIdentityTest, StateDirThatIsAFileIsAnError) {
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomically(dir + "/file", "x").ok());
  EXPECT_FALSE(LoadOrCreateAgentId(dir + "/file").ok());
}

TEST(BatchSequencerTest, IncreasesAcrossRestartsEvenWhenTheClockGoesBack) {
  const std::string dir = TempDir();
  uint64_t now = 1'000'000;
  auto clock = [&] { return now; };
  auto seq = BatchSequencer::Open(dir, std::nullopt, clock);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(seq->Next(), 1'000'000u) << "starts at the clock";
  EXPECT_EQ(seq->Next(), 1'000'001u) << "same microsecond: last + 1";
  now = 5'000'000;
  EXPECT_EQ(seq->Next(), 5'000'000u);
  EXPECT_EQ(*ReadFileToString(dir + "/last-sequence"), "5000000\n") << "persisted per batch";

  now = 10;  // the clock went back across a restart
  auto restarted = BatchSequencer::Open(dir, std::nullopt, clock);
  ASSERT_TRUE(restarted.ok());
  EXPECT_EQ(restarted->Next(), 5'000'001u);
}

TEST(BatchSequencerTest, ContinuesAboveTheSpoolAndSurvivesALostStateFile) {
  const std::string dir = TempDir();
  uint64_t now = 100;
  auto clock = [&] { return now; };
  auto seq = BatchSequencer::Open(dir, 7'000u, clock);
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(seq->Next(), 7'001u) << "the spool's newest batch counts even without a state file";

  ASSERT_TRUE(WriteFileAtomically(dir + "/last-sequence", "garbage").ok());
  now = 9'000;
  auto garbled = BatchSequencer::Open(dir, std::nullopt, clock);
  ASSERT_TRUE(garbled.ok());
  EXPECT_EQ(garbled->Next(), 9'000u) << "the clock keeps order when the state is lost";
}

TEST(BatchSequencerTest, RealClockIsMicroseconds) {
  auto seq = BatchSequencer::Open(TempDir(), std::nullopt);
  ASSERT_TRUE(seq.ok());
  const uint64_t s = seq->Next();
  EXPECT_GT(s, 1'600'000'000'000'000u);
  EXPECT_LT(s, 4'000'000'000'000'000u);
}

}  // namespace
}  // namespace warpscope
