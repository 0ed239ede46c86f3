// Unit tests without a server: URL parsing, RowBinary, pinned content ids
// (docs/design/clickhouse.md §4), error mapping.
#include <gtest/gtest.h>

#include <limits>

#include "storage/clickhouse/batch_rows.h"
#include "storage/clickhouse/clickhouse_client.h"
#include "storage/clickhouse/clickhouse_url.h"
#include "storage/clickhouse/content_ids.h"
#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/schema_migrations.h"
#include "storage/clickhouse/sql_text.h"
#include "storage/clickhouse/written_ids.h"

namespace warpscope::clickhouse {
namespace {

TEST(ClickHouseUrl, SchemesPortsAndDatabases) {
  StatusOr<ClickHouseEndpoint> e = ParseClickHouseUrl("clickhouse://ch.example:9123/prof");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->tls);
  EXPECT_EQ(e->host, "ch.example");
  EXPECT_EQ(e->port, 9123);
  EXPECT_EQ(e->database, "prof");
  EXPECT_EQ(e->BaseUrl(), "http://ch.example:9123/");

  e = ParseClickHouseUrl("clickhouse://127.0.0.1");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->port, 8123);
  EXPECT_EQ(e->database, "warpscope");

  e = ParseClickHouseUrl("clickhouse+https://ch.example/db_1/");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->port, 8443);
  EXPECT_EQ(e->database, "db_1");
  EXPECT_EQ(e->BaseUrl(), "https://ch.example:8443/");

  e = ParseClickHouseUrl("HTTPS://h:1/x");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->tls);
  e = ParseClickHouseUrl("http://h:8123/x");
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->tls);

  e = ParseClickHouseUrl("clickhouse://[::1]:8123/d");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->BaseUrl(), "http://[::1]:8123/");

  e = ParseClickHouseUrl("clickhouse://bob:p%40ss@h:8123/d");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->user, "bob");
  EXPECT_EQ(e->password, "p@ss");
  EXPECT_EQ(e->ToString(), "http://h:8123/d");  // no credentials in messages
}

TEST(ClickHouseUrl, RejectsEverythingElseClearly) {
  for (const char* bad :
       {"", "ch.example:8123/db", "tcp://h:9000/db", "clickhouse://", "clickhouse://h:/db", "clickhouse://h:99999/db",
        "clickhouse://h:12x/db", "clickhouse://h/db/table", "clickhouse://h/db?x=1", "clickhouse://h/my-db",
        "clickhouse://h/db;drop", "clickhouse://[::1/db", "clickhouse://h h/db", "clickhouse://u:%zz@h/db"}) {
    StatusOr<ClickHouseEndpoint> e = ParseClickHouseUrl(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(e.status().message().find("clickhouse://HOST:PORT/DATABASE"), std::string::npos) << bad;
  }
}

TEST(RowBinary, RoundTripsEveryType) {
  RowBinaryWriter w;
  w.UInt8(7);
  w.UInt32(0xdeadbeef);
  w.UInt64(std::numeric_limits<uint64_t>::max());
  w.Int64(-5);
  w.Float64(0.1);
  w.String(std::string(206, 'x'));
  w.String(std::string("a\0b", 3));
  EXPECT_EQ(w.data().substr(1 + 4 + 8 + 8 + 8, 2), "\xce\x01");  // 206 as ULEB128 (design doc)
  RowBinaryReader r(w.data());
  EXPECT_EQ(r.UInt8(), 7);
  EXPECT_EQ(r.UInt32(), 0xdeadbeefu);
  EXPECT_EQ(r.UInt64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.Int64(), -5);
  EXPECT_EQ(r.Float64(), 0.1);
  EXPECT_EQ(r.String(), std::string(206, 'x'));
  EXPECT_EQ(r.String(), std::string("a\0b", 3));
  EXPECT_TRUE(r.done());
  EXPECT_TRUE(r.status("x").ok());
}

TEST(RowBinary, TruncatedAnswerIsAnErrorNotGarbage) {
  RowBinaryWriter w;
  w.String("hello");
  const std::string cut = w.data().substr(0, 3);
  RowBinaryReader r(cut);
  EXPECT_EQ(r.String(), "");
  EXPECT_TRUE(r.done());
  Status s = r.status("labels");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("labels"), std::string::npos);
}

