// Failure tests that need a process of their own: a real kill -9 in the middle
// of appends, and a file size limit (RLIMIT_FSIZE, standing in for a full
// disk) that makes writes fail part way. Each forks a child that does the
// writing; children report through exit codes, stderr and a pipe, and never
// return into gtest.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "storage/embedded/wal/wal.h"
#include "storage/embedded/wal/wal_test_util.h"

namespace warpscope::wal {
namespace {

using testing::FileSize;
using testing::LogFiles;
using testing::MakePayload;
using testing::ReplayAll;
using testing::ScratchDir;

// Inside a child: report and fail without unwinding into gtest.
#define CHILD_CHECK(cond, detail)                                                                    \
  do {                                                                                               \
    if (!(cond)) {                                                                                   \
      std::fprintf(stderr, "child check failed at line %d: %s %s\n", __LINE__, #cond,               \
                   std::string(detail).c_str());                                                     \
      return 1;                                                                                      \
    }                                                                                                \
  } while (0)

int WaitForChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// ---- kill -9 ---------------------------------------------------------------------------------

// One acknowledgement, written to the pipe with a single write (< PIPE_BUF, so atomic).
struct Ack {
  uint64_t seq;
  uint32_t round;
  uint32_t thread;
  uint64_t index;
};

// Mostly small records with a large one now and then, so that commit groups
// come in many sizes. (A kill -9 leaves the page cache intact, so it hardly
// ever tears a record; TornTailAtEveryByteLength covers torn tails.)
std::string CrashPayload(uint32_t round, uint32_t thread, uint64_t index) {
  size_t size = 16 + (index * 131 + thread) % 2000;
  if (index % 16 == 5) size = 20000 + (index * 7919) % 45000;
  return MakePayload("r" + std::to_string(round) + "t" + std::to_string(thread) + "i" + std::to_string(index), size);
}

[[noreturn]] void AppendUntilKilled(const std::string& dir, int ack_fd, uint32_t round) {
  StatusOr<std::unique_ptr<WalWriter>> opened = WalWriter::Open(dir, {});
  if (!opened.ok()) {
    std::fprintf(stderr, "child: %s\n", opened.status().ToString().c_str());
    ::_exit(2);
  }
  WalWriter& w = **opened;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&w, ack_fd, round, t] {
      for (uint64_t i = 0;; ++i) {
        StatusOr<uint64_t> seq = w.Append(CrashPayload(round, t, i));
        if (!seq.ok()) {
          std::fprintf(stderr, "child: %s\n", seq.status().ToString().c_str());
          ::_exit(3);
        }
        const Ack ack{*seq, round, t, i};
        if (::write(ack_fd, &ack, sizeof(ack)) != static_cast<ssize_t>(sizeof(ack))) ::_exit(4);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ::_exit(0);
}

// Reads acks until the deadline, then kills the child and drains what it had
// acknowledged by then (the pipe keeps it after the child is gone).
std::string CollectAcksThenKill(pid_t pid, int fd, std::chrono::milliseconds run_for, int* status) {
  std::string bytes;
  char buf[1 << 16];
  const auto deadline = std::chrono::steady_clock::now() + run_for;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) break;  // the child died on its own
      bytes.append(buf, static_cast<size_t>(n));
    }
  }
  ::kill(pid, SIGKILL);
  *status = WaitForChild(pid);
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) bytes.append(buf, static_cast<size_t>(n));
  return bytes;
}

TEST(WalCrashTest, AcknowledgedRecordsSurviveKill9) {
  ScratchDir dir;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::map<uint64_t, Ack> acked;
  for (uint32_t round = 0; round < 6; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      AppendUntilKilled(dir.path(), fds[1], round);
    }
    ::close(fds[1]);
    int status = 0;
    const std::string bytes = CollectAcksThenKill(pid, fds[0], std::chrono::milliseconds(20 + rng() % 300), &status);
    ::close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child ended by itself, status " << status;
    ASSERT_EQ(bytes.size() % sizeof(Ack), 0u);
    size_t round_acks = 0;
    for (size_t off = 0; off < bytes.size(); off += sizeof(Ack)) {
      Ack ack;
      std::memcpy(&ack, bytes.data() + off, sizeof(ack));
      ASSERT_TRUE(acked.emplace(ack.seq, ack).second) << "seq " << ack.seq << " acknowledged twice";
      ++round_acks;
    }

    // Every acknowledged record is there, whole; the log reads without
    // damage (at most a torn tail) and its seqs are consecutive.
    testing::Replayed r = ReplayAll(dir.path());
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    for (size_t i = 0; i < r.seqs.size(); ++i) ASSERT_EQ(r.seqs[i], i + 1);
    for (const auto& [seq, ack] : acked) {
      ASSERT_LE(seq, r.seqs.size()) << "acknowledged seq " << seq << " lost";
      ASSERT_EQ(r.payloads[seq - 1], CrashPayload(ack.round, ack.thread, ack.index)) << "seq " << seq;
    }
    std::printf("round %u: %zu acks, %zu records in the log, torn tail %llu bytes\n", round, round_acks,
                r.seqs.size(), static_cast<unsigned long long>(r.stats.torn_tail_bytes));
  }
  EXPECT_GT(acked.size(), 0u);
}

