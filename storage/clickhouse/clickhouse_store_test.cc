// ClickHouse store tests beyond the conformance suite, on the binary's shared
// server: ids equal the server's sipHash64, the re-send repair, replicas
// sharing a database, migrations, credentials, retention, shared cubins.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "model/cubin_hash.h"
#include "storage/clickhouse/batch_rows.h"
#include "storage/clickhouse/clickhouse_store_test_util.h"
#include "storage/clickhouse/content_ids.h"
#include "storage/clickhouse/ingest_writer.h"
#include "storage/clickhouse/schema_migrations.h"
#include "storage/conformance/test_batches.h"

namespace warpscope::clickhouse {
namespace {

using storage::testing::BatchBuilder;
using storage::testing::kSec;
using storage::testing::kT0;
using storage::testing::OneSample;
using testing::ClickHouseInstance;

constexpr int64_t kHour = 3600 * kSec;

std::string TestDatabase() {
  return std::string("ws_t_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

ClickHouseInstance* Server() {
  std::string error;
  ClickHouseInstance* instance = testing::SharedClickHouse(&error);
  EXPECT_NE(instance, nullptr) << error;
  return instance;
}

int64_t Total(storage::ProfileStore& store, const std::string& selector = "") {
  storage::ProfileQuery q;
  q.from_ns = kT0;
  q.to_ns = kT0 + kHour;
  q.selector = *Selector::Parse(selector);
  StatusOr<storage::MergedProfile> p = store.SelectProfile(q);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? p->total : -1;
}

// Schema 2 changed how content ids are hashed: a schema 1 database that holds
// data is refused with a clear error, an empty one is brought to schema 2.
TEST(ClickHouseStore, ASchemaOneDatabaseWithDataIsRefused) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  const std::string db = TestDatabase();
  ASSERT_TRUE(ch->Query("CREATE DATABASE " + db).ok());
  ASSERT_TRUE(ch->Query("CREATE TABLE " + db +
                        ".schema_migrations (version UInt32, description String, applied_by String, "
                        "applied_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY version")
                  .ok());
  for (const std::string& statement : MigrationStatements(1, db, FeaturesFor(ServerVersion{18, 16, "18.16.1"}))) {
    ASSERT_TRUE(ch->Query(statement).ok()) << statement;
  }
  ASSERT_TRUE(ch->Query("INSERT INTO " + db + ".schema_migrations (version, description, applied_by) VALUES "
                        "(1, 'schema 1', 'test')")
                  .ok());
  ASSERT_TRUE(ch->Query("INSERT INTO " + db + ".label_sets (series_id, labels.name, labels.value) VALUES "
                        "(7, ['node'], ['a'])")
                  .ok());
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> refused = ClickHouseProfileStore::Open(testing::OptionsFor(*ch, db));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("schema 1's content ids"), std::string::npos)
      << refused.status().message();

  ASSERT_TRUE(ch->Query("TRUNCATE TABLE " + db + ".label_sets").ok());
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(testing::OptionsFor(*ch, db));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  StatusOr<std::string> version = ch->Query("SELECT max(version) FROM " + db + ".schema_migrations");
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, std::to_string(kLatestSchemaVersion) + "\n");
  ASSERT_TRUE((*store)->Ingest(OneSample("a", 1, kT0, 5)).ok());
  EXPECT_EQ(Total(**store), 5);
}

// A batch whose facts got (partly) in before a failure, and whose commit did
// not: the re-send is not a duplicate and stores each row exactly once.
TEST(ClickHouseStore, ReSendAfterFailureIsExact) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  std::unique_ptr<ClickHouseProfileStore> store = testing::OpenShared(TestDatabase());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Ingest(OneSample("a", 1, kT0, 1)).ok());

  BatchBuilder b("a", 2);
  b.Sample(kT0 + kSec, b.Cpu(), b.LabelSet({{"node", "n1"}}), b.SimpleStack({"work", "main"}), 10);
  b.MetricPoint(kT0, b.MetricType("gpu_power", "watts"), b.LabelSet({{"gpu", "0"}}), 250);
  b.GpuKernel(kT0, 100, b.LabelSet({{"pid", "1"}}), "gemm");
  // The crash: dictionaries and only the samples table written, no commit.
  const BatchRows rows = BuildBatchRows(b.batch());
  ClickHouseClientOptions client_options;
  client_options.user = testing::kClickHouseUser;
  client_options.password = testing::kClickHousePassword;
  ClickHouseClient client(store->endpoint(), client_options);
  IngestWriter writer(&client, {});
  ASSERT_TRUE(writer.WriteDictionaries(rows).ok());
  BatchRows samples_only = rows;
  samples_only.facts.resize(1);
  ASSERT_EQ(std::string(samples_only.facts[0].table), "samples");
  ASSERT_TRUE(writer.WriteFacts(samples_only, "test").ok());
  EXPECT_EQ(Total(*store), 11);  // the uncommitted rows are visible: the repair must not add them again

  StatusOr<storage::IngestResult> r = store->Ingest(b.batch());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->duplicate);
  EXPECT_EQ(Total(*store), 11);
  StatusOr<std::string> counts =
      ch->Query("SELECT (SELECT count() FROM " + TestDatabase() + ".samples), (SELECT count() FROM " + TestDatabase() +
                ".metric_points), (SELECT count() FROM " + TestDatabase() + ".gpu_activities)");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts, "2\t1\t1\n");
  r = store->Ingest(b.batch());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->duplicate);
}

