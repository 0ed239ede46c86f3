// warpscope-server against hostile and broken input, the real binary on
// loopback: values the store cannot sum, one agent's period, clocks far off,
// header floods and slow clients before the token check, queries that would
// hold the workers, a lost dictionary and damaged files on disk. Each test
// is one failure mode; docs/getting-started.md ("Limits and failure modes")
// says what the user sees and how to recover.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/agent_process.h"
#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"
#include "tests/support/loopback_client.h"

namespace warpscope::testing {
namespace {

using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;
using namespace std::chrono_literals;

constexpr char kToken[] = "hardening-token";
constexpr int64_t kSec = 1'000'000'000;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The last hour and a minute ahead, in the API's milliseconds.
std::string RecentRange() {
  const int64_t now_ms = NowNs() / 1'000'000;
  return "from=" + std::to_string(now_ms - 3'600'000) + "&to=" + std::to_string(now_ms + 60'000);
}

class ServerHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override {
    server_.reset();
    RunProcess({"rm", "-rf", dir_});
  }
  void Start(std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), {"--token", kToken});
    auto s = ServerProcess::Start(WS_SERVER_BIN, data_dir(), extra);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
  }
  std::string data_dir() const { return dir_ + "/data"; }
  // Safe after a failed Start (the failure is recorded; later requests then
  // fail too, without a crash).
  int port() const { return server_ ? server_->port() : 0; }
  std::string log() const { return server_ ? server_->log() : ""; }
  pid_t pid() const { return server_ ? server_->pid() : -1; }
  HttpResult Post(const warpscope::v1::IngestBatch& batch) { return PostBatch(port(), batch, kToken); }
  json GetJson(const std::string& path) { return GetApiJson(port(), path, kToken); }

