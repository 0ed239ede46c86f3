#include "agent/export/spool.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/file_util.h"

namespace warpscope {
namespace {

namespace fs = std::filesystem;

// Deterministic per-sequence content, so a batch read back can be checked
// against what was pushed even across process boundaries.
std::string Payload(uint64_t seq, size_t len) {
  std::string out(len, '\0');
  uint64_t x = seq * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < len; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x);
  }
  return out;
}

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "spool_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/spool";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<Spool> MustOpen(uint64_t max_bytes) {
    auto spool = Spool::Open(dir_, max_bytes);
    EXPECT_TRUE(spool.ok()) << spool.status().ToString();
    return spool.ok() ? std::move(spool).value() : nullptr;
  }
  std::string PathFor(uint64_t seq) const { return dir_ + "/" + Spool::FileNameFor(seq); }
  // Every name in the spool dir except the lock file, sorted.
  std::vector<std::string> DirNames() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename() != "LOCK") names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  void WriteRaw(const std::string& name, const std::string& data) const {
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/" + name, data).ok());
  }
  std::string ReadRaw(uint64_t seq) const {
    auto data = ReadFileToString(PathFor(seq));
    EXPECT_TRUE(data.ok());
    return data.ok() ? *data : std::string();
  }

  std::string root_;
  std::string dir_;
};

TEST_F(SpoolTest, PushPeekPopInOrder) {
  auto spool = MustOpen(1 << 20);
  ASSERT_NE(spool, nullptr);
  EXPECT_TRUE(spool->Empty());
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  for (uint64_t seq = 10; seq < 15; ++seq) ASSERT_TRUE(spool->Push(seq, Payload(seq, 100 + seq)).ok());
  EXPECT_EQ(spool->size(), 5u);
  EXPECT_EQ(spool->bytes(), 5 * kSpoolHeaderSize + (110 + 111 + 112 + 113 + 114));
  EXPECT_EQ(spool->newest_sequence(), 14u);

  for (uint64_t seq = 10; seq < 15; ++seq) {
    auto batch = spool->Peek();
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE(batch->has_value());
    EXPECT_EQ((*batch)->sequence, seq);
    EXPECT_EQ((*batch)->data, Payload(seq, 100 + seq));
    // Peek does not consume.
    EXPECT_EQ((*spool->Peek())->sequence, seq);
    ASSERT_TRUE(spool->Pop(seq).ok());
  }
  EXPECT_TRUE(spool->Empty());
  EXPECT_EQ(spool->bytes(), 0u);
  EXPECT_FALSE(spool->Peek()->has_value());
  EXPECT_EQ(spool->stats().pushed, 5u);
  EXPECT_EQ(spool->stats().popped, 5u);
  EXPECT_TRUE(DirNames().empty());
}

TEST_F(SpoolTest, EmptyBatchRoundTrips) {
  auto spool = MustOpen(1 << 20);
  ASSERT_TRUE(spool->Push(1, "").ok());
  spool.reset();
  spool = MustOpen(1 << 20);
  auto batch = spool->Peek();
  ASSERT_TRUE(batch.ok() && batch->has_value());
  EXPECT_EQ((*batch)->data, "");
  EXPECT_EQ(spool->stats().corrupt_dropped, 0u);
}

