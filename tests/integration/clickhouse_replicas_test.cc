// warpscope-server on ClickHouse, whole processes: a real
// clickhouse-server (storage/clickhouse/testing/clickhouse_instance.h), real
// warpscope-server replicas started with --storage clickhouse://..., and
// uploaders that post IngestBatch protobufs over HTTP and behave like the
// agent's uploader (keep a batch until it is acknowledged, retry 503 and
// refused connections with backoff, never skip one).
//  - two replicas on one database, each fed by a different agent: each
//    replica answers with both agents' data, exactly, and recognises a batch
//    the other replica stored as a duplicate;
//  - ClickHouse stopped (SIGTERM) or killed (SIGKILL) mid-ingest: the
//    replicas answer 503 to ingest and queries, the uploaders retry, ingest
//    resumes after ClickHouse restarts, and every batch is in the totals
//    exactly once.
// Label `clickhouse`: fails when clickhouse-server is not installed (CI
// installs it through scripts/bootstrap.sh); WARPSCOPE_SKIP_CLICKHOUSE=1 skips.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "storage/clickhouse/testing/clickhouse_instance.h"
#include "storage/clickhouse/testing/clickhouse_test_env.h"
#include "tests/integration/agent_process.h"
#include "tests/integration/batch_factory.h"
#include "tests/integration/server_process.h"
#include "tests/integration/subprocess.h"

namespace warpscope::testing {
namespace {

using clickhouse::testing::ClickHouseInstance;
using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;
using namespace std::chrono_literals;

constexpr char kToken[] = "replica-token";
constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kHourNs = 3600 * kSec;
// A fixed past hour boundary (2026-09-21 11:00 UTC), so answers do not depend
// on the clock and full hours can come from ClickHouse's hourly rollup.
constexpr int64_t kH0 = 1'789'999'200 * kSec;

std::string Range(int64_t from_ns, int64_t to_ns) {
  return "from=" + std::to_string(from_ns / 1'000'000) + "&to=" + std::to_string(to_ns / 1'000'000);
}

// One agent's batch `seq`: a 10 s window at `time_ns` with a stack shared by
// every agent (merged across agents in the answers), one of the agent's own,
// and one that only some windows have. Values differ per batch so a lost or
// doubled batch changes every total it is part of.
struct AgentBatch {
  BatchFactory factory;
  std::map<std::string, int64_t> values_by_stack;  // collapsed "root;...;leaf" -> value
  int64_t total = 0;
};

AgentBatch MakeBatch(const std::string& agent, const std::string& node, uint64_t seq, int64_t time_ns) {
  AgentBatch b{BatchFactory(agent, seq, time_ns, time_ns + 10 * kSec), {}, 0};
  const Labels labels{{"node", node}, {"pid", "42"}, {"comm", "trainer"}, {"exe", "/usr/bin/trainer"}};
  auto add = [&](const std::string& stack, int64_t value) {
    b.factory.Add(stack, labels, value, time_ns);
    b.values_by_stack[stack] += value;
    b.total += value;
  };
  add("_start@trainer;main@trainer;Step.shared@trainer", 10 + static_cast<int64_t>(seq % 13));
  add("_start@trainer;main@trainer;Only." + node + "@trainer", static_cast<int64_t>(seq));
  if (seq % 3 == 0) add("_start@trainer;main@trainer;Rare.work@trainer;memcpy@libc.so.6", 1);
  return b;
}

// What an agent has acknowledged, for the expected answers.
struct Sent {
  int64_t time_ns = 0;
  std::string node;
  AgentBatch batch;
};

// The expected flame-graph total over [from, to) for `node` ("" for all).
int64_t ExpectedTotal(const std::vector<Sent>& sent, int64_t from_ns, int64_t to_ns, const std::string& node = "") {
  int64_t total = 0;
  for (const Sent& s : sent) {
    if (s.time_ns >= from_ns && s.time_ns < to_ns && (node.empty() || s.node == node)) total += s.batch.total;
  }
  return total;
}

// Collapsed stacks as the API prints them ("a;b;c 12" per line), summed.
std::map<std::string, int64_t> ParseCollapsed(const std::string& body) {
  std::map<std::string, int64_t> out;
  size_t begin = 0;
  while (begin < body.size()) {
    size_t end = body.find('\n', begin);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(begin, end - begin);
    const size_t space = line.rfind(' ');
    if (space != std::string::npos) out[line.substr(0, space)] += std::stoll(line.substr(space + 1));
    begin = end + 1;
  }
  return out;
}

// The agent's uploader, reduced to its contract (docs/getting-started.md,
// "Continuous mode"): batches go out in order; a 503 or no answer keeps the
// batch and retries it with backoff (50 ms doubling to 400 ms here, 1 s to
// 60 s in the agent); anything else but 200 is a test failure.
class Uploader {
 public:
  Uploader(std::string agent, std::string node, int port) : agent_(std::move(agent)), node_(std::move(node)), port_(port) {}

