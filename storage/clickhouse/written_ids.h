// WrittenDictionaryIds: the ids of dictionary rows (design §6 step 4) that
// this replica has stored, so a batch serializes and sends only the rows of
// ids it has not: an agent's batch repeats the functions, locations and
// stacks of every earlier one, and building those rows again was most of the
// server's ingest CPU. An id goes in only after the INSERT holding its row
// succeeded; each table's set is bounded (dropped whole when it would grow
// past the limit) and a miss merely re-inserts a row that ReplacingMergeTree
// absorbs, so the cache can never make a fact reference a missing id.
//
// Threading: any thread; one lock per table. Written by the group committer
// (ingest_group_committer.h), read by every ingesting thread.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

namespace warpscope::clickhouse {

// The dictionary tables, in the order a batch's rows are written.
enum class DictionaryTable : uint8_t { kStrings, kFunctions, kLocations, kStacks, kLabelSets, kTypes };
inline constexpr size_t kDictionaryTableCount = 6;

class WrittenDictionaryIds {
 public:
  explicit WrittenDictionaryIds(size_t max_ids_per_table) : max_ids_per_table_(max_ids_per_table) {}

  // The positions i of `ids` whose ids[i] is not known to be stored.
  std::vector<uint32_t> Unwritten(DictionaryTable table, const std::vector<uint64_t>& ids) const;
  // Whether `id` is known to be stored.
  bool Contains(DictionaryTable table, uint64_t id) const;
  // Records ids whose rows were just stored.
  void Add(DictionaryTable table, const std::vector<uint64_t>& ids);
  void Clear();

 private:
  // Open addressing over the ids' own low bits (they are XXH3 values, so
  // already uniform; 0 is never an id and marks a free slot): a batch looks
  // up thousands of ids, and std::unordered_set's lookups were ~10 % of the
  // server's ingest CPU.
  class IdSet {
   public:
    bool contains(uint64_t id) const;
    void prefetch(uint64_t id) const;  // the slot `id` would be looked up in
    void insert(uint64_t id);
    size_t size() const { return size_; }
    void clear();

   private:
    std::vector<uint64_t> slots_;  // size a power of two, at most half full
    size_t size_ = 0;
  };
  struct Table {
    mutable std::mutex mu;
    IdSet ids;
  };
  const size_t max_ids_per_table_;
  std::array<Table, kDictionaryTableCount> tables_;
};

}  // namespace warpscope::clickhouse
