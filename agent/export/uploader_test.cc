#include "agent/export/uploader.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "tests/fakes/fake_ingest_server.h"
#include "agent/export/ingest_batch_encoder.h"
#include "tests/support/test_profile.h"
#include "tests/support/wait_for.h"

namespace warpscope {
namespace {

using std::chrono::milliseconds;
using testing::FakeIngestServer;
using testing::WaitFor;
using Clock = std::chrono::steady_clock;

constexpr char kAgentId[] = "00112233445566778899aabbccddeeff";
constexpr char kToken[] = "s3cret-token";

std::string TempDir() {
  char tmpl[] = "/tmp/ws_uploader_XXXXXX";
  return mkdtemp(tmpl);
}

std::string Body(uint64_t sequence) {
  auto batch = EncodeIngestBatch(testing::MakeTestProfile(), {kAgentId, sequence, "node-a"}, {});
  EXPECT_TRUE(batch.ok());
  auto body = CompressIngestBatch(*batch);
  EXPECT_TRUE(body.ok());
  return *body;
}

UploaderOptions FastOptions(const std::string& url, const std::string& spool_dir) {
  UploaderOptions o;
  o.server.server_url = url;
  o.server.token = kToken;
  o.spool_dir = spool_dir;
  o.initial_backoff = milliseconds(40);
  o.max_backoff = milliseconds(200);
  o.server.connect_timeout = milliseconds(1000);
  o.server.request_timeout = milliseconds(5000);
  o.shutdown_timeout = milliseconds(2000);
  o.jitter_seed = 1;
  return o;
}

std::unique_ptr<Uploader> MakeUploader(const UploaderOptions& o) {
  auto u = Uploader::Create(o);
  EXPECT_TRUE(u.ok()) << u.status().ToString();
  return u.ok() ? std::move(u).value() : nullptr;
}

TEST(UploaderPolicyTest, StatusClasses) {
  EXPECT_EQ(ClassifyHttpStatus(200), UploadOutcome::kAccepted);
  EXPECT_EQ(ClassifyHttpStatus(204), UploadOutcome::kAccepted);
  EXPECT_EQ(ClassifyHttpStatus(400), UploadOutcome::kRejected);
  EXPECT_EQ(ClassifyHttpStatus(404), UploadOutcome::kRejected);
  EXPECT_EQ(ClassifyHttpStatus(413), UploadOutcome::kRejected);
  EXPECT_EQ(ClassifyHttpStatus(415), UploadOutcome::kRejected);
  EXPECT_EQ(ClassifyHttpStatus(401), UploadOutcome::kAuthRetry);
  EXPECT_EQ(ClassifyHttpStatus(403), UploadOutcome::kAuthRetry);
  EXPECT_EQ(ClassifyHttpStatus(408), UploadOutcome::kRetry);
  EXPECT_EQ(ClassifyHttpStatus(429), UploadOutcome::kRetry);
  EXPECT_EQ(ClassifyHttpStatus(500), UploadOutcome::kRetry);
  EXPECT_EQ(ClassifyHttpStatus(503), UploadOutcome::kRetry);
  EXPECT_EQ(ClassifyHttpStatus(302), UploadOutcome::kRetry);
}

TEST(UploaderPolicyTest, BackoffDoublesWithJitterUpToTheCap) {
  const milliseconds one(1000), cap(60000);
  EXPECT_EQ(BackoffDelay(one, cap, 0, 0.5), milliseconds(0));
  EXPECT_EQ(BackoffDelay(one, cap, 1, 0.0), milliseconds(500));
  EXPECT_EQ(BackoffDelay(one, cap, 1, 0.999), milliseconds(999));
  EXPECT_EQ(BackoffDelay(one, cap, 2, 0.0), milliseconds(1000));
  EXPECT_EQ(BackoffDelay(one, cap, 3, 0.0), milliseconds(2000));
  EXPECT_EQ(BackoffDelay(one, cap, 7, 0.0), milliseconds(30000));
  EXPECT_EQ(BackoffDelay(one, cap, 8, 0.0), milliseconds(30000)) << "64 s capped at 60 s";
  EXPECT_EQ(BackoffDelay(one, cap, 8, 0.9999), milliseconds(59997));
  EXPECT_EQ(BackoffDelay(one, cap, 1000, 0.0), milliseconds(30000)) << "no overflow";
}

// However long the server was down, the agent notices it came back within
// the backoff's cap: 10 s by default, each wait drawn from [5 s, 10 s] so a
// fleet does not retry in lockstep.
TEST(UploaderPolicyTest, DefaultBackoffIsCappedAtTenSecondsWithJitter) {
  const UploaderOptions defaults;
  EXPECT_EQ(defaults.max_backoff, milliseconds(10000));
  milliseconds longest(0);
  for (uint64_t failures = 1; failures <= 200; ++failures) {
    longest = std::max(longest, BackoffDelay(defaults.initial_backoff, defaults.max_backoff, failures, 0.9999));
  }
  EXPECT_LE(longest, milliseconds(10000));
  EXPECT_EQ(BackoffDelay(defaults.initial_backoff, defaults.max_backoff, 200, 0.0), milliseconds(5000));
}

// The same with the fake server: down long enough for the backoff to reach
// its default cap (six failures from the default 1 s), then back.
TEST(UploaderTest, ServerThatComesBackIsNoticedWithinTheDefaultBackoffCap) {
  FakeIngestServer server;
  server.SetDefaultStatus(503);
  UploaderOptions o;
  o.server.server_url = server.url();
  o.spool_dir = TempDir();
  o.jitter_seed = 7;
  auto up = MakeUploader(o);
  up->Start();
  up->PostBatch(1, Body(1));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().consecutive_failures >= 6; }, milliseconds(60000)));
  const UploaderStats down = up->StatsFromAnyThread();
  EXPECT_LE(down.current_backoff, milliseconds(10000)) << "1 s doubled five times is 32 s, capped";
  EXPECT_GE(down.current_backoff, milliseconds(5000));
  const auto back = Clock::now();
  server.SetDefaultStatus(200);
  ASSERT_TRUE(server.WaitForStored(1, milliseconds(30000)));
  EXPECT_LE(Clock::now() - back, milliseconds(10000) + milliseconds(1500)) << "noticed within the cap";
  up->Stop();
}