  // Posts batches 1..count, batch `seq` dated time_of(seq); returns when all
  // are acknowledged or `deadline` passes. Runs on its own thread.
  void Run(uint64_t count, const std::function<int64_t(uint64_t)>& time_of, std::chrono::steady_clock::time_point deadline,
           std::chrono::milliseconds pace) {
    for (uint64_t seq = 1; seq <= count; ++seq) {
      Sent s{time_of(seq), node_, MakeBatch(agent_, node_, seq, time_of(seq))};
      const std::string body = s.batch.factory.batch().SerializeAsString();
      auto backoff = 50ms;
      while (paused_ && !abort_) std::this_thread::sleep_for(5ms);
      for (;;) {
        if (std::chrono::steady_clock::now() > deadline || abort_) {
          std::lock_guard<std::mutex> lock(mu_);
          error_ = agent_ + ": batch " + std::to_string(seq) + " not acknowledged before the deadline";
          return;
        }
        const HttpResult r = HttpPostIngest(port_, body, kToken);
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++answers_[r.status];
          if (r.status == 200) {
            const json answer = json::parse(r.body, nullptr, false);
            if (answer.is_object() && answer.value("duplicate", false)) ++duplicates_;
            sent_.push_back(std::move(s));
            break;
          }
          if (r.status != 503 && r.status != 0) {
            error_ = agent_ + ": batch " + std::to_string(seq) + " got HTTP " + std::to_string(r.status) + ": " + r.body;
            return;
          }
          if (r.status == 503 && last_503_body_.empty()) last_503_body_ = r.body;
          ++failures_;
        }
        std::this_thread::sleep_for(backoff);
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, 400ms);
      }
      std::this_thread::sleep_for(pace);
    }
  }

  // Makes Run return soon (a failed test must not leave it posting).
  void Abort() { abort_ = true; }
  // While paused, Run sends nothing new (a request in flight completes).
  void SetPaused(bool paused) { paused_ = paused; }
  std::string Summary() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out = agent_ + ": " + std::to_string(sent_.size()) + " acknowledged; answers";
    for (const auto& [status, count] : answers_) out += " " + std::to_string(status) + "x" + std::to_string(count);
    return out + (error_.empty() ? "" : "; " + error_);
  }

  size_t acknowledged() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.size();
  }
  int failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }
  std::vector<Sent> sent() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_;
  }
  std::map<int, int> answers() const {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_;
  }
  int duplicates() const {
    std::lock_guard<std::mutex> lock(mu_);
    return duplicates_;
  }
  std::string error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  std::string last_503_body() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_503_body_;
  }

 private:
  const std::string agent_, node_;
  const int port_;
  std::atomic<bool> abort_{false}, paused_{false};
  mutable std::mutex mu_;
  std::vector<Sent> sent_;      // acknowledged batches, guarded by mu_
  std::map<int, int> answers_;  // HTTP status (0: no answer) -> count
  int failures_ = 0, duplicates_ = 0;
  std::string error_, last_503_body_;
};

class ClickHouseReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WS_REQUIRE_CLICKHOUSE();
    dir_ = MakeTempDir();
    auto ch = ClickHouseInstance::Start(dir_ + "/clickhouse");
    ASSERT_TRUE(ch.ok()) << ch.status().ToString();
    ch_ = std::move(ch).value();
    password_file_ = dir_ + "/clickhouse-password";
    std::ofstream(password_file_) << clickhouse::testing::kClickHousePassword << "\n";
  }
  void TearDown() override {
    replicas_.clear();
    ch_.reset();
    if (!dir_.empty()) RunProcess({"rm", "-rf", dir_});
  }

  // Replica i on the shared database. Replica 0 reads the password from a
  // file, the others from the environment: both ways are exercised.
  void StartReplica(size_t i, int port = 0) {
    std::vector<std::string> args = {"--token", kToken, "--retention", "0", "--storage", ch_->Url("ws_replicas"),
                                     "--clickhouse-user", clickhouse::testing::kClickHouseUser,
                                     "--clickhouse-start-timeout", "10s", "--clickhouse-timeout", "5s"};
    if (i == 0) {
      args.insert(args.end(), {"--clickhouse-password-file", password_file_});
    } else {
      setenv("WARPSCOPE_CLICKHOUSE_PASSWORD", clickhouse::testing::kClickHousePassword, 1);
    }
    auto s = ServerProcess::Start(WS_SERVER_BIN, dir_ + "/replica-" + std::to_string(i), args, port);
    unsetenv("WARPSCOPE_CLICKHOUSE_PASSWORD");
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_NE(s.value()->log().find("ClickHouse at http://127.0.0.1:" + std::to_string(ch_->http_port()) +
                                    "/ws_replicas as warpscope"),
              std::string::npos)
        << "the start-up line names the store: " << s.value()->log();
    if (replicas_.size() <= i) replicas_.resize(i + 1);
    replicas_[i] = std::move(s).value();
  }
  json GetJson(size_t replica, const std::string& path) { return GetApiJson(replicas_[replica]->port(), path, kToken); }
  HttpResult Get(size_t replica, const std::string& path) { return HttpGet(replicas_[replica]->port(), path, kToken); }

  // Every answer of both replicas against what the uploaders had acknowledged.
  void ExpectBothReplicasAnswer(const std::vector<Sent>& sent, int64_t from_ns, int64_t to_ns) {
    constexpr int64_t kStepNs = 10 * kSec;
    std::map<std::string, int64_t> stacks;
    std::map<std::pair<std::string, int64_t>, int64_t> points;  // (node, step start ms) -> value
    for (const Sent& s : sent) {
      if (s.time_ns < from_ns || s.time_ns >= to_ns) continue;
      for (const auto& [stack, value] : s.batch.values_by_stack) stacks[stack] += value;
      const int64_t step_start = from_ns + (s.time_ns - from_ns) / kStepNs * kStepNs;
      points[{s.node, step_start / 1'000'000}] += s.batch.total;
    }
    // Hour-aligned, with ragged edges (the rollup and the raw rows), and one node.
    const std::vector<std::pair<int64_t, int64_t>> ranges = {
        {from_ns, to_ns}, {from_ns + 1800 * kSec + 3 * kSec, to_ns - 600 * kSec}, {from_ns + kHourNs, from_ns + 2 * kHourNs}};
    std::string first_flame;
    for (size_t r = 0; r < replicas_.size(); ++r) {
      SCOPED_TRACE("replica " + std::to_string(r));
      for (const auto& [from, to] : ranges) {
        json all = GetJson(r, "/api/v1/profile?" + Range(from, to));
        EXPECT_EQ(all.value("total", int64_t{-1}), ExpectedTotal(sent, from, to)) << Range(from, to);
        for (const std::string node : {"a", "b"}) {
          json one = GetJson(r, "/api/v1/profile?" + Range(from, to) + "&selector=" + UrlEncode("{node=\"" + node + "\"}"));
          EXPECT_EQ(one.value("total", int64_t{-1}), ExpectedTotal(sent, from, to, node)) << node << " " << Range(from, to);
        }
      }
      // Every stack, merged across the agents, through format=collapsed.
      HttpResult collapsed = Get(r, "/api/v1/profile?format=collapsed&" + Range(from_ns, to_ns));
      ASSERT_EQ(collapsed.status, 200) << collapsed.body;
      std::map<std::string, int64_t> want;
      for (const auto& [stack, value] : stacks) {
        std::string names;
        size_t begin = 0;
        while (begin <= stack.size()) {  // "f@bin;g@bin" -> "f;g"
          size_t end = stack.find(';', begin);
          if (end == std::string::npos) end = stack.size();
          const std::string frame = stack.substr(begin, end - begin);
          names += (names.empty() ? "" : ";") + frame.substr(0, frame.find('@'));
          begin = end + 1;
        }
        want[names] += value;
      }
      EXPECT_EQ(ParseCollapsed(collapsed.body), want);
      // The timeline per node: one point per acknowledged window.
      json series = GetJson(r, "/api/v1/series?" + Range(from_ns, to_ns) + "&step=10s&group_by=node");
      std::map<std::pair<std::string, int64_t>, int64_t> got;
      for (const auto& s : series["series"]) {
        for (const auto& p : s["points"]) got[{s["labels"].value("node", ""), p[0].get<int64_t>()}] += p[1].get<int64_t>();
      }
      EXPECT_EQ(got, points) << "a window lost or counted twice";
      json nodes = GetJson(r, "/api/v1/label_values?name=node");
      EXPECT_EQ(nodes["values"], json::array({"a", "b"}));
      // Replicas give byte-identical flame graphs.
      HttpResult flame = Get(r, "/api/v1/profile?" + Range(from_ns, to_ns));
      ASSERT_EQ(flame.status, 200);
      if (r == 0) first_flame = flame.body;
      else EXPECT_EQ(flame.body, first_flame);
    }
  }

  std::string dir_, password_file_;
  std::unique_ptr<ClickHouseInstance> ch_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
};

