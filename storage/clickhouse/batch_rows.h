// BatchRows: one validated IngestBatch turned into ClickHouse rows, in
// content-addressed ids (content_ids.h): the dictionary rows it references,
// each distinct id once and (given the replica's WrittenDictionaryIds) only
// those not known to be stored already, and the fact rows of each fact table as one
// RowBinary block that carries the batch's id in every row, plus the batch's
// rows of the hourly rollup. Built by the ingesting thread, then owned by
// it; no ClickHouse access here.
//
// The rollup (samples_1h, a SummingMergeTree): the batch's samples summed per
// (type, hour, series, stack) in C++, written by the store as its own INSERT
// - not by a materialized view, which is not atomic with its source table
// (design §6 (b)). Its block carries one marker row (type_id 0, hour of the
// batch's first sample, series_id 0, stack_id = batch_id, value 1): real type
// ids are never 0, so queries never see it, the key keeps it apart from every
// other batch's marker, and the block's atomicity makes "marker present" mean
// "this batch's rollup rows are in".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/clickhouse/written_ids.h"

namespace warpscope::clickhouse {

inline constexpr int64_t kHourNs = int64_t{3600} * 1'000'000'000;

}  // namespace warpscope::clickhouse

namespace warpscope::clickhouse {

// Rows of one dictionary table: ids[i]'s row is rows[i] (RowBinary, id first).
struct DictionaryTableRows {
  DictionaryTable which = DictionaryTable::kStrings;
  const char* table = "";
  const char* columns = "";  // the INSERT's column list
  std::vector<uint64_t> ids;
  std::vector<std::string> rows;
};

struct FactTableRows {
  const char* table = "";
  const char* columns = "";
  std::string data;  // RowBinary, one block
  uint64_t rows = 0;
  // The re-send repair (ingest_writer.h): `SELECT count() FROM table WHERE
  // stored_where` is `stored_count` when this block is in, 0 when it is not.
  // Fact tables match their rows by batch_id within the batch's time range
  // (so the key and the day partitions prune); the rollup matches its
  // batch marker row.
  std::string stored_where;
  uint64_t stored_count = 0;
};

struct BatchRows {
  uint64_t batch_id = 0;
  // In write order: what facts reference is written first.
  std::vector<DictionaryTableRows> dictionaries;
  // samples, samples_1h, metric_points, gpu_activities, gpu_trace_coverage; empty ones left out.
  std::vector<FactTableRows> facts;

  uint64_t fact_rows() const {
    uint64_t n = 0;
    for (const FactTableRows& f : facts) n += f.rows;
    return n;
  }
};

// `batch` must have passed ValidateBatch (indexes in range). With `written`,
// dictionary rows of ids it holds are left out (their ids are still used).
BatchRows BuildBatchRows(const warpscope::v1::IngestBatch& batch, const WrittenDictionaryIds* written = nullptr);

}  // namespace warpscope::clickhouse