TEST(UploaderTest, DeliversInOrderWithHeadersAndAZstdProtobufBody) {
  FakeIngestServer server;
  auto up = MakeUploader(FastOptions(server.url(), TempDir()));
  up->Start();
  for (uint64_t s = 1; s <= 3; ++s) up->PostBatch(s, Body(s));
  ASSERT_TRUE(server.WaitForStored(3));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 2, 3}));
  for (const auto& r : server.requests()) {
    EXPECT_EQ(r.authorization, std::string("Bearer ") + kToken);
    EXPECT_EQ(r.content_type, "application/x-protobuf");
    EXPECT_EQ(r.content_encoding, "zstd");
    ASSERT_TRUE(r.parsed);
    EXPECT_EQ(r.batch.agent_id(), kAgentId);
    EXPECT_EQ(r.batch.samples_size(), 7) << "the whole batch arrived";
  }
  up->Stop();
  const UploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.batches_posted, 3u);
  EXPECT_EQ(s.batches_sent, 3u);
  EXPECT_EQ(s.batches_spooled, 3u) << "every batch is on disk from the moment it is made";
  EXPECT_EQ(s.batches_unspooled, 0u);
  EXPECT_EQ(s.spooled, 0u) << "and gone from it once acknowledged";
  EXPECT_EQ(s.last_http_status, 200);
}

