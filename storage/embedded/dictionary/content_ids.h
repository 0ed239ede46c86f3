// ContentIds: the writer's in-memory content -> id table for one dictionary
// table (strings, frames, stacks, ...). Every ingested batch looks up each of
// its strings, functions, locations and stacks here, so this lookup is the
// ingest path's hottest loop (docs/benchmarks.md, "Server ingest").
//
// Open addressing with linear probing over a power-of-two slot array; each
// slot holds a 32-bit hash tag and the entry's index, so a probe touches one
// cache line of slots and, on a tag match, the key bytes. Keys live back to
// back in one byte buffer (no allocation per key). std::unordered_map<string>
// spent ~30% of the server's ingest CPU in its node chains.
//
// Ids handed out since the last Commit() are staged: Rollback() takes them
// back (a failed SQLite transaction). Belongs to the DictionaryWriter's thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace warpscope::dictionary {

class ContentIds {
 public:
  ContentIds();

  // 0 when absent.
  uint64_t Find(std::string_view key) const;
  // Gives `key` the next id; the caller has checked it is absent.
  uint64_t Add(std::string_view key);
  // Used while loading from the database at open (ids in any order).
  void Load(std::string_view key, uint64_t id);
  void Commit() { committed_entries_ = entries_.size(); }
  void Rollback();
  size_t size() const { return entries_.size(); }
  // The highest id handed out (0 for none); after Commit or Rollback, the
  // highest in the database.
  uint64_t max_id() const { return next_id_ - 1; }

 private:
  struct Entry {
    uint64_t id;
    uint64_t offset;  // into bytes_
    uint64_t hash;
    uint32_t size;
  };
  struct Slot {
    uint32_t entry_plus_one;  // 0: empty
    uint32_t hash_tag;        // the hash's high half
  };

  static uint64_t Hash(std::string_view key);
  void Insert(std::string_view key, uint64_t id);
  void Place(uint32_t entry_index, uint64_t hash);
  void Rehash(size_t slot_count);

  std::vector<Slot> slots_;  // power-of-two size, at most half full
  std::vector<Entry> entries_;
  std::string bytes_;
  size_t committed_entries_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace warpscope::dictionary