// ---- File size limit -------------------------------------------------------------------------

// Appends, then lowers RLIMIT_FSIZE so the next records cannot fit (the
// first failing write is short, leaving a partial record), then raises it.
int FileSizeLimitChild(const std::string& dir) {
  ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of dying
  StatusOr<std::unique_ptr<WalWriter>> opened = WalWriter::Open(dir, {});
  CHILD_CHECK(opened.ok(), opened.status().ToString());
  WalWriter& w = **opened;
  for (int i = 0; i < 10; ++i) CHILD_CHECK(w.Append(MakePayload("before" + std::to_string(i), 1000)).ok(), "");
  const std::string file = LogFiles(dir).back();
  rlimit original{};
  CHILD_CHECK(::getrlimit(RLIMIT_FSIZE, &original) == 0, "");
  rlimit low = original;
  low.rlim_cur = FileSize(file) + 1500;  // room for one 1020-byte record and 480 bytes of the next
  CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &low) == 0, "");

  StatusOr<uint64_t> seq = w.Append(MakePayload("fits", 1000));
  CHILD_CHECK(seq.ok() && *seq == 11, seq.status().ToString());
  const uint64_t good_size = FileSize(file);
  for (int attempt = 0; attempt < 3; ++attempt) {
    seq = w.Append(MakePayload("too-big", 1000));
    CHILD_CHECK(!seq.ok(), "append past the limit succeeded");
    CHILD_CHECK(seq.status().code() == StatusCode::kResourceExhausted, seq.status().ToString());
    CHILD_CHECK(seq.status().message().find("File too large") != std::string::npos, seq.status().message());
    CHILD_CHECK(FileSize(file) == good_size, "partial write left behind");
  }
  CHILD_CHECK(w.stats().failed_appends == 3, "");

  CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &original) == 0, "");
  seq = w.Append(MakePayload("after", 1000));
  CHILD_CHECK(seq.ok(), seq.status().ToString());
  CHILD_CHECK(*seq == 12, "the failed appends' seqs are reused: got " + std::to_string(*seq));
  return 0;
}

TEST(WalCrashTest, FileSizeLimitFailsCleanlyAndAppendsResume) {
  ScratchDir dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(FileSizeLimitChild(dir.path()));
  const int status = WaitForChild(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed, status " << status;

  testing::Replayed r = ReplayAll(dir.path());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.seqs.size(), 12u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.payloads[i], MakePayload("before" + std::to_string(i), 1000));
  EXPECT_EQ(r.payloads[10], MakePayload("fits", 1000));
  EXPECT_EQ(r.payloads[11], MakePayload("after", 1000));  // never a failed "too-big"
  EXPECT_EQ(r.stats.torn_tail_bytes, 0u);
}

// The limit bites while a rotation writes the new file's header: the append
// fails, no half-made file is left, and the next append rotates properly.
int RotationFailureChild(const std::string& dir) {
  ::signal(SIGXFSZ, SIG_IGN);
  WalOptions options;
  options.max_file_size = 4096;
  StatusOr<std::unique_ptr<WalWriter>> opened = WalWriter::Open(dir, options);
  CHILD_CHECK(opened.ok(), opened.status().ToString());
  WalWriter& w = **opened;
  for (int i = 0; i < 3; ++i) CHILD_CHECK(w.Append(MakePayload("r" + std::to_string(i), 1000)).ok(), "");
  rlimit original{};
  CHILD_CHECK(::getrlimit(RLIMIT_FSIZE, &original) == 0, "");
  rlimit low = original;
  low.rlim_cur = 10;  // less than a file header
  CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &low) == 0, "");
  StatusOr<uint64_t> seq = w.Append(MakePayload("r3", 1000));  // needs a new file
  CHILD_CHECK(!seq.ok() && seq.status().code() == StatusCode::kResourceExhausted, seq.status().ToString());
  CHILD_CHECK(LogFiles(dir).size() == 1, "a file was left behind");
  std::vector<std::string> leftovers;
  CHILD_CHECK(ListWalFiles(dir, &leftovers).ok() && leftovers.empty(), "a .tmp file was left behind");
  CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &original) == 0, "");
  seq = w.Append(MakePayload("r3", 1000));
  CHILD_CHECK(seq.ok() && *seq == 4, seq.status().ToString());
  CHILD_CHECK(LogFiles(dir).size() == 2, "no rotation");
  return 0;
}