// Agent a sends to replica 0, agent b to replica 1, both every ~97 s of
// data-time over a little more than two hours.
int64_t TimeOf(uint64_t seq, int64_t offset_ns) { return kH0 + static_cast<int64_t>(seq - 1) * 97 * kSec + offset_ns; }

TEST_F(ClickHouseReplicasTest, EachReplicaAnswersWithBothAgentsData) {
  StartReplica(0);
  StartReplica(1);
  Uploader a("agent-a", "a", replicas_[0]->port()), b("agent-b", "b", replicas_[1]->port());
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  constexpr uint64_t kBatches = 80;  // 80 x 97 s: 2 h 9 min
  std::thread ta([&] { a.Run(kBatches, [](uint64_t s) { return TimeOf(s, 0); }, deadline, 0ms); });
  std::thread tb([&] { b.Run(kBatches, [](uint64_t s) { return TimeOf(s, 5 * kSec); }, deadline, 0ms); });
  ta.join();
  tb.join();
  ASSERT_EQ(a.error(), "");
  ASSERT_EQ(b.error(), "");
  EXPECT_EQ(a.failures() + b.failures(), 0) << "ClickHouse was up: no retries expected";
  std::vector<Sent> sent = a.sent();
  for (Sent& s : b.sent()) sent.push_back(std::move(s));
  ASSERT_EQ(sent.size(), 2 * kBatches);
  ExpectBothReplicasAnswer(sent, kH0, kH0 + 3 * kHourNs);

  // An agent that re-sends to the other replica (its answer was lost, the
  // load balancer moved it): a duplicate, acknowledged, not stored again.
  const AgentBatch again = MakeBatch("agent-a", "a", 7, TimeOf(7, 0));
  HttpResult r = PostBatch(replicas_[1]->port(), again.factory.batch(), kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json::parse(r.body).value("duplicate", false)) << r.body;
  EXPECT_EQ(GetJson(0, "/api/v1/profile?" + Range(kH0, kH0 + 3 * kHourNs)).value("total", int64_t{-1}),
            ExpectedTotal(sent, kH0, kH0 + 3 * kHourNs));

  // A third replica started later sees everything at once (no state of its own).
  StartReplica(2);
  EXPECT_EQ(GetJson(2, "/api/v1/profile?" + Range(kH0, kH0 + 3 * kHourNs)).value("total", int64_t{-1}),
            ExpectedTotal(sent, kH0, kH0 + 3 * kHourNs));
}

// How ClickHouse goes away mid-ingest.
enum class Outage { kStop, kKill };

class ClickHouseOutageTest : public ClickHouseReplicasTest, public ::testing::WithParamInterface<Outage> {};