TEST(UploaderTest, TransientErrorsSpoolAndRetryInOrderWithGrowingBackoff) {
  FakeIngestServer server;
  server.Script({503, 500, 503});
  auto up = MakeUploader(FastOptions(server.url(), TempDir()));
  up->Start();
  up->PostBatch(1, Body(1));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().consecutive_failures >= 1; }));
  up->PostBatch(2, Body(2));
  up->PostBatch(3, Body(3));
  ASSERT_TRUE(server.WaitForStored(3));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(server.request_sequences(), (std::vector<uint64_t>{1, 1, 1, 1, 2, 3})) << "oldest first, always";
  // Waits between attempts: [20, 40], [40, 80], [80, 160] ms.
  const auto requests = server.requests();
  const milliseconds min_gap[] = {milliseconds(18), milliseconds(38), milliseconds(78)};
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(requests[i + 1].at - requests[i].at, min_gap[i]) << "retry " << i + 1;
  }
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().spooled == 0; }));
  const UploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.send_failures, 3u);
  EXPECT_EQ(s.consecutive_failures, 0u) << "reset by the success";
  EXPECT_EQ(s.current_backoff, milliseconds(0));
  EXPECT_EQ(s.batches_sent, 3u);
  EXPECT_GE(s.batches_spooled, 1u) << "the failed batch went to the spool";
  EXPECT_EQ(s.spool_dropped_batches, 0u);
}

TEST(UploaderTest, BackoffStateIsVisibleWhileTheServerFails) {
  FakeIngestServer server;
  server.SetDefaultStatus(503);
  auto o = FastOptions(server.url(), TempDir());
  o.initial_backoff = milliseconds(10);
  o.max_backoff = milliseconds(80);
  auto up = MakeUploader(o);
  up->Start();
  up->PostBatch(1, Body(1));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().consecutive_failures >= 6; }));
  const UploaderStats s = up->StatsFromAnyThread();
  EXPECT_GE(s.current_backoff, milliseconds(40)) << "capped d=80 drawn from [40, 80]";
  EXPECT_LE(s.current_backoff, milliseconds(80));
  EXPECT_EQ(s.spooled, 1u);
  EXPECT_EQ(s.last_http_status, 503);
  server.SetDefaultStatus(200);
  ASSERT_TRUE(server.WaitForStored(1));
}

TEST(UploaderTest, LostAckIsResentWithTheSameSequenceAndAcknowledgedAsDuplicate) {
  FakeIngestServer server;
  server.Script({FakeIngestServer::kStoreThenLoseAck});
  auto up = MakeUploader(FastOptions(server.url(), TempDir()));
  up->Start();
  up->PostBatch(10, Body(10));
  up->PostBatch(11, Body(11));
  ASSERT_TRUE(server.WaitForStored(2));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().batches_sent == 2; }));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{10, 11})) << "stored once";
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].batch.sequence(), 10u);
  EXPECT_EQ(requests[1].batch.sequence(), 10u) << "re-sent unchanged";
  EXPECT_TRUE(requests[1].duplicate);
  EXPECT_EQ(requests[1].batch.SerializeAsString(), requests[0].batch.SerializeAsString());
  EXPECT_EQ(requests[2].batch.sequence(), 11u);
  EXPECT_FALSE(requests[2].duplicate);
}

TEST(UploaderTest, PermanentRejectionDropsOnlyThatBatch) {
  FakeIngestServer server;
  server.Script({400, 413});
  auto up = MakeUploader(FastOptions(server.url(), TempDir()));
  up->Start();
  for (uint64_t s = 1; s <= 3; ++s) up->PostBatch(s, Body(s));
  ASSERT_TRUE(server.WaitForStored(1));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().batches_sent == 1; }));
  EXPECT_EQ(server.request_sequences(), (std::vector<uint64_t>{1, 2, 3})) << "no retries of a rejected batch";
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{3}));
  const UploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.batches_rejected, 2u);
  EXPECT_EQ(s.send_failures, 0u);
  EXPECT_EQ(s.spooled, 0u) << "rejected batches leave the spool too";
}

