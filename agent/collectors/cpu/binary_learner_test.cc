// BinaryLearner with real files (this test's own binary and libraries): what
// the worker reads matches a direct read, Await hands a file's symbols to the
// loop before TakeDone, and the queue is bounded.
#include "agent/collectors/cpu/binary_learner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent/process/process_table.h"

namespace warpscope {
namespace {

class BinaryLearnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = table_.OnProcessSeen(static_cast<uint32_t>(getpid()));
    ASSERT_NE(self_, nullptr);
    for (const MemoryMapping& m : self_->mappings) {
      if (m.IsFileBacked() && m.path == self_->exe_path) exe_ = &m;
    }
    ASSERT_NE(exe_, nullptr);
  }

  LearnRequest RequestFor(const MemoryMapping& m) {
    LearnRequest r;
    r.pid = self_->pid;
    r.mapping = m;
    auto file = ElfFile::Open(m.path);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (file.ok()) r.file = *file;
    r.symbols = r.table = r.python = true;
    return r;
  }

  ProcessTable table_{ProcFs()};
  const ProcessInfo* self_ = nullptr;
  const MemoryMapping* exe_ = nullptr;
};

TEST_F(BinaryLearnerTest, ReadsWhatADirectReadReads) {
  BinaryLearner learner{ProcFs()};
  ASSERT_TRUE(learner.Submit(RequestFor(*exe_)));
  learner.WaitIdle(std::chrono::seconds(30));
  std::vector<LearnedBinary> done = learner.TakeDone();
  ASSERT_EQ(done.size(), 1u);
  const LearnedBinary& d = done[0];
  EXPECT_EQ(d.build_id, ElfSymbols::ReadBuildId(exe_->path).value());
  ASSERT_TRUE(d.symbols && d.symbols->ok());
  auto direct = ElfSymbols::Load(exe_->path);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ((**d.symbols)->size(), (*direct)->size());
  ASSERT_TRUE(d.table && d.table->ok());
  auto table = BuildUnwindTable(exe_->path, AgentUnwindTableOptions());
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*d.table)->table.entries.size(), table->entries.size());
  ASSERT_TRUE(d.python);
  EXPECT_EQ(d.python->status().code(), StatusCode::kNotFound);  // a C++ test binary holds no CPython
  EXPECT_TRUE(learner.TakeDone().empty());
  EXPECT_EQ(learner.stats().files_done, 1u);
}

TEST_F(BinaryLearnerTest, AwaitHandsOverSymbolsBeforeTakeDone) {
  BinaryLearner learner{ProcFs()};
  ASSERT_TRUE(learner.Submit(RequestFor(*exe_)));
  auto symbols = learner.AwaitSymbols(IdentityOf(*exe_), std::chrono::seconds(30));
  ASSERT_TRUE(symbols && symbols->ok());
  EXPECT_GT((**symbols)->size(), 0u);
  // Still there for TakeDone (the table and the CPython answer go to the others).
  EXPECT_EQ(learner.TakeDone().size(), 1u);
  // A file that was never queued: nothing to wait for.
  MemoryMapping other = *exe_;
  other.inode += 1;
  EXPECT_FALSE(learner.AwaitSymbols(IdentityOf(other), std::chrono::seconds(1)).has_value());
}

TEST_F(BinaryLearnerTest, TheQueueIsBounded) {
  BinaryLearner learner{ProcFs()};
  size_t accepted = 0;
  for (size_t i = 0; i < kMaxQueuedFiles + 50; ++i) accepted += learner.Submit(RequestFor(*exe_));
  // The worker may have taken some already; never more than the bound waits.
  EXPECT_GE(accepted, kMaxQueuedFiles);
  EXPECT_LE(learner.stats().queue_peak, kMaxQueuedFiles);
  EXPECT_EQ(learner.stats().queue_full, kMaxQueuedFiles + 50 - accepted);
}

}  // namespace
}  // namespace warpscope