TEST_P(ClickHouseOutageTest, ReplicasAnswer503AndNothingAcknowledgedIsLostOrDoubled) {
  StartReplica(0);
  StartReplica(1);
  Uploader a("agent-a", "a", replicas_[0]->port()), b("agent-b", "b", replicas_[1]->port());
  const auto deadline = std::chrono::steady_clock::now() + 240s;
  constexpr uint64_t kBatches = 150;  // at 10 s of data-time each: 25 min
  std::thread ta([&] { a.Run(kBatches, [](uint64_t s) { return kH0 + static_cast<int64_t>(s) * 10 * kSec; }, deadline, 20ms); });
  std::thread tb([&] { b.Run(kBatches, [](uint64_t s) { return kH0 + static_cast<int64_t>(s) * 10 * kSec + 5 * kSec; }, deadline, 20ms); });
  // A failed ASSERT returns early: stop the uploaders and join them first.
  struct JoinOnExit {
    Uploader &a, &b;
    std::thread &ta, &tb;
    ~JoinOnExit() {
      a.Abort();
      b.Abort();
      if (ta.joinable()) ta.join();
      if (tb.joinable()) tb.join();
    }
  } join_on_exit{a, b, ta, tb};
  auto state = [&] {
    std::string logs;
    for (size_t r = 0; r < replicas_.size(); ++r) {
      const std::string log = replicas_[r]->log();
      logs += "\nreplica " + std::to_string(r) + " log (tail):\n" + log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
    }
    return a.Summary() + "\n" + b.Summary() + logs;
  };
  auto wait_for = [&](const std::function<bool()>& done, std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(20ms);
    return done();
  };
  // Mid-ingest: both agents are streaming.
  ASSERT_TRUE(wait_for([&] { return a.acknowledged() >= 30 && b.acknowledged() >= 30; }, 60s))
      << state();
  const size_t acked_before = a.acknowledged() + b.acknowledged();
  ASSERT_LT(acked_before, 2 * kBatches) << "ingest finished before the outage; make the run longer";
  double stop_seconds = 0;
  if (GetParam() == Outage::kStop) {
    // A graceful stop of ClickHouse (18.16) waits for its clients' keep-alive
    // connections to go idle, so with the uploaders streaming it would not
    // finish: they pause while it stops (batches keep queueing behind).
    a.SetPaused(true);
    b.SetPaused(true);
    const auto begin = std::chrono::steady_clock::now();
    ASSERT_TRUE(ch_->Stop().ok());
    stop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    a.SetPaused(false);
    b.SetPaused(false);
  } else {
    ASSERT_TRUE(ch_->Kill().ok());
  }
  const auto down_at = std::chrono::steady_clock::now();

  // While ClickHouse is down the replicas stay up and say why, as 503s.
  ASSERT_TRUE(wait_for([&] { return a.failures() >= 3 && b.failures() >= 3; }, 60s))
      << "the uploaders saw no failures: " << state();
  for (size_t r = 0; r < replicas_.size(); ++r) {
    HttpResult q = Get(r, "/api/v1/profile?" + Range(kH0, kH0 + kHourNs));
    EXPECT_EQ(q.status, 503) << "replica " << r << ": " << q.body;
    const json err = json::parse(q.body, nullptr, false);
    const std::string message = err.is_object() ? err["error"].value("message", "") : "";
    std::string lower = message;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    EXPECT_NE(lower.find("clickhouse"), std::string::npos) << "a query's error should name ClickHouse: " << q.body;
    EXPECT_EQ(Get(r, "/healthz").status, 200);
  }
  std::this_thread::sleep_for(2s);  // a few more retries, some spooled batches waiting
  ASSERT_TRUE(ch_->Restart().ok());
  const size_t acked_at_restart = a.acknowledged() + b.acknowledged();
  ASSERT_TRUE(wait_for([&] { return a.acknowledged() + b.acknowledged() > acked_at_restart; }, 60s))
      << "ingest did not resume after ClickHouse came back: " << state();
  const double recovery_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - down_at).count();
  ta.join();
  tb.join();
  ASSERT_EQ(a.error(), "") << state();
  ASSERT_EQ(b.error(), "") << state();
  std::vector<Sent> sent = a.sent();
  for (Sent& s : b.sent()) sent.push_back(std::move(s));
  ASSERT_EQ(sent.size(), 2 * kBatches);
  for (const Uploader* u : {&a, &b}) {
    for (const auto& [status, count] : u->answers()) {
      EXPECT_TRUE(status == 200 || status == 503) << "HTTP " << status << " x" << count << " (0: no answer)";
    }
    EXPECT_GT(u->answers().count(503), 0u) << "the replica never answered 503";
  }
  ExpectBothReplicasAnswer(sent, kH0, kH0 + kHourNs);
  printf("%s: %zu batches acknowledged before the outage; 503s %d/%d, duplicates on re-send %d/%d; "
         "ingest resumed %.1f s after the outage began; a 503 said: %s\n",
         GetParam() == Outage::kStop ? "stop" : "kill -9", acked_before, a.answers()[503], b.answers()[503],
         a.duplicates(), b.duplicates(), recovery_s, a.last_503_body().c_str());
  if (GetParam() == Outage::kStop) printf("ClickHouse took %.1f s to stop (SIGTERM to exit)\n", stop_seconds);
}

INSTANTIATE_TEST_SUITE_P(StopAndKill, ClickHouseOutageTest, ::testing::Values(Outage::kStop, Outage::kKill),
                         [](const ::testing::TestParamInfo<Outage>& info) {
                           return info.param == Outage::kStop ? "Stop" : "Kill";
                         });

}  // namespace
}  // namespace warpscope::testing