  // One sample of `stack` now, from `agent` (its own node).
  warpscope::v1::IngestBatch Sample(const std::string& agent, uint64_t seq, const std::string& stack, int64_t value,
                                    int64_t time_ns = 0) {
    const int64_t t = time_ns != 0 ? time_ns : NowNs() / kSec * kSec;
    BatchFactory f(agent, seq, t, t + kSec);
    f.Add(stack, {{"node", agent}}, value, t);
    return f.batch();
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

// One batch of two INT64_MAX samples of one key used to be acknowledged and
// then stop every flush for good; values are now checked at ingest, and what
// is stored is summed without overflow.
TEST_F(ServerHardeningTest, ValuesTheStoreCannotSumAreRefused) {
  Start();
  warpscope::v1::IngestBatch poison = Sample("poison", 1, "main;work", INT64_MAX);
  poison.add_samples()->CopyFrom(poison.samples(0));
  HttpResult r = Post(poison);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("samples[0].value: 9223372036854775807 is outside [1, "), std::string::npos) << r.body;
  for (int64_t bad : {int64_t{1} << 62, int64_t{-7}, int64_t{0}}) {
    r = Post(Sample("poison", 2, "main;work", bad));
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_NE(r.body.find("samples[0].value"), std::string::npos) << r.body;
  }
  ASSERT_EQ(Post(Sample("poison", 3, "main;work", 10)).status, 200);
  ASSERT_EQ(Post(Sample("other", 1, "main;rest", 3)).status, 200);
  // The flame graph and the series agree, and the store keeps flushing (a
  // flush runs every 5 s).
  const json profile = GetJson("/api/v1/profile?" + RecentRange());
  EXPECT_EQ(profile["total"], 13) << profile.dump();
  const json series = GetJson("/api/v1/series?" + RecentRange() + "&step=2h");
  int64_t series_total = 0;
  for (const auto& s : series["series"]) {
    for (const auto& p : s["points"]) series_total += p[1].get<int64_t>();
  }
  EXPECT_EQ(series_total, 13) << series.dump();
  std::this_thread::sleep_for(6s);
  EXPECT_EQ(log().find("overflow"), std::string::npos) << log();
  EXPECT_FALSE(std::filesystem::is_empty(data_dir() + "/segments")) << "no flush happened";
  EXPECT_EQ(GetJson("/api/v1/status")["rejected_batches"], 4);
}

// One agent's period of 2^62 used to turn every agent's CPU profile into
// nanoseconds with period 0. Periods are bounded, and an answer over one
// agent's series is in that agent's unit.
TEST_F(ServerHardeningTest, OneAgentsPeriodDoesNotChangeAnothersProfile) {
  Start();
  ASSERT_EQ(Post(Sample("a", 1, "main;a_work", 10)).status, 200);  // 19 Hz
  warpscope::v1::IngestBatch odd = Sample("b", 1, "main;b_work", 4);
  odd.mutable_types(0)->set_period_nanos(int64_t{1} << 62);
  HttpResult r = Post(odd);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("types[0].period_nanos: 4611686018427387904 is outside"), std::string::npos) << r.body;
  warpscope::v1::IngestBatch fast = Sample("b", 2, "main;b_work", 4);
  fast.mutable_types(0)->set_period_nanos(1'000'000'000 / 99);
  ASSERT_EQ(Post(fast).status, 200);
  const json a = GetJson("/api/v1/profile?" + RecentRange() + "&selector=" + UrlEncode("{node=\"a\"}"));
  EXPECT_EQ(a["unit"], "samples") << a.dump().substr(0, 300);
  EXPECT_EQ(a["period_nanos"], 1'000'000'000 / 19);
  EXPECT_EQ(a["total"], 10);
  const json both = GetJson("/api/v1/profile?" + RecentRange());
  EXPECT_EQ(both["unit"], "nanoseconds");
  EXPECT_EQ(both["total"], 10 * (1'000'000'000 / 19) + 4 * (1'000'000'000 / 99));
}

// A sample dated 2200 used to pin its segment past retention for good, and
// one older than retention was acknowledged but never shown: both are
// dropped, the answer says so, and the rest of the batch is stored.
TEST_F(ServerHardeningTest, RowsOutsideRetentionOrFarAheadAreDroppedAndCounted) {
  Start({"--retention", "1h"});
  const int64_t now = NowNs() / kSec * kSec;
  BatchFactory f("clock", 1, now - 3 * 3600 * kSec, now);
  f.Add("main;old", {{"node", "clock"}}, 5, now - 3 * 3600 * kSec);
  f.Add("main;future", {{"node", "clock"}}, 7, int64_t{7'258'118'400} * kSec);
  f.Add("main;now", {{"node", "clock"}}, 3, now);
  const HttpResult r = Post(f.batch());
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);
  EXPECT_EQ(answer["stored_samples"], 1) << r.body;
  EXPECT_EQ(answer["dropped_too_old"], 1) << r.body;
  EXPECT_EQ(answer["dropped_too_new"], 1) << r.body;
  const json status = GetJson("/api/v1/status");
  EXPECT_EQ(status["dropped_too_old"], 1);
  EXPECT_EQ(status["dropped_too_new"], 1);
  const json recent = GetJson("/api/v1/top?from=" + std::to_string((now - 4 * 3600 * kSec) / 1'000'000) +
                              "&to=" + std::to_string((now + 60 * kSec) / 1'000'000));
  ASSERT_EQ(recent["functions"].size(), 2u) << recent.dump();  // main and now: "old" was dropped
  EXPECT_EQ(recent["total"], 3);
}

// 100 MB of headers before any token used to cost 250-500 MB of RSS, never
// given back; now the head is refused at its limit and the connection closed.
TEST_F(ServerHardeningTest, HeaderFloodIsRefusedBeforeTheTokenWithFlatMemory) {
  Start();
  const int64_t before = ProcessRssKiB(pid());
  for (int round = 0; round < 4; ++round) {
    const int fd = ConnectLoopback(port());
    ASSERT_GE(fd, 0);
    const std::string line = "X-Pad: " + std::string(8000, 'p') + "\r\n";
    std::string head = "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n";
    size_t sent = 0;
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    // Keep sending until the server stops reading (it answers and closes).
    for (int i = 0; i < 3000; ++i) {
      const ssize_t n = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) break;
      sent += static_cast<size_t>(n);
    }
    bool closed = false;
    const std::string reply = ReadUntilClosed(fd, 5s, &closed);
    close(fd);
    EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply.substr(0, 200);
    EXPECT_TRUE(closed);
    EXPECT_LT(sent, size_t{24} << 20) << "the server kept reading the flood";
  }
  const int64_t after = ProcessRssKiB(pid());
  EXPECT_LT(after - before, 16 * 1024) << "RSS " << before << " -> " << after << " KiB";
  EXPECT_EQ(HttpGet(port(), "/healthz").status, 200);
  EXPECT_GE(GetJson("/api/v1/status")["http"]["heads_too_large"].get<int>(), 4);
}

// More slow clients than workers, each sending a header line now and then,
// used to stop /healthz and ingest; now heads are read off the workers.
TEST_F(ServerHardeningTest, SlowClientsDoNotStopHealthOrIngest) {
  Start({"--threads", "2", "--ingest-threads", "1"});
  std::vector<int> slow;
  for (int i = 0; i < 16; ++i) {
    const int fd = ConnectLoopback(port());
    ASSERT_GE(fd, 0);
    ::send(fd, "POST /api/v1/ingest HTTP/1.1\r\nHost: x\r\n", 40, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  for (int round = 0; round < 5; ++round) {
    for (int fd : slow) ::send(fd, "X-a: b\r\n", 8, MSG_NOSIGNAL);
    EXPECT_EQ(HttpGet(port(), "/healthz").status, 200) << "round " << round;
    EXPECT_EQ(Post(Sample("live", static_cast<uint64_t>(round + 1), "main;live", 1)).status, 200) << round;
    std::this_thread::sleep_for(1s);
  }
  for (int fd : slow) close(fd);
  EXPECT_EQ(GetJson("/api/v1/profile?" + RecentRange())["total"], 5);
}

// Queries that are as expensive as a selector allows, many at once, used to
// block ingest for close to a minute; queries now run on their own workers,
// the regex work is bounded and every query has a deadline. Every ingest
// sent meanwhile is answered before the last of the queries.
TEST_F(ServerHardeningTest, HeavyQueriesNeverHoldIngest) {
  Start({"--threads", "2", "--ingest-threads", "1", "--query-timeout", "20s"});
  // 1500 series with distinct 4 KB comm values: (.*){1,2000} costs ~1 s a value.
  const int64_t t = NowNs() / kSec * kSec;
  for (int b = 0; b < 15; ++b) {
    BatchFactory f("series", static_cast<uint64_t>(b + 1), t, t + kSec);
    for (int i = 0; i < 100; ++i) {
      f.Add("main;work", {{"node", "n"}, {"comm", std::to_string(b * 100 + i) + std::string(4000, 'c')}}, 1, t);
    }
    ASSERT_EQ(Post(f.batch()).status, 200);
  }
  const std::string bomb =
      "/api/v1/series?" + RecentRange() + "&selector=" + UrlEncode("{comm=~\"(.*){1,2000}\"}");
  std::mutex mu;
  std::vector<int> query_statuses;
  std::atomic<int64_t> last_query_done{0};
  std::vector<std::thread> queries;
  for (int i = 0; i < 8; ++i) {
    queries.emplace_back([&] {
      const HttpResult q = HttpGet(port(), bomb, kToken);
      std::lock_guard<std::mutex> lock(mu);
      query_statuses.push_back(q.status);
      last_query_done = std::max<int64_t>(last_query_done, NowNs());
    });
  }
  std::this_thread::sleep_for(200ms);
  int64_t last_ingest_done = 0;
  for (uint64_t seq = 100; seq < 105; ++seq) {
    EXPECT_EQ(Post(Sample("live", seq, "main;live", 1)).status, 200);
    last_ingest_done = NowNs();
  }
  for (auto& q : queries) q.join();
  for (int s : query_statuses) EXPECT_TRUE(s == 400 || s == 503) << s;
  EXPECT_LT(last_ingest_done, last_query_done) << "ingest waited for the queries";
  const HttpResult refused = HttpGet(port(), bomb, kToken);
  EXPECT_NE(refused.body.find("selector too expensive"), std::string::npos) << refused.body.substr(0, 300);
}

// --insecure-listen-any used to log "no token: loopback only".
TEST_F(ServerHardeningTest, UnauthenticatedListenAnySaysSo) {
  auto s = ServerProcess::Start(WS_SERVER_BIN, data_dir(), {"--insecure-listen-any", "--listen", "0.0.0.0:0"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  const std::string log = (*s)->log();
  EXPECT_EQ(log.find("loopback only"), std::string::npos) << log;
  EXPECT_NE(log.find("NO TOKEN"), std::string::npos) << log;
}

// A bad --listen used to be found only after the data dir was created, and a
// non-loopback one without a token exited 1; both are flag errors (exit 2)
// before anything is touched.
TEST_F(ServerHardeningTest, BadListenIsAFlagErrorBeforeAnythingIsCreated) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--listen", "127.0.0.1:27602x"}, std::vector<std::string>{"--listen", "0.0.0.0:0"}}) {
    std::vector<std::string> argv = {WS_SERVER_BIN, "--data-dir", data_dir()};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProcessResult r = RunProcess(argv, 30);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(data_dir())) << args[1];
  }
}

// Content-Type was matched by prefix (application/x-protobufFOO was taken),
// and each body with invalid UTF-8 logged a libprotobuf ERROR line.
TEST_F(ServerHardeningTest, ContentTypeIsExactAndParseErrorsDoNotFloodTheLog) {
  Start();
  const std::string body = Sample("ct", 1, "main;work", 1).SerializeAsString();
  EXPECT_EQ(HttpPostIngest(port(), body, kToken, "application/x-protobufFOO").status, 415);
  EXPECT_EQ(HttpPostIngest(port(), body, kToken, "Application/X-Protobuf; proto=warpscope.v1.IngestBatch").status,
            200);
  warpscope::v1::IngestBatch bad = Sample("utf8", 1, "main;work", 1);
  bad.add_strings("\xff\xfe not UTF-8");
  const std::string bad_body = bad.SerializeAsString();
  for (int i = 0; i < 200; ++i) EXPECT_EQ(HttpPostIngest(port(), bad_body, kToken).status, 400);
  const std::string text = log();
  size_t lines = 0;
  for (size_t at = text.find("libprotobuf"); at != std::string::npos; at = text.find("libprotobuf", at + 1)) ++lines;
  EXPECT_LE(lines, 2u) << text.substr(0, 2000);
}

// Batches of a fixed day long ago (the store keeps everything: --retention 0).
constexpr int64_t kPast = 1'790'000'000 * kSec;  // 2026-09-21

std::vector<std::string> SegmentFiles(const std::string& data_dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/segments")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("seg-", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void FlipByte(const std::string& path, std::streamoff offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5a));
}

// The server's start-up error, or "" when it started.
std::string StartError(const std::string& data_dir, std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {"--retention", "0"});
  auto s = ServerProcess::Start(WS_SERVER_BIN, data_dir, extra);
  return s.ok() ? "" : s.status().message();
}

class ServerDataDirTest : public ServerHardeningTest {
 protected:
  // `n` batches of node `node`, each its own stack, at kPast + i s.
  void Fill(const std::string& node, int first, int n) {
    for (int i = first; i < first + n; ++i) {
      BatchFactory f(node, static_cast<uint64_t>(i + 1), kPast, kPast + 3600 * kSec);
      f.Add("main;" + node + "_" + std::to_string(i), {{"node", node}}, 1, kPast + i * kSec);
      ASSERT_EQ(Post(f.batch()).status, 200);
    }
  }
  // Stops the server (its final flush writes a segment).
  void StopServer() {
    if (server_) server_->Stop();
    server_.reset();
  }
  json Nodes() {
    return GetJson("/api/v1/series?from=" + std::to_string(kPast / 1'000'000) + "&to=" +
                   std::to_string(kPast / 1'000'000 + 3'600'000) + "&step=1h&group_by=node");
  }
};

// A lost dictionary used to let the server start and hand the old samples'
// ids to new stacks and nodes (100 old samples showed up under a new node).
// Now the server refuses to start, and says what to do.
TEST_F(ServerDataDirTest, LostDictionaryIsRefusedNotMisattributed) {
  Start({"--retention", "0"});
  Fill("old-node", 0, 50);
  StopServer();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(data_dir() + "/dictionary.sqlite" + suffix);
  const std::string error = StartError(data_dir());
  EXPECT_NE(error.find("dictionary.sqlite"), std::string::npos) << error;
  EXPECT_NE(error.find("Limits and failure modes"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(data_dir() + "/dictionary.sqlite")) << "a new dictionary was created";
}

// A dictionary restored from an older copy is behind the segments written
// after it: refused too (the review's -wal/-shm case is the same).
TEST_F(ServerDataDirTest, OlderDictionaryIsRefused) {
  Start({"--retention", "0"});
  Fill("old-node", 0, 10);
  StopServer();
  const std::string backup = dir_ + "/backup";
  std::filesystem::create_directories(backup);
  for (const char* suffix : {"", "-wal"}) {
    const std::string from = data_dir() + "/dictionary.sqlite" + suffix;
    if (std::filesystem::exists(from)) std::filesystem::copy_file(from, backup + "/dictionary.sqlite" + suffix);
  }
  Start({"--retention", "0"});
  Fill("new-node", 10, 10);
  StopServer();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(data_dir() + "/dictionary.sqlite" + suffix);
  for (const auto& e : std::filesystem::directory_iterator(backup)) {
    std::filesystem::copy_file(e.path(), data_dir() + "/" + e.path().filename().string());
  }
  const std::string error = StartError(data_dir());
  EXPECT_NE(error.find("behind"), std::string::npos) << error;
}

// One flipped byte in a segment used to turn every query over its range into
// a 500. Now the rest is served and the answer names what it could not read.
TEST_F(ServerDataDirTest, DamagedSegmentIsServedAroundAndMarked) {
  Start({"--retention", "0"});
  Fill("first", 0, 1);
  StopServer();  // segment 1: "first"
  Start({"--retention", "0"});
  Fill("second", 100, 1);
  StopServer();  // segment 2: "second"
  const std::vector<std::string> segments = SegmentFiles(data_dir());
  ASSERT_EQ(segments.size(), 2u);
  FlipByte(segments[0], 12);  // inside block 0, after the 8-byte header
  Start({"--retention", "0"});
  const std::string range =
      "from=" + std::to_string(kPast / 1'000'000) + "&to=" + std::to_string(kPast / 1'000'000 + 3'600'000);
  const json profile = GetJson("/api/v1/profile?" + range);
  EXPECT_EQ(profile["total"], 1) << profile.dump().substr(0, 400);
  ASSERT_TRUE(profile.contains("incomplete")) << profile.dump().substr(0, 400);
  ASSERT_EQ(profile["incomplete"].size(), 1u);
  EXPECT_NE(profile["incomplete"][0]["reason"].get<std::string>().find("is corrupt"), std::string::npos);
  EXPECT_TRUE(GetJson("/api/v1/series?" + range + "&step=1h").contains("incomplete"));
  const HttpResult collapsed = HttpGet(port(), "/api/v1/profile?" + range + "&format=collapsed", kToken);
  EXPECT_EQ(collapsed.status, 200);
  EXPECT_NE(collapsed.body.find("second_100"), std::string::npos) << collapsed.body;
}

// A deleted segment used to be served silently as missing data. Now the
// server refuses to start, naming the file and its time range; --repair
// starts it, and every answer over that range says what is missing.
TEST_F(ServerDataDirTest, MissingSegmentIsRefusedThenRepairedAsAGap) {
  Start({"--retention", "0"});
  Fill("first", 0, 1);
  StopServer();
  Start({"--retention", "0"});
  Fill("second", 100, 1);
  StopServer();
  const std::vector<std::string> segments = SegmentFiles(data_dir());
  ASSERT_EQ(segments.size(), 2u);
  std::filesystem::remove(segments[0]);
  const std::string error = StartError(data_dir());
  EXPECT_NE(error.find("is missing"), std::string::npos) << error;
  EXPECT_NE(error.find("--repair"), std::string::npos) << error;
  Start({"--retention", "0", "--repair"});
  const json profile = GetJson("/api/v1/profile?from=" + std::to_string(kPast / 1'000'000) + "&to=" +
                               std::to_string(kPast / 1'000'000 + 3'600'000));
  EXPECT_EQ(profile["total"], 1);
  ASSERT_TRUE(profile.contains("incomplete")) << profile.dump().substr(0, 400);
  StopServer();
  // Repaired once: a plain start works, the gap still reported.
  Start({"--retention", "0"});
  EXPECT_TRUE(GetJson("/api/v1/profile?from=" + std::to_string(kPast / 1'000'000) + "&to=" +
                      std::to_string(kPast / 1'000'000 + 3'600'000))
                  .contains("incomplete"));
}

// A damaged write-ahead log record used to stop start-up with no way out.
// Now the message names --repair, which keeps the damaged file in
// quarantine/ and starts with every intact record.
TEST_F(ServerDataDirTest, DamagedWalRecordIsRefusedThenRepaired) {
  Start({"--retention", "0"});
  Fill("walled", 0, 5);
  ASSERT_NE(server_, nullptr);
  server_->Kill();  // the rows are in the WAL only
  server_.reset();
  std::vector<std::string> wal;
  for (const auto& e : std::filesystem::directory_iterator(data_dir() + "/wal")) {
    if (e.path().extension() == ".log" && std::filesystem::file_size(e.path()) > 200) wal.push_back(e.path());
  }
  ASSERT_EQ(wal.size(), 1u);
  FlipByte(wal[0], static_cast<std::streamoff>(std::filesystem::file_size(wal[0]) / 2));
  const std::string error = StartError(data_dir());
  EXPECT_NE(error.find("corrupt record"), std::string::npos) << error;
  EXPECT_NE(error.find("--repair"), std::string::npos) << error;
  Start({"--retention", "0", "--repair"});
  const json profile = GetJson("/api/v1/profile?from=" + std::to_string(kPast / 1'000'000) + "&to=" +
                               std::to_string(kPast / 1'000'000 + 3'600'000));
  EXPECT_GE(profile["total"].get<int>(), 3) << "the intact records were not replayed";
  EXPECT_LT(profile["total"].get<int>(), 5);
  EXPECT_FALSE(std::filesystem::is_empty(data_dir() + "/quarantine"));
}

}  // namespace
}  // namespace warpscope::testing
