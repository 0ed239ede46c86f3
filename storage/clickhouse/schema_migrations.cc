#include "storage/clickhouse/schema_migrations.h"

#include <cctype>

#include "base/logging.h"
#include "storage/clickhouse/row_binary.h"

namespace warpscope::clickhouse {
namespace {

// Day partitions of a nanosecond column (retention drops whole days: §8).
std::string DayPartition(const std::string& column) {
  return "toYYYYMMDD(toDateTime(intDiv(" + column + ", 1000000000)))";
}

// Column types that differ by server. On 18.16 they are plain.
struct Types {
  std::string time;   // a nanosecond timestamp in a fact table
  std::string id;     // a dictionary id in a fact table
  std::string label;  // label names, mapping files: few distinct values
};

Types TypesFor(const SchemaFeatures& f) {
  Types t{"Int64", "UInt64", "String"};
  if (f.codecs) {  // [untested: newer ClickHouse]
    t.time = "Int64 CODEC(Delta, ZSTD)";
    t.id = "UInt64 CODEC(ZSTD)";
  }
  if (f.low_cardinality) t.label = "LowCardinality(String)";  // [untested: newer ClickHouse]
  return t;
}

std::vector<std::string> Version1(const std::string& db, const SchemaFeatures& f) {
  const Types t = TypesFor(f);
  const std::string d = "`" + db + "`.";
  return {
      // Dictionaries: content-addressed ids (content_ids.h), written by whichever
      // replica first sees them; duplicates collapse at merge, queries use any().
      "CREATE TABLE IF NOT EXISTS " + d +
          "strings (string_id UInt64, value String) "
          "ENGINE = ReplacingMergeTree ORDER BY string_id",
      "CREATE TABLE IF NOT EXISTS " + d +
          "functions (function_id UInt64, name String, system_name String, "
          "filename String) ENGINE = ReplacingMergeTree ORDER BY function_id",
      "CREATE TABLE IF NOT EXISTS " + d +
          "locations (location_id UInt64, address UInt64, kind UInt8, "
          "mapping_file " +
          t.label +
          ", build_id String, lines Nested(function_id UInt64, line Int64)) "
          "ENGINE = ReplacingMergeTree ORDER BY location_id",
      "CREATE TABLE IF NOT EXISTS " + d +
          "stacks (stack_id UInt64, location_ids Array(UInt64)) "
          "ENGINE = ReplacingMergeTree ORDER BY stack_id",
      "CREATE TABLE IF NOT EXISTS " + d + "label_sets (series_id UInt64, labels Nested(name " + t.label +
          ", value String)) ENGINE = ReplacingMergeTree ORDER BY series_id",
      "CREATE TABLE IF NOT EXISTS " + d +
          "types (type_id UInt64, kind UInt8, name String, unit String, "
          "period_nanos Int64) ENGINE = ReplacingMergeTree ORDER BY type_id",
      "CREATE TABLE IF NOT EXISTS " + d +
          "agent_sequences (agent_id String, sequence UInt64) "
          "ENGINE = ReplacingMergeTree(sequence) ORDER BY agent_id",
      // Facts: every row carries its batch's id, for the re-send repair (ingest_writer.h).
      "CREATE TABLE IF NOT EXISTS " + d + "samples (type_id UInt64, time_ns " + t.time + ", series_id " + t.id +
          ", stack_id " + t.id + ", value Int64, batch_id UInt64) ENGINE = MergeTree PARTITION BY " +
          DayPartition("time_ns") + " ORDER BY (type_id, intDiv(time_ns, 300000000000), series_id, time_ns, stack_id)",
      // The hourly rollup of samples, written by the store beside them (batch_rows.h).
      "CREATE TABLE IF NOT EXISTS " + d + "samples_1h (type_id UInt64, hour_ns " + t.time + ", series_id " + t.id +
          ", stack_id " + t.id + ", value Int64) ENGINE = SummingMergeTree((value)) PARTITION BY " +
          DayPartition("hour_ns") + " ORDER BY (type_id, hour_ns, series_id, stack_id)",
      "CREATE TABLE IF NOT EXISTS " + d + "metric_points (type_id UInt64, series_id " + t.id + ", time_ns " + t.time +
          ", value Float64, batch_id UInt64) ENGINE = MergeTree PARTITION BY " + DayPartition("time_ns") +
          " ORDER BY (type_id, series_id, time_ns)",
      "CREATE TABLE IF NOT EXISTS " + d + "gpu_activities (start_ns " + t.time + ", duration_ns Int64, series_id " +
          t.id + ", kind UInt8, name_id " + t.id + ", system_name_id " + t.id +
          ", device UInt32, stream UInt32, "
          "correlation_id UInt64, graph_id UInt64, grid_x UInt32, grid_y UInt32, grid_z UInt32, block_x UInt32, "
          "block_y UInt32, block_z UInt32, registers_per_thread UInt32, static_shared_bytes UInt32, "
          "dynamic_shared_bytes UInt32, bytes UInt64, copy_kind UInt32, stack_id UInt64, batch_id UInt64) "
          "ENGINE = MergeTree PARTITION BY " +
          DayPartition("start_ns") + " ORDER BY (intDiv(start_ns, 60000000000), series_id, start_ns)",
      "CREATE TABLE IF NOT EXISTS " + d + "gpu_trace_coverage (second_ns " + t.time + ", series_id " + t.id +
          ", recorded UInt64, sent UInt64, complete_until_ns Int64, batch_id UInt64) ENGINE = MergeTree "
          "PARTITION BY " +
          DayPartition("second_ns") + " ORDER BY (second_ns, series_id)",
  };
}

// The cubins (clickhouse_cubins.h): one row per cubin, and one per cubin and
// day it was used, in day partitions that retention drops like the facts'.
std::vector<std::string> Version4(const std::string& db) {
  const std::string d = "`" + db + "`.";
  return {
      "CREATE TABLE IF NOT EXISTS " + d +
          "cubins (hash String, bytes String, size UInt64) ENGINE = ReplacingMergeTree ORDER BY hash",
      "CREATE TABLE IF NOT EXISTS " + d +
          "cubin_uses (hash String, day Date) ENGINE = ReplacingMergeTree PARTITION BY toYYYYMMDD(day) ORDER BY hash",
  };
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out.push_back('\\');
    out.push_back(c);
  }
  return out + "'";
}

}  // namespace