// Two replicas on one database: what one stored is a duplicate for the
// other, and each answers with both agents' data.
TEST(ClickHouseStore, ReplicasShareDuplicatesAndData) {
  std::unique_ptr<ClickHouseProfileStore> a = testing::OpenShared(TestDatabase());
  std::unique_ptr<ClickHouseProfileStore> b = testing::OpenShared(TestDatabase());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->Ingest(OneSample("agent-a", 1, kT0, 3, "na")).ok());
  ASSERT_TRUE(b->Ingest(OneSample("agent-b", 1, kT0, 4, "nb")).ok());
  StatusOr<storage::IngestResult> again = b->Ingest(OneSample("agent-a", 1, kT0, 3, "na"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
  EXPECT_EQ(Total(*a), 7);
  EXPECT_EQ(Total(*b), 7);
  EXPECT_EQ(Total(*b, "{node=\"na\"}"), 3);
}

// Group commit: many agents ingesting at once share INSERTs; every batch is
// stored once, a re-send of any of them is a duplicate, and the rows of each
// agent stay its own (batch_id per row, agent_sequences per batch).
TEST(ClickHouseStore, ConcurrentAgentsAreGroupedAndStoredOnce) {
  std::unique_ptr<ClickHouseProfileStore> store = testing::OpenShared(TestDatabase());
  ASSERT_NE(store, nullptr);
  constexpr int kAgents = 8, kBatches = 6;
  std::vector<std::thread> agents;
  std::atomic<int> failures{0};
  for (int a = 0; a < kAgents; ++a) {
    agents.emplace_back([&, a] {
      for (int s = 1; s <= kBatches; ++s) {
        StatusOr<storage::IngestResult> r = store->Ingest(
            OneSample("agent-" + std::to_string(a), s, kT0 + s * kSec, a + 1, "n" + std::to_string(a), "f"));
        if (!r.ok() || r->duplicate) ++failures;
      }
    });
  }
  for (std::thread& t : agents) t.join();
  EXPECT_EQ(failures.load(), 0);
  int64_t want = 0;
  for (int a = 0; a < kAgents; ++a) {
    want += (a + 1) * kBatches;
    EXPECT_EQ(Total(*store, "{node=\"n" + std::to_string(a) + "\"}"), (a + 1) * kBatches) << a;
  }
  EXPECT_EQ(Total(*store), want);
  for (int a = 0; a < kAgents; ++a) {
    StatusOr<storage::IngestResult> again =
        store->Ingest(OneSample("agent-" + std::to_string(a), 3, kT0 + 3 * kSec, a + 1, "n" + std::to_string(a), "f"));
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->duplicate);
  }
  StatusOr<std::string> rows = Server()->Query("SELECT count(), uniqExact(batch_id) FROM " + TestDatabase() +
                                               ".samples");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, std::to_string(kAgents * kBatches) + "\t" + std::to_string(kAgents * kBatches) + "\n");
  StatusOr<std::string> sequences = Server()->Query(
      "SELECT count(DISTINCT agent_id), max(sequence) FROM " + TestDatabase() + ".agent_sequences");
  ASSERT_TRUE(sequences.ok());
  EXPECT_EQ(*sequences, std::to_string(kAgents) + "\t" + std::to_string(kBatches) + "\n");
  EXPECT_EQ(store->stats().ingested_batches, static_cast<uint64_t>(kAgents * kBatches));
}