TEST(WalCrashTest, FileSizeLimitDuringRotation) {
  ScratchDir dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(RotationFailureChild(dir.path()));
  const int status = WaitForChild(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed, status " << status;
  testing::Replayed r = ReplayAll(dir.path());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(r.seqs.size(), 4u);
  EXPECT_EQ(r.payloads[3], MakePayload("r3", 1000));
}

// Several threads hit the limit at once: whole commit groups fail while other
// records wait behind them. Exactly the acknowledged records must be in the
// log, with consecutive seqs, once appends resume.
int ConcurrentFileSizeLimitChild(const std::string& dir) {
  ::signal(SIGXFSZ, SIG_IGN);
  StatusOr<std::unique_ptr<WalWriter>> opened = WalWriter::Open(dir, {});
  CHILD_CHECK(opened.ok(), opened.status().ToString());
  WalWriter& w = **opened;
  std::mutex mu;
  std::map<uint64_t, std::string> acked;
  std::atomic<int> failures{0};
  std::atomic<int> unexpected{0};
  auto run_phase = [&](const std::string& phase, int per_thread, bool may_fail) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          std::string payload = MakePayload(phase + std::to_string(t) + "/" + std::to_string(i), 1000);
          StatusOr<uint64_t> seq = w.Append(payload);
          if (seq.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            if (!acked.emplace(*seq, std::move(payload)).second) ++unexpected;
          } else if (may_fail && seq.status().code() == StatusCode::kResourceExhausted) {
            ++failures;
          } else {
            std::fprintf(stderr, "child: %s\n", seq.status().ToString().c_str());
            ++unexpected;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  };
  run_phase("a", 20, false);
  rlimit original{};
  CHILD_CHECK(::getrlimit(RLIMIT_FSIZE, &original) == 0, "");
  rlimit low = original;
  low.rlim_cur = FileSize(LogFiles(dir).back()) + 8 * 1024 + 300;
  CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &low) == 0, "");
  run_phase("b", 30, true);
  CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &original) == 0, "");
  run_phase("c", 10, false);
  CHILD_CHECK(unexpected == 0, "");
  CHILD_CHECK(failures > 0, "the limit never bit");
  const uint64_t acked_count = acked.size();
  CHILD_CHECK(w.next_seq() == acked_count + 1, "seqs are not consecutive");
  opened.value().reset();  // close before replaying

  testing::Replayed r = ReplayAll(dir);
  CHILD_CHECK(r.status.ok(), r.status.ToString());
  CHILD_CHECK(r.seqs.size() == acked_count, std::to_string(r.seqs.size()) + " records, " +
                                                std::to_string(acked_count) + " acknowledged");
  for (size_t i = 0; i < r.seqs.size(); ++i) {
    CHILD_CHECK(r.seqs[i] == i + 1, "");
    CHILD_CHECK(acked.at(r.seqs[i]) == r.payloads[i], "seq " + std::to_string(r.seqs[i]) + " holds another payload");
  }
  std::printf("child: %llu acknowledged, %d failed while the limit was low\n",
              static_cast<unsigned long long>(acked_count), failures.load());
  std::fflush(stdout);
  return 0;
}

TEST(WalCrashTest, FileSizeLimitWithConcurrentAppenders) {
  ScratchDir dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(ConcurrentFileSizeLimitChild(dir.path()));
  const int status = WaitForChild(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed, status " << status;
  testing::Replayed r = ReplayAll(dir.path());
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_GT(r.seqs.size(), 120u);  // phases a and c cannot fail: 4 * (20 + 10)
}

}  // namespace
}  // namespace warpscope::wal
