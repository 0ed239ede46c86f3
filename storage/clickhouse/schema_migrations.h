// The ClickHouse store's schema and its versioned migrations
// (docs/design/clickhouse.md §5, §9).
//
// `schema_migrations` holds one row per applied step. Open reads its highest
// version, refuses a database newer than this build knows (FailedPrecondition:
// an older replica must not write into a schema it does not understand), and
// applies every newer step in order. Every statement is idempotent (CREATE ...
// IF NOT EXISTS; 18.16 has no ADD COLUMN IF NOT EXISTS, so later column
// additions must check system.columns first and treat code 44 as done), so
// two replicas starting at once are safe; each step's row is written after
// its statements.
//
// DDL depends on the server: SchemaFeatures come from SELECT version(). Only
// 18.16 (Debian 12) is tested; the variants for newer servers (marked
// "[untested: newer ClickHouse]") add column codecs and LowCardinality and are
// kept deliberately small.
//
// Versions: 1 = strings, functions, locations, stacks, label_sets, types,
// agent_sequences, samples, samples_1h, metric_points, gpu_activities,
// gpu_trace_coverage, with SipHash content ids. 2 = the same tables with XXH3
// content ids (content_ids.h): no DDL, but a database that already holds
// rows with schema 1's ids is refused (its series and stacks would appear
// twice, once under each id), so it is only applied to an empty one.
// 3 = gpu_activities gains the launch call's columns (launch_start_ns,
// launch_duration_ns, launch_tid, launch_api; 0 in older rows).
// 4 = cubins and cubin_uses (clickhouse_cubins.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/clickhouse_client.h"

namespace warpscope::clickhouse {

inline constexpr uint32_t kLatestSchemaVersion = 4;

struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string text;  // as SELECT version() said it
};

// "18.16.1" -> {18, 16}; "24.3.2.23" -> {24, 3}.
StatusOr<ServerVersion> ParseServerVersion(const std::string& text);

struct SchemaFeatures {
  // [untested: newer ClickHouse] CODEC(...) on columns (19.11+ ; we require 20.3+,
  // where codecs and LowCardinality are both production features).
  bool codecs = false;
  bool low_cardinality = false;
};

SchemaFeatures FeaturesFor(const ServerVersion& version);

// The statements of step `version` (1..kLatestSchemaVersion) in `database`.
std::vector<std::string> MigrationStatements(uint32_t version, const std::string& database,
                                             const SchemaFeatures& features);

// The columns step `version` adds to existing tables. RunMigrations adds each
// one that system.columns does not list yet (18.16 has no ADD COLUMN IF NOT
// EXISTS), after the step's statements.
struct ColumnAddition {
  std::string table;
  std::string column;
  std::string type;  // with its DEFAULT
};
std::vector<ColumnAddition> MigrationColumns(uint32_t version);

// The database's schema version: 0 when it has no schema_migrations table or no rows.
StatusOr<uint32_t> ReadSchemaVersion(ClickHouseClient& client);

// Creates the database if needed and brings it to kLatestSchemaVersion.
// FailedPrecondition when the database is at a newer version.
Status RunMigrations(ClickHouseClient& client, const ServerVersion& server, const std::string& applied_by);

}  // namespace warpscope::clickhouse