StatusOr<ServerVersion> ParseServerVersion(const std::string& text) {
  ServerVersion v;
  v.text = text;
  while (!v.text.empty() && std::isspace(static_cast<unsigned char>(v.text.back()))) v.text.pop_back();
  int* parts[2] = {&v.major, &v.minor};
  size_t i = 0;
  for (int p = 0; p < 2; ++p) {
    if (i >= v.text.size() || !std::isdigit(static_cast<unsigned char>(v.text[i]))) {
      return InternalError("cannot read ClickHouse's version \"" + v.text + "\"");
    }
    while (i < v.text.size() && std::isdigit(static_cast<unsigned char>(v.text[i]))) {
      *parts[p] = *parts[p] * 10 + (v.text[i++] - '0');
      if (*parts[p] > 100000) return InternalError("cannot read ClickHouse's version \"" + v.text + "\"");
    }
    if (p == 0) {
      if (i >= v.text.size() || v.text[i] != '.')
        return InternalError("cannot read ClickHouse's version \"" + v.text + "\"");
      ++i;
    }
  }
  return v;
}

SchemaFeatures FeaturesFor(const ServerVersion& version) {
  SchemaFeatures f;
  const bool modern = version.major > 20 || (version.major == 20 && version.minor >= 3);
  f.codecs = modern;
  f.low_cardinality = modern;
  return f;
}

std::vector<std::string> MigrationStatements(uint32_t version, const std::string& database,
                                             const SchemaFeatures& features) {
  switch (version) {
    case 1:
      return Version1(database, features);
    case 2:
      return {"SELECT 1"};  // the id encoding changed (schema_migrations.h); nothing to alter
    case 4:
      return Version4(database);
    default:
      return {};
  }
}

std::vector<ColumnAddition> MigrationColumns(uint32_t version) {
  if (version != 3) return {};
  return {{"gpu_activities", "launch_start_ns", "Int64 DEFAULT 0"},
          {"gpu_activities", "launch_duration_ns", "Int64 DEFAULT 0"},
          {"gpu_activities", "launch_tid", "UInt32 DEFAULT 0"},
          {"gpu_activities", "launch_api", "UInt8 DEFAULT 0"}};
}

namespace {

StatusOr<bool> HasColumn(ClickHouseClient& client, const std::string& db, const ColumnAddition& c) {
  ASSIGN_OR_RETURN(const std::string found,
                   client.Execute(ClickHouseRequest::Read("SELECT count() FROM system.columns WHERE database = " +
                                                          Quote(db) + " AND table = " + Quote(c.table) +
                                                          " AND name = " + Quote(c.column) + " FORMAT RowBinary")
                                      .OutsideDatabase()));
  RowBinaryReader r(found);
  const uint64_t n = r.UInt64();
  RETURN_IF_ERROR(r.status("system.columns lookup"));
  return n > 0;
}

// Another replica may add the column between the check and the ALTER: its
// failure then counts as done when the column is there afterwards.
Status AddColumnIfMissing(ClickHouseClient& client, const std::string& db, const ColumnAddition& c) {
  ASSIGN_OR_RETURN(const bool present, HasColumn(client, db, c));
  if (present) return Status::Ok();
  Status added = client
                     .Execute(ClickHouseRequest::Statement("ALTER TABLE `" + db + "`." + c.table + " ADD COLUMN " +
                                                           c.column + " " + c.type)
                                  .OutsideDatabase())
                     .status();
  if (added.ok()) return added;
  ASSIGN_OR_RETURN(const bool there_now, HasColumn(client, db, c));
  return there_now ? Status::Ok() : added;
}

}  // namespace

