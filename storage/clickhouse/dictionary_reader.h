// DictionaryReader: turns ids in answers back into content - stacks into
// frames, series ids into label sets, string ids into strings - with bounded
// per-replica caches in front of ClickHouse. Dictionary rows are write-once
// per content (content_ids.h), so a cached entry never goes stale; misses are
// fetched in one query per table, ids passed as an external table, and
// `any(...) GROUP BY id` so duplicate rows before merges do not matter.
//
// Threading: any number of threads; caches behind one mutex (held only for
// lookups and inserts, never during a ClickHouse request).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "storage/clickhouse/clickhouse_client.h"
#include "storage/store_types.h"

namespace warpscope::clickhouse {

// Stacks as a frame table (MergedProfile's shape): stacks[i] lists, leaf
// first, indexes into frames for the i-th requested stack id; a location's
// frames appear once, consecutively.
struct ResolvedStackTable {
  std::vector<storage::ResolvedFrame> frames;
  std::vector<std::vector<uint32_t>> stacks;
};

class DictionaryReader {
 public:
  // `max_cached` bounds each cache's entries (a cache past it is cleared).
  DictionaryReader(ClickHouseClient* client, size_t max_cached) : client_(client), max_cached_(max_cached) {}

  StatusOr<ResolvedStackTable> ResolveStacks(const std::vector<uint64_t>& stack_ids);
  StatusOr<std::unordered_map<uint64_t, storage::Labels>> LabelSets(const std::vector<uint64_t>& series_ids);
  StatusOr<std::unordered_map<uint64_t, std::string>> Strings(const std::vector<uint64_t>& string_ids);

 private:
  using Frames = std::shared_ptr<const std::vector<storage::ResolvedFrame>>;
  using Locations = std::shared_ptr<const std::vector<uint64_t>>;
  // Every lookup: `ids`' entries from `cache`, the misses from
  // `fetch(distinct missing ids)` (a map holding each of them, or an error),
  // which then go into `cache`.
  template <typename Value, typename Fetch>
  StatusOr<std::unordered_map<uint64_t, Value>> Lookup(std::unordered_map<uint64_t, Value>& cache,
                                                       const std::vector<uint64_t>& ids, Fetch fetch);
  StatusOr<std::unordered_map<uint64_t, Locations>> FetchStacks(const std::vector<uint64_t>& ids);
  StatusOr<std::unordered_map<uint64_t, Frames>> FetchLocations(const std::vector<uint64_t>& ids);

  ClickHouseClient* const client_;
  const size_t max_cached_;
  std::mutex mu_;
  std::unordered_map<uint64_t, Locations> stacks_;  // stack -> locations
  std::unordered_map<uint64_t, Frames> locations_;   // location -> frames
  std::unordered_map<uint64_t, storage::Labels> labels_;
  std::unordered_map<uint64_t, std::string> strings_;
};

}  // namespace warpscope::clickhouse
