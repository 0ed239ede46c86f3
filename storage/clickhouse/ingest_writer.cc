#include "storage/clickhouse/ingest_writer.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <unordered_set>

#include "storage/clickhouse/row_binary.h"
#include "storage/clickhouse/sql_text.h"

namespace warpscope::clickhouse {
namespace {

// ClickHouse cuts an INSERT into blocks of max_insert_block_size rows, each
// its own part: raise it so one table's rows of a group are one block.
constexpr uint64_t kDefaultMaxInsertBlockSize = 1'048'576;
// max_query_size's default (256 KiB); a check of a large group may be longer.
constexpr size_t kDefaultMaxQuerySize = 262'144;

// Fact tables in insert order (the rollup right after samples, as BatchRows).
constexpr const char* kFactTables[] = {"samples", "samples_1h", "metric_points", "gpu_activities",
                                       "gpu_trace_coverage"};

ClickHouseRequest InsertRequest(const char* table, const char* columns, std::string data, uint64_t rows) {
  ClickHouseRequest r = ClickHouseRequest::Insert(
      std::string("INSERT INTO ") + table + " (" + columns + ") FORMAT RowBinary", std::move(data));
  if (rows >= kDefaultMaxInsertBlockSize) r.settings.emplace_back("max_insert_block_size", std::to_string(rows + 1));
  return r;
}

}  // namespace

Status CheckNotPartial(const BatchRows& rows, const StoredBatchState& state, const std::string& what) {
  for (size_t i = 0; i < rows.facts.size() && i < state.counts.size(); ++i) {
    const FactTableRows& f = rows.facts[i];
    if (state.counts[i] == 0 || state.counts[i] == f.stored_count) continue;
    return DataLossError(std::string(f.table) + " holds " + std::to_string(state.counts[i]) + " of the " +
                         std::to_string(f.stored_count) + " rows of " + what + " (batch_id " +
                         std::to_string(rows.batch_id) +
                         "): a partial insert, which ClickHouse's one-block inserts should rule out");
  }
  return Status::Ok();
}

IngestWriter::IngestWriter(ClickHouseClient* client, IngestWriterOptions options)
    : client_(client), options_(options), written_(options.cached_ids_per_table) {}

StatusOr<std::vector<StoredBatchState>> IngestWriter::CheckStored(const std::vector<const BatchRows*>& group,
                                                                  const std::vector<std::string>* agents) {
  return CheckStored(group, agents, options_.retry);
}

StatusOr<std::vector<StoredBatchState>> IngestWriter::CheckStored(const std::vector<const BatchRows*>& group,
                                                                  const std::vector<std::string>* agents,
                                                                  const RetryPolicy& retry) {
  std::string sql = "SELECT ";
  size_t columns = 0;
  auto column = [&](const std::string& scalar) {
    if (columns++ > 0) sql += ", ";
    sql += "(" + scalar + ")";
  };
  for (size_t b = 0; b < group.size(); ++b) {
    if (agents != nullptr) {
      column("SELECT max(sequence) FROM agent_sequences WHERE agent_id = " + SqlString((*agents)[b]));
    }
    for (const FactTableRows& f : group[b]->facts) {
      column(std::string("SELECT count() FROM ") + f.table + " WHERE " + f.stored_where);
    }
  }
  std::vector<StoredBatchState> out(group.size());
  for (size_t b = 0; b < group.size(); ++b) out[b].counts.assign(group[b]->facts.size(), 0);
  if (columns == 0) return out;
  sql += " FORMAT RowBinary";
  ClickHouseRequest request = ClickHouseRequest::Read(std::move(sql));
  if (request.sql.size() > kDefaultMaxQuerySize / 2) {
    request.settings.emplace_back("max_query_size", std::to_string(request.sql.size() * 2));
  }
  ASSIGN_OR_RETURN(std::string body, client_->Execute(request, retry));
  RowBinaryReader r(body);
  for (size_t b = 0; b < group.size(); ++b) {
    if (agents != nullptr) out[b].sequence = r.UInt64();
    for (uint64_t& count : out[b].counts) count = r.UInt64();
  }
  RETURN_IF_ERROR(r.status("checking what ClickHouse holds of a batch"));
  return out;
}

Status IngestWriter::WriteDictionaries(const std::vector<const BatchRows*>& group) {
  for (size_t t = 0; t < kDictionaryTableCount; ++t) {
    const auto which = static_cast<DictionaryTable>(t);
    const char* table = nullptr;
    const char* columns = nullptr;
    std::string data;
    std::vector<uint64_t> ids;
    std::unordered_set<uint64_t> seen;
    for (const BatchRows* rows : group) {
      for (const DictionaryTableRows& d : rows->dictionaries) {
        if (d.which != which) continue;
        table = d.table;
        columns = d.columns;
        // Another group may have written some since the batch was built.
        for (uint32_t i : written_.Unwritten(which, d.ids)) {
          if (!seen.insert(d.ids[i]).second) continue;
          ids.push_back(d.ids[i]);
          data += d.rows[i];
        }
      }
    }
    if (ids.empty()) continue;
    ++inserts_sent_;
    RETURN_IF_ERROR(client_->Execute(InsertRequest(table, columns, std::move(data), ids.size()), options_.retry)
                        .status()
                        .WithContext(std::string("writing ") + table));
    written_.Add(which, ids);
  }
  return Status::Ok();
}

Status IngestWriter::WriteFacts(const std::vector<const BatchRows*>& group, std::vector<StoredBatchState> stored,
                                std::vector<Status>* batch_status) {
  const RetryPolicy once{.attempts = 1, .first_backoff_ms = 0};
  int backoff_ms = options_.retry.first_backoff_ms;
  for (int attempt = 1;; ++attempt) {
    Status status = [&]() -> Status {
      if (attempt > 1) {
        // The last INSERT may have landed although its answer was lost.
        ASSIGN_OR_RETURN(stored, CheckStored(group, nullptr, once));
        for (size_t b = 0; b < group.size(); ++b) {
          if ((*batch_status)[b].ok()) (*batch_status)[b] = CheckNotPartial(*group[b], stored[b], "this batch");
        }
      }
      for (const char* table : kFactTables) {
        const char* columns = nullptr;
        std::string data;
        uint64_t rows = 0;
        std::vector<std::pair<size_t, size_t>> included;  // (batch, fact index)
        for (size_t b = 0; b < group.size(); ++b) {
          if (!(*batch_status)[b].ok()) continue;
          for (size_t i = 0; i < group[b]->facts.size(); ++i) {
            const FactTableRows& f = group[b]->facts[i];
            if (std::strcmp(f.table, table) != 0 || stored[b].counts[i] != 0) continue;
            columns = f.columns;
            data += f.data;
            rows += f.rows;
            included.emplace_back(b, i);
          }
        }
        if (rows == 0) continue;
        // One attempt: a retry must count again first.
        ++inserts_sent_;
        RETURN_IF_ERROR(client_->Execute(InsertRequest(table, columns, std::move(data), rows), once)
                            .status()
                            .WithContext(std::string("writing ") + table));
        for (const auto& [b, i] : included) stored[b].counts[i] = group[b]->facts[i].stored_count;
      }
      return Status::Ok();
    }();
    if (status.ok() || status.code() != StatusCode::kUnavailable || attempt >= options_.retry.attempts) {
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms *= 4;
  }
}

Status IngestWriter::WriteFacts(const BatchRows& rows, const std::string& what) {
  const std::vector<const BatchRows*> group{&rows};
  ASSIGN_OR_RETURN(std::vector<StoredBatchState> stored, CheckStored(group, nullptr));
  std::vector<Status> batch_status{CheckNotPartial(rows, stored[0], what)};
  RETURN_IF_ERROR(batch_status[0]);
  RETURN_IF_ERROR(WriteFacts(group, std::move(stored), &batch_status).WithContext("storing " + what));
  return batch_status[0];
}

}  // namespace warpscope::clickhouse