StatusOr<uint32_t> ReadSchemaVersion(ClickHouseClient& client) {
  ClickHouseRequest exists =
      ClickHouseRequest::Read("SELECT count() FROM system.tables WHERE database = " +
                              Quote(client.endpoint().database) + " AND name = 'schema_migrations' FORMAT RowBinary")
          .OutsideDatabase();
  ASSIGN_OR_RETURN(std::string found, client.Execute(exists));
  RowBinaryReader r(found);
  const uint64_t tables = r.UInt64();
  RETURN_IF_ERROR(r.status("schema_migrations lookup"));
  if (tables == 0) return 0u;
  ClickHouseRequest max =
      ClickHouseRequest::Read("SELECT toUInt32(max(version)) FROM schema_migrations FORMAT RowBinary");
  ASSIGN_OR_RETURN(std::string body, client.Execute(max));
  RowBinaryReader v(body);
  const uint32_t version = v.UInt32();
  RETURN_IF_ERROR(v.status("schema version"));
  return version;
}

Status RunMigrations(ClickHouseClient& client, const ServerVersion& server, const std::string& applied_by) {
  const std::string& db = client.endpoint().database;
  RETURN_IF_ERROR(
      client.Execute(ClickHouseRequest::Statement("CREATE DATABASE IF NOT EXISTS `" + db + "`").OutsideDatabase())
          .status());
  RETURN_IF_ERROR(client
                      .Execute(ClickHouseRequest::Statement(
                                   "CREATE TABLE IF NOT EXISTS `" + db +
                                   "`.schema_migrations (version UInt32, description String, applied_by String, "
                                   "applied_at DateTime DEFAULT now()) ENGINE = ReplacingMergeTree ORDER BY version")
                                   .OutsideDatabase())
                      .status());
  ASSIGN_OR_RETURN(const uint32_t current, ReadSchemaVersion(client));
  if (current > kLatestSchemaVersion) {
    return FailedPreconditionError("ClickHouse database " + db + " has schema version " + std::to_string(current) +
                                   ", newer than this warpscope-server knows (" + std::to_string(kLatestSchemaVersion) +
                                   "); upgrade warpscope-server, or point it at another database");
  }
  if (current == 1) {
    // Schema 1's SipHash ids cannot be mixed with schema 2's XXH3 ids.
    ASSIGN_OR_RETURN(const std::string rows,
                     client.Execute(ClickHouseRequest::Read("SELECT count() FROM (SELECT 1 FROM label_sets LIMIT 1)")));
    if (rows != "0\n") {
      return FailedPreconditionError("ClickHouse database " + db +
                                     " holds data written with schema 1's content ids (a development build of "
                                     "warpscope-server); schema 2 hashes ids differently: point this server at a new "
                                     "database, or drop this one");
    }
  }
  const SchemaFeatures features = FeaturesFor(server);
  for (uint32_t version = current + 1; version <= kLatestSchemaVersion; ++version) {
    for (const std::string& statement : MigrationStatements(version, db, features)) {
      RETURN_IF_ERROR(client.Execute(ClickHouseRequest::Statement(statement).OutsideDatabase())
                          .status()
                          .WithContext("schema migration " + std::to_string(version)));
    }
    for (const ColumnAddition& column : MigrationColumns(version)) {
      RETURN_IF_ERROR(AddColumnIfMissing(client, db, column)
                          .WithContext("schema migration " + std::to_string(version) + ": column " + column.column));
    }
    RowBinaryWriter row;
    row.UInt32(version);
    row.String("warpscope schema " + std::to_string(version) + " (ClickHouse " + server.text + ")");
    row.String(applied_by);
    RETURN_IF_ERROR(
        client
            .Execute(ClickHouseRequest::Insert("INSERT INTO schema_migrations (version, description, applied_by) "
                                               "FORMAT RowBinary",
                                               row.Take()))
            .status());
    LOG_INFO() << "ClickHouse database " << db << ": schema migration " << version << " applied";
  }
  return Status::Ok();
}

}  // namespace warpscope::clickhouse