TEST(UploaderTest, WrongTokenKeepsBatchesAndRetries) {
  FakeIngestServer server;
  server.Script({401, 403, 401});
  auto up = MakeUploader(FastOptions(server.url(), TempDir()));
  up->Start();
  up->PostBatch(1, Body(1));
  up->PostBatch(2, Body(2));
  ASSERT_TRUE(server.WaitForStored(2));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(server.request_sequences(), (std::vector<uint64_t>{1, 1, 1, 1, 2}));
  const UploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.auth_failures, 3u);
  EXPECT_EQ(s.batches_rejected, 0u);
}

TEST(UploaderTest, ServerDownAtShutdownSpoolsAndARestartedUploaderSendsInOrder) {
  const std::string spool = TempDir() + "/spool";
  std::string url;
  {
    FakeIngestServer gone;  // a port that refuses connections once this is stopped
    url = gone.url();
  }
  auto down = FastOptions(url, spool);
  auto up = MakeUploader(down);
  up->Start();
  for (uint64_t s = 1; s <= 3; ++s) up->PostBatch(s, Body(s));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().consecutive_failures >= 1; }));
  const auto t0 = Clock::now();
  up->Stop();
  EXPECT_LT(Clock::now() - t0, milliseconds(1500)) << "shutdown does not wait out the backoff";
  EXPECT_EQ(up->StatsFromAnyThread().spooled, 3u);
  EXPECT_EQ(up->StatsFromAnyThread().batches_dropped, 0u);
  up.reset();

  FakeIngestServer server;
  auto again = MakeUploader(FastOptions(server.url(), spool));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->newest_spooled_sequence(), 3u);
  again->Start();
  again->PostBatch(4, Body(4));
  ASSERT_TRUE(server.WaitForStored(4));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(server.request_sequences(), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST(UploaderTest, HealthyShutdownSendsTheLastBatch) {
  FakeIngestServer server;
  auto up = MakeUploader(FastOptions(server.url(), TempDir()));
  up->Start();
  up->PostBatch(5, Body(5));
  up->Stop();
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{5}));
  EXPECT_EQ(up->StatsFromAnyThread().spooled, 0u);
}

TEST(UploaderTest, StuckServerNeverBlocksPostBatchAndOrderSurvives) {
  FakeIngestServer server;
  server.Block();
  auto o = FastOptions(server.url(), TempDir());
  o.max_queued_batches = 2;
  o.server.request_timeout = milliseconds(20000);
  auto up = MakeUploader(o);
  up->Start();
  up->PostBatch(1, Body(1));
  ASSERT_TRUE(WaitFor([&] { return server.requests().empty() && up->StatsFromAnyThread().spooled == 1; }));
  std::this_thread::sleep_for(milliseconds(100));  // batch 1 is now in flight, stuck in the handler
  for (uint64_t s = 2; s <= 8; ++s) {
    const auto t0 = Clock::now();
    up->PostBatch(s, Body(s));
    EXPECT_LT(Clock::now() - t0, milliseconds(500)) << "PostBatch waited for batch " << s;
    EXPECT_EQ(up->StatsFromAnyThread().queued, 0u) << "nothing waits in memory";
  }
  EXPECT_EQ(up->StatsFromAnyThread().spooled, 8u) << "every batch is on disk, the one in flight too";
  server.Unblock();
  ASSERT_TRUE(server.WaitForStored(8));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  const auto seqs = server.request_sequences();
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end())) << "never out of order";
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().spooled == 0; }));
  EXPECT_EQ(up->StatsFromAnyThread().batches_dropped, 0u);
}