TEST(ClickHouseStore, MigrationsAreIdempotentAndANewerSchemaIsRefused) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  const std::string db = TestDatabase();
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<ClickHouseProfileStore> store = testing::OpenShared(db);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Ingest(OneSample("a", i + 1, kT0, 1)).ok());
    EXPECT_EQ(Total(*store), i + 1);  // data kept over reopening
  }
  StatusOr<std::string> versions = ch->Query("SELECT count(), max(version) FROM " + db + ".schema_migrations");
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(*versions, std::to_string(kLatestSchemaVersion) + "\t" + std::to_string(kLatestSchemaVersion) + "\n");
  StatusOr<std::string> tables = ch->Query("SELECT count() FROM system.tables WHERE database = '" + db + "'");
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, "15\n");

  ASSERT_TRUE(ch->Query("INSERT INTO " + db + ".schema_migrations (version, description, applied_by) VALUES (" +
                        std::to_string(kLatestSchemaVersion + 1) + ", 'from the future', 'test')")
                  .ok());
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> newer = ClickHouseProfileStore::Open(testing::OptionsFor(*ch, db));
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(newer.status().message().find("newer than this warpscope-server knows"), std::string::npos)
      << newer.status().message();
}

TEST(ClickHouseStore, CredentialsAreChecked) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  ClickHouseOptions o = testing::OptionsFor(*ch, TestDatabase());
  o.password = "wrong";
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(o);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(store.status().message().find("193"), std::string::npos) << store.status().message();
  // "default" without a password works too, and so do credentials in the URL.
  o.user = "default";
  o.password = "";
  EXPECT_TRUE(ClickHouseProfileStore::Open(o).ok());
  o.user = "";
  o.url = "clickhouse://warpscope:s3cret@127.0.0.1:" + std::to_string(ch->http_port()) + "/" + TestDatabase();
  EXPECT_TRUE(ClickHouseProfileStore::Open(o).ok());
}

TEST(ClickHouseStore, RetentionDropsWholeOldDaysAndQueriesIgnoreOlderRows) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  const std::string db = TestDatabase();
  {
    std::unique_ptr<ClickHouseProfileStore> keep = testing::OpenShared(db);
    ASSERT_NE(keep, nullptr);
    ASSERT_TRUE(keep->Ingest(OneSample("a", 1, kT0, 5)).ok());  // 2023-11-14
    BatchBuilder b("a", 2);
    b.MetricPoint(kT0, b.MetricType("gpu_power", "watts"), b.LabelSet({{"gpu", "0"}}), 250);
    b.GpuKernel(kT0, 100, b.LabelSet({{"pid", "1"}}), "gemm");
    b.GpuCoverage(kT0, 0, 1, 1, kT0 + kSec);
    ASSERT_TRUE(keep->Ingest(b.batch()).ok());
    EXPECT_EQ(Total(*keep), 5);
  }
  ClickHouseOptions o = testing::OptionsFor(*ch, db);
  o.retention_ns = 24 * kHour;
  o.retention_clock_guard_ns = 0;  // the rows are from 2023 and no newer ones come: as after a clock step
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> store = ClickHouseProfileStore::Open(o);  // applies it once
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  StatusOr<std::string> rows = ch->Query("SELECT (SELECT count() FROM " + db + ".samples) + (SELECT count() FROM " +
                                         db + ".metric_points) + (SELECT count() FROM " + db +
                                         ".gpu_activities) + (SELECT count() FROM " + db + ".gpu_trace_coverage)");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, "0\n");
  EXPECT_TRUE((*store)->ApplyRetentionNow().ok());  // nothing left to drop: still fine
  // Dictionaries stay; the agent's sequence too.
  StatusOr<storage::IngestResult> again = (*store)->Ingest(OneSample("a", 1, kT0, 5));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->duplicate);
}

