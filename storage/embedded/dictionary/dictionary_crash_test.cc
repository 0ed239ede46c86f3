// A committed InternBatch must survive the process dying right after it: a
// forked child interns and reports OK through a pipe, the parent SIGKILLs it
// (no destructors, no close, no checkpoint) and reopens the file. Power loss
// is not simulated; synchronous=FULL in WAL mode is what covers it (the
// COMMIT fsyncs the WAL before returning).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/embedded/dictionary/dictionary_test_util.h"

namespace warpscope::dictionary {
namespace {

using testing::OpenOrDie;
using testing::ScratchDir;

TEST(DictionaryCrashTest, InternedBatchSurvivesSigkillRightAfterOk) {
  ScratchDir dir;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Never returns into gtest: reports through the pipe, then waits to be killed.
    close(fds[0]);
    StatusOr<std::unique_ptr<DictionaryStore>> store = DictionaryStore::Open(dir.db());
    if (!store.ok()) _exit(2);
    StatusOr<InternedBatch> interned = (*store)->InternBatch(testing::RealisticBatch("crash", 9, 200, 30, 10));
    if (!interned.ok()) _exit(3);
    // The ids the child saw, so the parent can check they resolve the same.
    std::vector<uint64_t> report = interned->stack_ids;
    report.insert(report.end(), interned->label_set_ids.begin(), interned->label_set_ids.end());
    size_t bytes = report.size() * sizeof(uint64_t);
    if (write(fds[1], report.data(), bytes) != static_cast<ssize_t>(bytes)) _exit(4);
    while (true) pause();
  }
  close(fds[1]);
  std::vector<uint64_t> report(210);
  size_t want = report.size() * sizeof(uint64_t), got = 0;
  while (got < want) {
    ssize_t n = read(fds[0], reinterpret_cast<char*>(report.data()) + got, want - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  ASSERT_EQ(got, want) << "child exited early, status " << wstatus;
  ASSERT_TRUE(WIFSIGNALED(wstatus));

  auto store = OpenOrDie(dir.db());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(*store->SeenBefore("agent-crash", 9));
  std::vector<uint64_t> stack_ids(report.begin(), report.begin() + 200);
  StatusOr<std::vector<ResolvedStack>> stacks = store->ResolveStacks(stack_ids);
  ASSERT_TRUE(stacks.ok()) << stacks.status().ToString();
  for (const ResolvedStack& s : *stacks) {
    ASSERT_EQ(s.frames.size(), 30u);
    EXPECT_NE(s.frames[0].function_name.find("_crash"), std::string::npos);
  }
  StatusOr<Labels> labels = store->LabelSet(report[200]);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->size(), 4u);
  // Re-interning the same batch finds everything: same ids, no new rows.
  StatusOr<InternedBatch> again = store->InternBatch(testing::RealisticBatch("crash", 10, 200, 30, 10));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->stack_ids, stack_ids);
  EXPECT_EQ(again->new_rows, 0u);
}

}  // namespace
}  // namespace warpscope::dictionary