// When the disk refuses batches (here the spool's directory is gone), they
// wait in memory, bounded in bytes as well as in batches (a window sends
// several batches, some large); past either the newest are dropped, counted.
TEST(UploaderTest, UnspooledBatchesAreBoundedInBytesToo) {
  FakeIngestServer server;
  server.Block();
  const std::string dir = TempDir();
  auto o = FastOptions(server.url(), dir);
  o.max_queued_bytes = 2 * Body(1).size() + 10;  // room for two
  o.server.request_timeout = milliseconds(20000);
  auto up = MakeUploader(o);
  std::filesystem::remove_all(dir);  // every Push fails from here on
  up->Start();
  up->PostBatch(1, Body(1));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().queued == 1; }));
  std::this_thread::sleep_for(milliseconds(100));  // batch 1 in flight, stuck in the handler
  for (uint64_t s = 2; s <= 6; ++s) {
    up->PostBatch(s, Body(s));
    EXPECT_LE(up->StatsFromAnyThread().queued, 2u) << "batch " << s;
  }
  server.Unblock();
  ASSERT_TRUE(server.WaitForStored(2));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{1, 2}));
  const UploaderStats s = up->StatsFromAnyThread();
  EXPECT_EQ(s.batches_unspooled, 6u);
  EXPECT_EQ(s.batches_dropped, 4u);
}

// kill -9 while the server stalls: every batch posted is on disk, so an
// uploader started again on the spool sends them all, in order.
TEST(UploaderTest, KilledWhileTheServerStallsLosesNoBatchMade) {
  FakeIngestServer server;
  server.Block();
  const std::string dir = TempDir();
  constexpr uint64_t kBatches = 6;
  std::vector<std::string> bodies;
  for (uint64_t s = 1; s <= kBatches; ++s) bodies.push_back(Body(s));
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto o = FastOptions(server.url(), dir);
    o.server.request_timeout = milliseconds(60000);
    auto up = Uploader::Create(o);
    if (!up.ok()) _exit(10);
    (*up)->Start();
    for (uint64_t s = 1; s <= kBatches; ++s) (*up)->PostBatch(s, bodies[s - 1]);
    char c = 'p';
    if (write(ready[1], &c, 1) != 1) _exit(11);
    pause();  // killed here
    _exit(12);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  server.Unblock();  // the killed uploader's request, if it reached the handler, is answered to no one
  auto again = MakeUploader(FastOptions(server.url(), dir));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->newest_spooled_sequence(), kBatches);
  again->Start();
  ASSERT_TRUE(WaitFor([&] { return again->StatsFromAnyThread().spooled == 0; }, milliseconds(20000)));
  std::vector<uint64_t> stored = server.stored_sequences();
  std::sort(stored.begin(), stored.end());
  stored.erase(std::unique(stored.begin(), stored.end()), stored.end());
  EXPECT_EQ(stored, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  again->Stop();
}

TEST(UploaderTest, FullSpoolDropsOldestAndCountsIt) {
  FakeIngestServer server;
  server.SetDefaultStatus(503);
  auto o = FastOptions(server.url(), TempDir());
  const size_t one = Body(1).size() + 32;
  o.spool_max_bytes = 3 * one + one / 2;  // room for three batches
  o.initial_backoff = milliseconds(5000);  // no retries during the test
  auto up = MakeUploader(o);
  up->Start();
  up->PostBatch(1, Body(1));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().spooled == 1; }));
  for (uint64_t s = 2; s <= 5; ++s) up->PostBatch(s, Body(s));
  ASSERT_TRUE(WaitFor([&] { return up->StatsFromAnyThread().spool_dropped_batches == 2; }));
  EXPECT_EQ(up->StatsFromAnyThread().spooled, 3u);
  server.SetDefaultStatus(200);
  up->Stop();  // in backoff: nothing sent at shutdown, everything stays spooled
  up.reset();
  auto again = MakeUploader(FastOptions(server.url(), o.spool_dir));
  again->Start();
  ASSERT_TRUE(server.WaitForStored(3));
  EXPECT_EQ(server.stored_sequences(), (std::vector<uint64_t>{3, 4, 5})) << "the oldest two were dropped";
}