// Ids are part of the on-disk format (content_ids.h): pinned, so a change to
// the hash or an encoding cannot slip in without a new schema version.
TEST(ContentIds, ArePinned) {
  EXPECT_EQ(StringId("abc"), 11979361012061336784ull);  // XXH3_64bits("S\x03abc", 5), by libxxhash itself
  EXPECT_EQ(FunctionId("main", "main", "/src/main.c"), 7406772711263261993ull);
  EXPECT_EQ(LocationId("/lib/libc.so.6", "deadbeef", 0x4000, 0, {{42, -7}}), 5546794212622955648ull);
  EXPECT_EQ(StackId({1, 2, 3}), 6841259217356961326ull);
  EXPECT_EQ(SeriesId({{"node", "a"}, {"pod", "b"}}), 12049117167374318362ull);
  EXPECT_EQ(TypeId(TypeKind::kProfile, "cpu", "nanoseconds", 52631578), 14162244603857330045ull);
  EXPECT_EQ(BatchId("agent-1", 7), 13002931766092219395ull);
  // A key's id is XXH3-64 of its bytes (0 would become 1).
  ContentKey key('O');
  key.Str("/lib/libc.so.6").Str("deadbeef").U64(0x4000).U64(0).U64(42).I64(-7);
  EXPECT_EQ(key.Id(), LocationId("/lib/libc.so.6", "deadbeef", 0x4000, 0, {{42, -7}}));
}

TEST(ContentIds, EncodingsSeparateFieldsAndKinds) {
  EXPECT_NE(FunctionId("ab", "c", ""), FunctionId("a", "bc", ""));
  EXPECT_NE(TypeId(TypeKind::kProfile, "cpu", "samples", 0), TypeId(TypeKind::kMetric, "cpu", "samples", 0));
  EXPECT_NE(SeriesId({{"a", "b"}}), SeriesId({{"ab", ""}}));
  EXPECT_NE(BatchId("a", 1), BatchId("a", 2));
  EXPECT_EQ(StackId({1, 2}), StackId({1, 2}));
  EXPECT_NE(StackId({1, 2}), StackId({2, 1}));
  EXPECT_NE(StringId(""), 0u);
}

TEST(ClickHouseErrors, CodesMapToStatus) {
  EXPECT_EQ(ParseClickHouseErrorCode("Code: 60, e.displayText() = DB::Exception: Table x doesn't exist"), 60);
  EXPECT_EQ(ParseClickHouseErrorCode("Code: 60. DB::Exception: Table x does not exist. (UNKNOWN_TABLE)"), 60);
  EXPECT_EQ(ParseClickHouseErrorCode("no code"), 0);
  auto code = [](long http, int ch) { return StatusForClickHouseError(http, ch, "m", "", "h").code(); };
  EXPECT_EQ(code(500, 241), StatusCode::kUnavailable);  // memory limit
  EXPECT_EQ(code(500, 252), StatusCode::kUnavailable);  // too many parts
  EXPECT_EQ(code(500, 202), StatusCode::kUnavailable);  // too many simultaneous queries
  EXPECT_EQ(code(401, 193), StatusCode::kPermissionDenied);
  EXPECT_EQ(code(500, 427), StatusCode::kInvalidArgument);  // selector regex
  EXPECT_EQ(code(500, 159), StatusCode::kInvalidArgument);  // query timeout: range too long
  EXPECT_EQ(code(400, 62), StatusCode::kInternal);          // our SQL is wrong
  EXPECT_EQ(code(404, 60), StatusCode::kInternal);
  EXPECT_EQ(code(503, 0), StatusCode::kUnavailable);  // a proxy without ClickHouse behind it
  Status down = StatusForClickHouseError(0, 0, "", "Couldn't connect to server (curl 7)", "http://h:1/db");
  EXPECT_EQ(down.code(), StatusCode::kUnavailable);
  EXPECT_NE(down.message().find("http://h:1/db"), std::string::npos);
  EXPECT_NE(down.message().find("Couldn't connect"), std::string::npos);
}

