// Values that cross the dictionary's API: interning results and resolved
// (query-side) forms of stacks, label sets and profile types.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/store_types.h"

namespace warpscope::dictionary {

// What InternBatch hands back: the batch's indices turned into global ids, so
// sample i becomes the row (time, type_ids[s.type], label_set_ids[s.label_set]
// (the series id), stack_ids[s.stack], value).
struct InternedBatch {
  std::vector<uint64_t> stack_ids;      // by batch stack index
  std::vector<uint64_t> label_set_ids;  // by batch label-set index
  std::vector<uint64_t> type_ids;       // by batch type index
  std::vector<uint64_t> metric_type_ids;  // by batch metric type index (same id space as type_ids)
  // By batch string index: the ids of the strings GPU activities name (their
  // name and system_name); 0 for every other string. Empty for a batch
  // without GPU activities.
  std::vector<uint64_t> string_ids;
  // Dictionary rows this call inserted (all tables, label index included);
  // 0 when all content was already known.
  uint64_t new_rows = 0;
};

// Metric types (IngestBatch.metric_types) are rows of the profile_types
// table, marked by this period (a profile type's is >= 0: ValidateBatch),
// with the metric's unit as sample_unit. Sharing the table gives them type
// ids in the one id space that WAL records, the head and segments key rows
// by, so metric points are stored as rows beside samples; readers tell the
// two apart by the period. Schema version 2 (dictionary_schema.h).
inline constexpr int64_t kMetricTypePeriodNanos = -1;

// The resolved forms are the storage interface's (storage/store_types.h).
using storage::Labels;
using storage::ProfileTypeInfo;
using storage::ResolvedFrame;

// One stack with its frames copied in (leaf first): what ResolveStacks gives
// tests and tools. Queries go through ResolvedStackCache, which keeps each
// location's frames once and answers with a frame table.
struct ResolvedStack {
  uint64_t id = 0;
  std::vector<ResolvedFrame> frames;
};

// Row counts per table, for tests and metrics.
struct DictionaryRowCounts {
  uint64_t strings = 0, mappings = 0, functions = 0, locations = 0, stacks = 0, label_sets = 0, label_index = 0,
           profile_types = 0, agent_sequences = 0;
  uint64_t total() const {
    return strings + mappings + functions + locations + stacks + label_sets + label_index + profile_types +
           agent_sequences;
  }
};

}  // namespace warpscope::dictionary