// A server clock stepped forward past retention used to drop every day at
// the next pass. The pass now stands aside while the clock is far ahead of
// the newest row (counted); the same pass without the guard drops them.
TEST(ClickHouseStore, AClockSteppedForwardPausesRetention) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  const std::string db = TestDatabase();
  {
    std::unique_ptr<ClickHouseProfileStore> keep =
        testing::OpenShared(db, [](ClickHouseOptions& o) { o.now_ns = [] { return kT0 + kSec; }; });
    ASSERT_NE(keep, nullptr);
    ASSERT_TRUE(keep->Ingest(OneSample("a", 1, kT0, 5)).ok());
  }
  auto samples = [&] {
    StatusOr<std::string> n = ch->Query("SELECT count() FROM " + db + ".samples");
    return n.ok() ? *n : n.status().ToString();
  };
  ClickHouseOptions o = testing::OptionsFor(*ch, db);
  o.retention_ns = 24 * kHour;
  o.now_ns = [] { return kT0 + 3 * 24 * kHour; };  // stepped forward three days
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> jumped = ClickHouseProfileStore::Open(o);  // applies it once
  ASSERT_TRUE(jumped.ok()) << jumped.status().ToString();
  EXPECT_EQ((*jumped)->stats().retention_paused, 1u);
  EXPECT_EQ(samples(), "1\n") << "nothing dropped";
  jumped->reset();

  o.retention_clock_guard_ns = 0;
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> unguarded = ClickHouseProfileStore::Open(o);
  ASSERT_TRUE(unguarded.ok()) << unguarded.status().ToString();
  EXPECT_EQ((*unguarded)->stats().retention_paused, 0u);
  EXPECT_EQ(samples(), "0\n");
}

// Stateless replicas share the cubins; retention drops the use days past it
// and then deletes the cubins no use names (a mutation ClickHouse applies in
// the background).
TEST(ClickHouseStore, ReplicasShareCubinsAndRetentionDeletesUnusedOnes) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  const std::string db = TestDatabase();
  const auto at_t0 = [](ClickHouseOptions& o) { o.now_ns = [] { return kT0; }; };
  std::unique_ptr<ClickHouseProfileStore> a = testing::OpenShared(db, at_t0);
  std::unique_ptr<ClickHouseProfileStore> b = testing::OpenShared(db, at_t0);
  ASSERT_TRUE(a != nullptr && b != nullptr);
  const std::string bytes = std::string("\x7f" "ELF") + std::string(69'996, '\x7f');
  const std::string hash = CubinHash(bytes);
  ASSERT_EQ(a->PutCubin(hash, bytes)->outcome, storage::CubinPutOutcome::kStored);
  EXPECT_EQ(b->PutCubin(hash, bytes)->outcome, storage::CubinPutOutcome::kAlreadyStored);
  StatusOr<std::optional<std::string>> read = b->ReadCubin(hash);
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status().ToString();
  EXPECT_TRUE(**read == bytes);
  StatusOr<std::string> rows = ch->Query("SELECT count() FROM " + db + ".cubins FINAL");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, "1\n");

  ClickHouseOptions o = testing::OptionsFor(*ch, db);
  o.retention_ns = 24 * kHour;  // the wall clock: kT0's day is long past
  StatusOr<std::unique_ptr<ClickHouseProfileStore>> later = ClickHouseProfileStore::Open(o);  // applies it once
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ((*later)->stats().cubins.expired, 1u);
  EXPECT_FALSE((*later)->FindCubin(hash)->has_value());
  for (int i = 0; i < 100 && rows.ok() && *rows != "0\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rows = ch->Query("SELECT count() FROM " + db + ".cubins");
  }
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(*rows, "0\n") << "the delete mutation ran";
}