TEST(SchemaMigrations, VersionsAndFeatures) {
  StatusOr<ServerVersion> v = ParseServerVersion("18.16.1\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->major, 18);
  EXPECT_EQ(v->minor, 16);
  EXPECT_FALSE(FeaturesFor(*v).codecs);
  v = ParseServerVersion("24.3.2.23");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(FeaturesFor(*v).codecs);
  EXPECT_FALSE(ParseServerVersion("banana").ok());
  // 18.16 DDL has no CODEC/LowCardinality (syntax errors there).
  for (const std::string& s : MigrationStatements(1, "db", FeaturesFor(ServerVersion{18, 16, "18.16.1"}))) {
    EXPECT_EQ(s.find("CODEC"), std::string::npos) << s;
    EXPECT_EQ(s.find("LowCardinality"), std::string::npos) << s;
  }
  EXPECT_TRUE(MigrationStatements(kLatestSchemaVersion + 1, "db", {}).empty());
}

TEST(WrittenDictionaryIds, RemembersPerTableAndDropsAFullSet) {
  WrittenDictionaryIds written(5000);
  std::vector<uint64_t> ids;
  for (uint64_t i = 1; i <= 3000; ++i) ids.push_back(StringId(std::to_string(i)));
  written.Add(DictionaryTable::kStacks, ids);
  EXPECT_TRUE(written.Contains(DictionaryTable::kStacks, ids[0]));
  EXPECT_TRUE(written.Contains(DictionaryTable::kStacks, ids[2999]));
  EXPECT_FALSE(written.Contains(DictionaryTable::kLocations, ids[0]));  // tables apart
  EXPECT_FALSE(written.Contains(DictionaryTable::kStacks, 0));
  const std::vector<uint64_t> probe{ids[5], 42, ids[7], 43};
  EXPECT_EQ(written.Unwritten(DictionaryTable::kStacks, probe), (std::vector<uint32_t>{1, 3}));
  // Past the bound the set starts over (a miss only re-inserts a row).
  written.Add(DictionaryTable::kStacks, std::vector<uint64_t>(ids.begin(), ids.begin() + 2500));
  EXPECT_TRUE(written.Contains(DictionaryTable::kStacks, ids[0]));
  EXPECT_FALSE(written.Contains(DictionaryTable::kStacks, ids[2999]));
  written.Clear();
  EXPECT_FALSE(written.Contains(DictionaryTable::kStacks, ids[0]));
}

TEST(BatchRows, LeavesOutDictionaryRowsAlreadyWritten) {
  v1::IngestBatch batch;
  batch.set_schema_version(1);
  batch.set_agent_id("a");
  batch.set_sequence(1);
  batch.add_strings("");
  batch.add_strings("main");
  batch.add_strings("work");
  for (uint32_t name : {1u, 2u}) {
    auto* f = batch.add_functions();
    f->set_name(name);
    auto* l = batch.add_locations();
    l->add_lines()->set_function(batch.functions_size() - 1);
  }
  auto* stack = batch.add_stacks();
  stack->add_locations(0);
  stack->add_locations(1);
  const BatchRows all = BuildBatchRows(batch);
  WrittenDictionaryIds written(100);
  for (const DictionaryTableRows& d : all.dictionaries) written.Add(d.which, d.ids);
  const BatchRows again = BuildBatchRows(batch, &written);
  EXPECT_TRUE(again.dictionaries.empty());
  EXPECT_EQ(again.batch_id, all.batch_id);
  written.Clear();
  written.Add(DictionaryTable::kFunctions, {FunctionId("main", "", "")});
  const BatchRows some = BuildBatchRows(batch, &written);
  for (const DictionaryTableRows& d : some.dictionaries) {
    if (d.which == DictionaryTable::kFunctions) {
      EXPECT_EQ(d.ids, (std::vector<uint64_t>{FunctionId("work", "", "")}));
    }
  }
}

TEST(SqlText, QuotesAndSelectors) {
  EXPECT_EQ(SqlString("it's a \\ test"), "'it\\'s a \\\\ test'");
  EXPECT_EQ(SqlInt64(-5), "toInt64(-5)");
  EXPECT_EQ(SeriesFilterSql(Selector()), "");
  const std::string sql = SeriesFilterSql(*Selector::Parse("{node=\"a\", comm=~\"x.*\"}"));
  // GLOBAL: sharded (Distributed) fact tables need no label_sets on the shards.
  EXPECT_EQ(sql.rfind("series_id GLOBAL IN (SELECT series_id FROM label_sets WHERE ", 0), 0u) << sql;
  EXPECT_NE(sql.find("labels.value[indexOf(labels.name, 'node')] = 'a'"), std::string::npos) << sql;
  EXPECT_NE(sql.find("match(labels.value[indexOf(labels.name, 'comm')], '(?-s)^(?:x.*)$')"), std::string::npos) << sql;
}

}  // namespace
}  // namespace warpscope::clickhouse
