// The store's durability promise: every acknowledged batch survives a kill -9 of the
// server, and a re-sent batch is never stored twice nor wrongly dropped.
//
// A forked child runs a store the way the server does (background flushes
// every 20 ms or 50 rows, compaction every 100 ms) with 4 threads ingesting
// one-sample batches; after each OK it writes (thread, sequence) to a pipe.
// The parent SIGKILLs it mid-stream, reopens the data dir, checks every
// acknowledged batch is there exactly once and nothing is there twice, then
// re-sends everything as an agent would and checks again.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "storage/embedded/embedded_store_test_util.h"

namespace warpscope::embedded {
namespace {

using namespace testing;  // NOLINT
using storage::testing::OneSample;

constexpr int kThreads = 4;
constexpr int kMaxPerThread = 3000;
constexpr int64_t kAgentSpan = 1'000'000 * kSec;  // each agent's samples lie in its own time span

std::string Agent(int t) { return "agent-" + std::to_string(t); }
std::string Node(int t) { return "n" + std::to_string(t); }
int64_t TimeOf(int t, uint64_t seq) { return kT0 + t * kAgentSpan + static_cast<int64_t>(seq) * kSec; }

[[noreturn]] void ChildIngests(const std::string& data_dir, int write_fd, uint64_t first_seq) {
  EmbeddedStoreOptions options;
  options.data_dir = data_dir;
  options.retention_ns = 0;
  options.flush_interval_ns = 20'000'000;
  options.head_max_rows = 50;
  options.compaction_interval_ns = 100'000'000;
  options.compaction.min_inputs = 2;
  StatusOr<std::unique_ptr<EmbeddedProfileStore>> store = EmbeddedProfileStore::Open(options);
  if (!store.ok()) _exit(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t seq = first_seq; seq < first_seq + kMaxPerThread; ++seq) {
        StatusOr<storage::IngestResult> r = (*store)->Ingest(OneSample(Agent(t), seq, TimeOf(t, seq), 1, Node(t)));
        if (!r.ok() || r->duplicate) _exit(3);
        uint64_t report[2] = {static_cast<uint64_t>(t), seq};
        if (write(write_fd, report, sizeof(report)) != sizeof(report)) _exit(4);
      }
    });
  }
  for (auto& th : threads) th.join();
  while (true) pause();  // wait for the kill
}

// (thread, seq) -> value stored for that batch's time, over [first, last] seqs.
std::map<std::pair<int, uint64_t>, int64_t> StoredValues(EmbeddedProfileStore& store, uint64_t first, uint64_t last) {
  std::map<std::pair<int, uint64_t>, int64_t> out;
  for (int t = 0; t < kThreads; ++t) {
    for (uint64_t chunk = first; chunk <= last; chunk += 10'000) {
      storage::SeriesQuery q;
      q.profile.from_ns = TimeOf(t, chunk);
      q.profile.to_ns = TimeOf(t, std::min(chunk + 10'000, last + 1));
      q.profile.selector = *Selector::Parse("{node=\"" + Node(t) + "\"}");
      q.step_ns = kSec;
      StatusOr<std::vector<storage::Series>> series = store.SelectSeries(q);
      EXPECT_TRUE(series.ok()) << series.status().ToString();
      if (!series.ok()) return out;
      for (const storage::Series& s : *series) {
        for (const storage::SeriesPoint& p : s.points) {
          out[{t, static_cast<uint64_t>((p.time_ns - TimeOf(t, 0)) / kSec)}] += p.value;
        }
      }
    }
  }
  return out;
}

TEST(EmbeddedStoreCrashTest, AcknowledgedBatchesSurviveKill9AndResendsAreExact) {
  ScratchDir dir;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const uint64_t first_seq = 1 + round * 100'000;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      ChildIngests(dir.data(), fds[1], first_seq);
    }
    close(fds[1]);
    // Read acks for a while (rounds differ so the kill lands at different
    // moments of the flush/compaction cycle), then kill without warning.
    std::map<int, std::vector<uint64_t>> acked;
    size_t acks = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(round == 0 ? 700 : 1300);
    while (std::chrono::steady_clock::now() < deadline) {
      uint64_t report[2];
      ssize_t n = read(fds[0], report, sizeof(report));
      if (n != sizeof(report)) break;
      acked[static_cast<int>(report[0])].push_back(report[1]);
      if (++acks >= kThreads * kMaxPerThread) break;
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);
    // Acks already in the pipe were sent before the kill: they count too.
    uint64_t report[2];
    while (read(fds[0], report, sizeof(report)) == sizeof(report)) acked[static_cast<int>(report[0])].push_back(report[1]);
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited early with " << WEXITSTATUS(wstatus);
    ASSERT_GT(acked.size(), 0u);

    EmbeddedStoreOptions options = ManualOptions(dir.data());
    auto store = MustOpen(options);
    ASSERT_NE(store, nullptr);
    uint64_t last = first_seq;
    for (const auto& [t, seqs] : acked) last = std::max(last, *std::max_element(seqs.begin(), seqs.end()));
    last += 5;  // batches in flight at the kill: stored or not, never twice
    auto stored = StoredValues(*store, first_seq, last);
    size_t checked = 0;
    for (const auto& [t, seqs] : acked) {
      for (uint64_t seq : seqs) {
        EXPECT_EQ((stored[{t, seq}]), 1) << "acknowledged batch " << Agent(t) << " seq " << seq;
        ++checked;
      }
    }
    for (const auto& [key, value] : stored) EXPECT_LE(value, 1) << Agent(key.first) << " seq " << key.second;
    // The agents re-send what they had not seen acknowledged (their spool),
    // from a little before the kill on: acknowledged ones are duplicates,
    // the rest go in.
    uint64_t duplicates = 0, stored_now = 0;
    std::vector<uint64_t> agent_last(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      uint64_t last_acked = first_seq;
      for (uint64_t seq : acked[t]) last_acked = std::max(last_acked, seq);
      agent_last[t] = last_acked + 3;
      for (uint64_t seq = std::max(first_seq, last_acked - 5); seq <= agent_last[t]; ++seq) {
        StatusOr<storage::IngestResult> r = store->Ingest(OneSample(Agent(t), seq, TimeOf(t, seq), 1, Node(t)));
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ++(r->duplicate ? duplicates : stored_now);
        if (stored[{t, seq}] == 1) {
          EXPECT_TRUE(r->duplicate) << Agent(t) << " seq " << seq << " stored, yet accepted";
        }
      }
    }
    // Agents send in order and one at a time, so after the re-sends every
    // agent has every sequence up to its last, once.
    stored = StoredValues(*store, first_seq, last);
    for (int t = 0; t < kThreads; ++t) {
      for (uint64_t seq = first_seq; seq <= agent_last[t]; ++seq) {
        EXPECT_EQ((stored[{t, seq}]), 1) << Agent(t) << " " << seq;
      }
    }
    std::printf("round %d: %zu acks checked, %llu re-sends were duplicates, %llu stored; %zu segments\n", round,
                checked, static_cast<unsigned long long>(duplicates), static_cast<unsigned long long>(stored_now),
                store->state().segments);
  }
}

}  // namespace
}  // namespace warpscope::embedded