TEST(UploaderTest, BadServerUrlIsAnError) {
  auto o = FastOptions("127.0.0.1:7070", TempDir());
  auto up = Uploader::Create(o);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("http://"), std::string::npos);
}

// A spool on a full disk (here RLIMIT_FSIZE in a child: every write fails as
// on a full filesystem) is a disk error, not a batch too large for the
// spool: batches stay in memory, bounded by the queue, and go out when the
// server answers again; the ones that do not fit are dropped and counted.
// Every batch made is accounted for.
TEST(UploaderTest, FullDiskKeepsBatchesInMemoryAndCountsEveryDrop) {
  FakeIngestServer server;
  server.SetDefaultStatus(503);
  const std::string spool_dir = TempDir();
  constexpr uint64_t kBatches = 10;
  std::vector<std::string> bodies;
  for (uint64_t s = 1; s <= kBatches; ++s) bodies.push_back(Body(s));
  int up_pipe[2], down_pipe[2];
  ASSERT_EQ(pipe(up_pipe), 0);
  ASSERT_EQ(pipe(down_pipe), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Exit codes name the failed step; gtest assertions do not work here.
    signal(SIGXFSZ, SIG_IGN);
    auto o = FastOptions(server.url(), spool_dir);
    o.initial_backoff = milliseconds(20);
    o.max_backoff = milliseconds(50);
    o.max_queued_batches = 3;  // fewer than the batches made
    auto up = Uploader::Create(o);
    if (!up.ok()) _exit(10);
    rlimit full{1, 1};
    if (setrlimit(RLIMIT_FSIZE, &full) != 0) _exit(11);
    (*up)->Start();
    for (uint64_t s = 1; s <= kBatches; ++s) {
      (*up)->PostBatch(s, bodies[s - 1]);
      std::this_thread::sleep_for(milliseconds(20));
    }
    if (!WaitFor([&] { return (*up)->StatsFromAnyThread().consecutive_failures >= 3; })) _exit(12);
    char c = 'r';
    if (write(up_pipe[1], &c, 1) != 1 || read(down_pipe[0], &c, 1) != 1) _exit(13);  // the server is back
    if (!WaitFor([&] { return (*up)->StatsFromAnyThread().queued == 0; })) _exit(14);
    (*up)->Stop();
    const UploaderStats stats = (*up)->StatsFromAnyThread();
    if (write(up_pipe[1], &stats, sizeof(stats)) != sizeof(stats)) _exit(15);
    _exit(0);
  }
  close(up_pipe[1]);  // EOF once the child is gone
  close(down_pipe[0]);
  char c = 0;
  const bool asked = read(up_pipe[0], &c, 1) == 1;
  server.SetDefaultStatus(200);
  if (asked) {
    EXPECT_EQ(write(down_pipe[1], &c, 1), 1);
  }
  UploaderStats s;
  const ssize_t got = asked ? read(up_pipe[0], &s, sizeof(s)) : 0;
  close(up_pipe[0]);
  close(down_pipe[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "12: the batches never failed three times: they were gone";
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof(s)));
  EXPECT_EQ(s.batches_posted, kBatches);
  EXPECT_EQ(s.batches_spooled, 0u) << "nothing could be written";
  EXPECT_EQ(s.batches_unspooled, kBatches);
  EXPECT_EQ(s.spooled + s.queued, 0u);
  EXPECT_EQ(s.batches_sent + s.batches_rejected + s.batches_dropped + s.spool_dropped_batches, kBatches)
      << "every batch sent or counted as dropped: sent " << s.batches_sent << ", dropped " << s.batches_dropped
      << ", spool dropped " << s.spool_dropped_batches;
  EXPECT_GE(s.batches_sent, 3u) << "the batches kept in memory were sent once the server answered";
  EXPECT_GE(s.batches_dropped, 1u);
  EXPECT_EQ(server.stored_sequences().size(), s.batches_sent);
}

}  // namespace
}  // namespace warpscope