// Profiles over whole hours come from samples_1h, the edges from samples:
// every range (aligned, ragged, inside one hour) must give what summing the
// raw samples gives, before and after ClickHouse merges the rollup, with
// selectors and with one type name in two periods (answers in nanoseconds).
TEST(ClickHouseStore, RollupAnswersEqualTheRawRows) {
  ClickHouseInstance* ch = Server();
  ASSERT_NE(ch, nullptr);
  const std::string db = TestDatabase();
  std::unique_ptr<ClickHouseProfileStore> store = testing::OpenShared(db);
  ASSERT_NE(store, nullptr);
  constexpr int64_t kH0 = int64_t{1'700'002'800} * kSec;  // 2023-11-14 23:00 UTC
  constexpr int64_t kMinute = 60 * kSec;
  struct Row {
    int64_t time;
    std::string node, leaf;
    int64_t value, period;
  };
  std::vector<Row> rows;
  uint64_t seq = 0;
  // Every 10 minutes from H0 - 90 min to H0 + 4 h, three nodes; node c
  // samples at 20 Hz (period 50 ms) in odd batches.
  for (int64_t t = kH0 - 90 * kMinute; t < kH0 + 240 * kMinute; t += 10 * kMinute) {
    ++seq;
    for (const std::string node : {"a", "b", "c"}) {
      BatchBuilder b("agent-" + node, seq);
      const int64_t period = node == "c" && seq % 2 == 1 ? 50'000'000 : 10'000'000;
      const uint32_t type = b.Type("cpu", "samples", period);
      const uint32_t set = b.LabelSet({{"node", node}});
      for (int i = 0; i < 4; ++i) {
        const std::string leaf = "f" + std::to_string((seq + i) % 5);
        const int64_t value = 1 + (seq * 7 + i * 3 + node[0]) % 11;
        b.Sample(t + i * kSec, type, set, b.SimpleStack({leaf, "main"}), value);
        rows.push_back({t + i * kSec, node, leaf, value, period});
      }
      StatusOr<storage::IngestResult> r = store->Ingest(b.batch());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }
  StatusOr<std::string> markers = ch->Query("SELECT count() FROM " + db + ".samples_1h WHERE type_id = 0");
  ASSERT_TRUE(markers.ok());
  EXPECT_EQ(*markers, std::to_string(3 * seq) + "\n");

  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    const std::vector<std::pair<int64_t, int64_t>> ranges = {
        {kH0, kH0 + 3 * kHour},                                // whole hours only
        {kH0 - 20 * kMinute, kH0 + 2 * kHour + 10 * kMinute},  // edges and whole hours
        {kH0 + 10 * kMinute, kH0 + 50 * kMinute},              // inside one hour
        {kH0 - 2 * kHour, kH0 + 5 * kHour},                    // everything
        {kH0 + kHour + 1, kH0 + 3 * kHour - 1},                // just inside the boundaries
        {kH0 + kHour, kH0 + kHour}};                           // empty
    for (const auto& [from, to] : ranges) {
      for (const std::string selector : {"", "{node=\"c\"}", "{node!~\"a|c\"}"}) {
        // The answer is in nanoseconds only when the rows it reads mix
        // periods (storage/type_scaling.h).
        std::vector<const Row*> selected;
        std::set<std::string> nodes;
        std::set<int64_t> periods;
        for (const Row& r : rows) {
          if (r.time < from || r.time >= to) continue;
          if (selector == "{node=\"c\"}" && r.node != "c") continue;
          if (selector == "{node!~\"a|c\"}" && r.node != "b") continue;
          selected.push_back(&r);
          nodes.insert(r.node);
          periods.insert(r.period);
        }
        const bool mixed = periods.size() > 1;
        std::map<std::string, int64_t> want;
        for (const Row* r : selected) want[r->leaf] += mixed ? r->value * r->period : r->value;
        storage::ProfileQuery q;
        q.from_ns = from;
        q.to_ns = to;
        q.selector = *Selector::Parse(selector);
        StatusOr<storage::MergedProfile> p = store->SelectProfile(q);
        ASSERT_TRUE(p.ok()) << p.status().ToString();
        std::map<std::string, int64_t> got;
        for (const storage::StackValue& sv : p->stacks) got[p->frame(sv.frames[0]).function_name] += sv.value;
        EXPECT_EQ(got, want) << (from - kH0) / kMinute << " min .. " << (to - kH0) / kMinute << " min " << selector;
        EXPECT_EQ(p->series, nodes.size()) << (from - kH0) / kMinute << " min " << selector;
        EXPECT_EQ(p->type.sample_unit, mixed ? "nanoseconds" : "samples") << selector;
      }
    }
  };
  check("as inserted");
  ASSERT_TRUE(ch->Query("OPTIMIZE TABLE " + db + ".samples_1h FINAL").ok());
  StatusOr<std::string> merged = ch->Query("SELECT count() FROM " + db + ".samples_1h WHERE type_id != 0");
  ASSERT_TRUE(merged.ok());
  EXPECT_LT(std::stoll(*merged), static_cast<int64_t>(rows.size()));  // the rollup does roll up
  check("merged");
}

}  // namespace
}  // namespace warpscope::clickhouse