TEST_F(SpoolTest, PopOfNotOldestIsInvalidArgument) {
  auto spool = MustOpen(1 << 20);
  EXPECT_EQ(spool->Pop(1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(spool->Push(1, "a").ok());
  ASSERT_TRUE(spool->Push(2, "b").ok());
  EXPECT_EQ(spool->Pop(2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spool->size(), 2u);
  EXPECT_TRUE(spool->Pop(1).ok());
}

TEST_F(SpoolTest, PushOfOldSequenceIsInvalidArgument) {
  auto spool = MustOpen(1 << 20);
  ASSERT_TRUE(spool->Push(5, "a").ok());
  EXPECT_EQ(spool->Push(5, "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spool->Push(4, "b").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(spool->size(), 1u);
  EXPECT_EQ((*spool->Peek())->data, "a");
}

TEST_F(SpoolTest, ReopenKeepsOrderAndContent) {
  {
    auto spool = MustOpen(1 << 20);
    // Sequences beyond 10 digits check the zero padding sorts correctly.
    for (uint64_t seq : {7ull, 99ull, 100ull, 12345678901ull}) ASSERT_TRUE(spool->Push(seq, Payload(seq, 300)).ok());
    ASSERT_TRUE(spool->Pop(7).ok());
  }
  auto spool = MustOpen(1 << 20);
  EXPECT_EQ(spool->size(), 3u);
  EXPECT_EQ(spool->bytes(), 3 * (kSpoolHeaderSize + 300));
  EXPECT_EQ(spool->stats().corrupt_dropped, 0u);
  EXPECT_EQ(spool->newest_sequence(), 12345678901ull);
  for (uint64_t seq : {99ull, 100ull, 12345678901ull}) {
    auto batch = spool->Peek();
    ASSERT_TRUE(batch.ok() && batch->has_value());
    EXPECT_EQ((*batch)->sequence, seq);
    EXPECT_EQ((*batch)->data, Payload(seq, 300));
    ASSERT_TRUE(spool->Pop(seq).ok());
  }
}

TEST_F(SpoolTest, OnlyOneOwnerPerDirectory) {
  auto first = MustOpen(1 << 20);
  auto second = Spool::Open(dir_, 1 << 20);
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  first.reset();
  EXPECT_TRUE(Spool::Open(dir_, 1 << 20).ok());
}

TEST_F(SpoolTest, BoundDropsOldestFirstWithExactCounts) {
  constexpr uint64_t kFile = kSpoolHeaderSize + 68;  // 100 bytes on disk
  auto spool = MustOpen(3 * kFile + 50);
  for (uint64_t seq = 1; seq <= 5; ++seq) ASSERT_TRUE(spool->Push(seq, Payload(seq, 68)).ok());
  EXPECT_EQ(spool->size(), 3u);
  EXPECT_EQ(spool->bytes(), 3 * kFile);
  EXPECT_EQ(spool->stats().pushed, 5u);
  EXPECT_EQ(spool->stats().dropped_batches, 2u);
  EXPECT_EQ(spool->stats().dropped_bytes, 2 * kFile);
  EXPECT_EQ((*spool->Peek())->sequence, 3u);
  EXPECT_EQ(DirNames(), (std::vector<std::string>{Spool::FileNameFor(3), Spool::FileNameFor(4),
                                                  Spool::FileNameFor(5)}));

  // A large batch evicts as many old ones as it needs, never itself.
  ASSERT_TRUE(spool->Push(6, Payload(6, 2 * kFile + 50 - kSpoolHeaderSize)).ok());
  EXPECT_EQ(spool->size(), 2u);  // 5 and 6: 100 + 250 = 350
  EXPECT_EQ((*spool->Peek())->sequence, 5u);
  EXPECT_EQ(spool->stats().dropped_batches, 4u);
  EXPECT_EQ(spool->stats().dropped_bytes, 4 * kFile);
  EXPECT_LE(spool->bytes(), spool->max_bytes());
}

TEST_F(SpoolTest, ReopenWithSmallerBoundEvictsOldest) {
  {
    auto spool = MustOpen(1 << 20);
    for (uint64_t seq = 1; seq <= 4; ++seq) ASSERT_TRUE(spool->Push(seq, Payload(seq, 68)).ok());
  }
  auto spool = MustOpen(2 * 100);
  EXPECT_EQ(spool->size(), 2u);
  EXPECT_EQ((*spool->Peek())->sequence, 3u);
  EXPECT_EQ(spool->stats().dropped_batches, 2u);
  EXPECT_EQ(spool->stats().dropped_bytes, 200u);
  EXPECT_EQ(spool->stats().corrupt_dropped, 0u);
}

TEST_F(SpoolTest, BatchLargerThanBoundIsRejectedAndCounted) {
  auto spool = MustOpen(100);
  ASSERT_TRUE(spool->Push(1, Payload(1, 10)).ok());
  Status s = spool->Push(2, Payload(2, 69));  // 101 bytes on disk
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(spool->stats().dropped_batches, 1u);
  EXPECT_EQ(spool->stats().dropped_bytes, 101u);
  EXPECT_EQ(spool->stats().pushed, 1u);
  // The old batch survives a rejected push; nothing of the new one is on disk.
  EXPECT_EQ(DirNames(), std::vector<std::string>{Spool::FileNameFor(1)});
  // Exactly max_bytes fits (and evicts the rest).
  ASSERT_TRUE(spool->Push(3, Payload(3, 68)).ok());
  EXPECT_EQ(spool->size(), 1u);
  EXPECT_EQ((*spool->Peek())->sequence, 3u);
}

TEST_F(SpoolTest, CorruptFilesAreDroppedAndCountedOnOpen) {
  {
    auto spool = MustOpen(1 << 20);
    for (uint64_t seq = 1; seq <= 8; ++seq) ASSERT_TRUE(spool->Push(seq, Payload(seq, 200)).ok());
  }
  std::string flipped = ReadRaw(2);
  flipped[kSpoolHeaderSize + 17] ^= 0x01;
  WriteRaw(Spool::FileNameFor(2), flipped);
  WriteRaw(Spool::FileNameFor(3), ReadRaw(3).substr(0, kSpoolHeaderSize + 100));  // truncated payload
  WriteRaw(Spool::FileNameFor(4), ReadRaw(4).substr(0, 10));                      // truncated header
  std::string magic = ReadRaw(5);
  magic[0] = 'X';
  WriteRaw(Spool::FileNameFor(5), magic);
  std::string version = ReadRaw(6);
  version[8] = 2;  // a future version this build cannot read
  WriteRaw(Spool::FileNameFor(6), version);
  WriteRaw(Spool::FileNameFor(9), "");                 // zero-length
  WriteRaw(Spool::FileNameFor(10), ReadRaw(1));        // header names sequence 1
  WriteRaw("notes.txt", "hello");                      // not ours: left alone
                                                       // malformed names of ours:
  WriteRaw("batch-12.wsb", Spool::EncodeFile(12, "x"));
  WriteRaw("batch-0000000000000000000x.wsb", "x");
  std::string grown = ReadRaw(7) + "tail";             // trailing bytes after the payload
  WriteRaw(Spool::FileNameFor(7), grown);
  fs::create_directory(dir_ + "/subdir");              // left alone: not ours to delete

  auto spool = MustOpen(1 << 20);
  EXPECT_EQ(spool->stats().corrupt_dropped, 10u);
  EXPECT_EQ(spool->size(), 2u);
  EXPECT_EQ(DirNames(),
            (std::vector<std::string>{Spool::FileNameFor(1), Spool::FileNameFor(8), "notes.txt", "subdir"}));
  EXPECT_EQ((*spool->Peek())->data, Payload(1, 200));
  ASSERT_TRUE(spool->Pop(1).ok());
  EXPECT_EQ((*spool->Peek())->data, Payload(8, 200));
}

TEST_F(SpoolTest, CorruptFilesFoundOnPeekAreDroppedAndCounted) {
  auto spool = MustOpen(1 << 20);
  for (uint64_t seq = 1; seq <= 5; ++seq) ASSERT_TRUE(spool->Push(seq, Payload(seq, 200)).ok());
  // Damage behind the spool's back, as a failing disk or a person would.
  std::string flipped = ReadRaw(1);
  flipped[kSpoolHeaderSize] ^= 0x80;
  WriteRaw(Spool::FileNameFor(1), flipped);
  WriteRaw(Spool::FileNameFor(2), "");
  ASSERT_EQ(::unlink(PathFor(3).c_str()), 0);
  ASSERT_EQ(::truncate(PathFor(5).c_str(), 100), 0);

  auto batch = spool->Peek();
  ASSERT_TRUE(batch.ok() && batch->has_value());
  EXPECT_EQ((*batch)->sequence, 4u);
  EXPECT_EQ((*batch)->data, Payload(4, 200));
  EXPECT_EQ(spool->stats().corrupt_dropped, 3u);
  EXPECT_EQ(spool->size(), 2u);
  EXPECT_EQ(spool->bytes(), 2 * (kSpoolHeaderSize + 200));
  ASSERT_TRUE(spool->Pop(4).ok());
  batch = spool->Peek();
  ASSERT_TRUE(batch.ok());
  EXPECT_FALSE(batch->has_value());
  EXPECT_EQ(spool->stats().corrupt_dropped, 4u);
  EXPECT_TRUE(spool->Empty());
  EXPECT_EQ(spool->bytes(), 0u);
  EXPECT_TRUE(DirNames().empty());
}

TEST_F(SpoolTest, LeftoverTempFilesAreRemovedNotCounted) {
  {
    auto spool = MustOpen(1 << 20);
    ASSERT_TRUE(spool->Push(1, "one").ok());
  }
  WriteRaw(Spool::FileNameFor(2) + ".tmp", Spool::EncodeFile(2, "two").substr(0, 20));
  WriteRaw(Spool::FileNameFor(3) + ".tmp", Spool::EncodeFile(3, "three"));  // complete but never renamed
  auto spool = MustOpen(1 << 20);
  EXPECT_EQ(DirNames(), std::vector<std::string>{Spool::FileNameFor(1)});
  EXPECT_EQ(spool->size(), 1u);
  EXPECT_EQ(spool->stats().corrupt_dropped, 0u);
}

// Kills a pushing child at random moments: after each kill, every file is
// either complete and valid or gone, and every acknowledged push that the
// bound did not evict is still there.
TEST_F(SpoolTest, SurvivesSigkillMidPush) {
  constexpr size_t kLen = 3000;
  constexpr uint64_t kFile = kSpoolHeaderSize + kLen;
  constexpr uint64_t kCap = 16;
  constexpr uint64_t kMaxBytes = kCap * kFile;
  std::mt19937 rng(12345);
  uint64_t next_seq = 1;
  uint64_t total_acked = 0;
  int kills_with_temp_left = 0;

  for (int round = 0; round < 12; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      auto spool = Spool::Open(dir_, kMaxBytes);
      if (!spool.ok()) ::_exit(2);
      for (uint64_t seq = next_seq;; ++seq) {
        if (!(*spool)->Push(seq, Payload(seq, kLen)).ok()) ::_exit(3);
        if (::write(fds[1], &seq, sizeof(seq)) != sizeof(seq)) ::_exit(4);
      }
    }
    ::close(fds[1]);
    ::usleep(std::uniform_int_distribution<int>(2000, 40000)(rng));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with " << WEXITSTATUS(wstatus);

    std::vector<uint64_t> acked;
    uint64_t seq = 0;
    while (::read(fds[0], &seq, sizeof(seq)) == sizeof(seq)) acked.push_back(seq);
    ::close(fds[0]);
    total_acked += acked.size();
    for (const std::string& name : DirNames()) kills_with_temp_left += name.ends_with(".tmp");

    auto spool = MustOpen(kMaxBytes);
    ASSERT_NE(spool, nullptr);
    EXPECT_EQ(spool->stats().corrupt_dropped, 0u) << "round " << round;
    for (const std::string& name : DirNames()) EXPECT_FALSE(name.ends_with(".tmp")) << name;

    // What is on disk: a contiguous run of sequences, each byte-exact.
    std::vector<uint64_t> present;
    for (const std::string& name : DirNames()) {
      present.push_back(std::stoull(name.substr(6, 20)));
      EXPECT_EQ(ReadRaw(present.back()), Spool::EncodeFile(present.back(), Payload(present.back(), kLen)));
    }
    ASSERT_FALSE(present.empty()) << "round " << round;
    for (size_t i = 1; i < present.size(); ++i) EXPECT_EQ(present[i], present[i - 1] + 1);
    EXPECT_LE(present.size(), kCap);
    EXPECT_GE(present.size(), std::min<uint64_t>(kCap, total_acked));
    EXPECT_EQ(spool->size(), present.size());
    if (!acked.empty()) {
      // Acknowledged means durable: everything acked and not evicted is here,
      // and at most the one batch in flight beyond it.
      for (uint64_t a : acked) {
        if (a >= present.front()) {
          EXPECT_TRUE(std::binary_search(present.begin(), present.end(), a)) << a;
        }
      }
      EXPECT_GE(present.back(), acked.back());
      EXPECT_LE(present.back(), acked.back() + 1);
    }
    EXPECT_EQ((*spool->Peek())->sequence, present.front());
    next_seq = present.back() + 1;
  }
  EXPECT_GT(total_acked, 0u);
  // Not asserted (timing-dependent), but shows whether kills landed mid-write.
  RecordProperty("kills_with_temp_left", kills_with_temp_left);
}

// A write that fails half-way (file size limit here; ENOSPC behaves the same)
// returns an error, leaves nothing behind, and the spool keeps working.
TEST_F(SpoolTest, FailedWriteLeavesNoPartialFile) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Exit codes name the failed step; gtest assertions do not work here.
    ::signal(SIGXFSZ, SIG_IGN);
    auto spool = Spool::Open(dir_, 1 << 20);
    if (!spool.ok()) ::_exit(10);
    if (!(*spool)->Push(1, Payload(1, 100)).ok()) ::_exit(11);
    struct rlimit old {};
    if (::getrlimit(RLIMIT_FSIZE, &old) != 0) ::_exit(12);
    struct rlimit small = old;
    small.rlim_cur = 2000;
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) ::_exit(13);
    Status s = (*spool)->Push(2, Payload(2, 10000));
    if (s.ok()) ::_exit(14);
    if (::access((PathFor(2)).c_str(), F_OK) == 0) ::_exit(15);
    if (::access((PathFor(2) + ".tmp").c_str(), F_OK) == 0) ::_exit(16);
    if ((*spool)->size() != 1 || (*spool)->bytes() != kSpoolHeaderSize + 100) ::_exit(17);
    if (::setrlimit(RLIMIT_FSIZE, &old) != 0) ::_exit(18);
    if (!(*spool)->Push(3, Payload(3, 10000)).ok()) ::_exit(19);
    if ((*spool)->size() != 2 || (*spool)->stats().pushed != 2) ::_exit(20);
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_EQ(WEXITSTATUS(wstatus), 0);

  auto spool = MustOpen(1 << 20);
  EXPECT_EQ(spool->stats().corrupt_dropped, 0u);
  EXPECT_EQ(DirNames(), (std::vector<std::string>{Spool::FileNameFor(1), Spool::FileNameFor(3)}));
  EXPECT_EQ((*spool->Peek())->data, Payload(1, 100));
  ASSERT_TRUE(spool->Pop(1).ok());
  EXPECT_EQ((*spool->Peek())->data, Payload(3, 10000));
}

}  // namespace
}  // namespace warpscope
