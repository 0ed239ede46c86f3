// The write side of the dictionaries: the writer connection plus the complete
// in-memory content -> id cache. Belongs to one thread at a time (the
// DictionaryStore serializes callers with its write mutex); opening it creates
// or checks the schema, so it is opened before any reader.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/embedded/dictionary/batch_validator.h"
#include "storage/embedded/dictionary/dictionary_types.h"
#include "storage/embedded/dictionary/sqlite_handle.h"

namespace warpscope::dictionary {

// Content (content_key.h encoding) -> id for one table. Ids handed out inside
// a transaction are staged so that a rollback can take them back.
class ContentIds {
 public:
  // 0 when absent.
  uint64_t Find(const std::string& key) const {
    auto it = ids_.find(key);
    return it == ids_.end() ? 0 : it->second;
  }
  // Gives `key` the next id; the caller has checked it is absent.
  uint64_t Add(const std::string& key);
  // Used while loading from the database at open.
  void Load(std::string key, uint64_t id);
  void Commit() { staged_.clear(); }
  void Rollback();
  size_t size() const { return ids_.size(); }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<std::string> staged_;
  uint64_t next_id_ = 1;
};

class DictionaryWriter {
 public:
  static StatusOr<std::unique_ptr<DictionaryWriter>> Open(const std::string& path, const BatchLimits& limits);

  StatusOr<InternedBatch> InternBatch(const warpscope::v1::IngestBatch& batch, bool record_sequence);
  bool SeenBefore(const std::string& agent_id, uint64_t sequence) const;
  // Raises each agent's stored sequence to at least the given one, in one transaction.
  Status RecordAgentSequences(const std::vector<std::pair<std::string, uint64_t>>& sequences);
  std::vector<std::pair<std::string, uint64_t>> AgentSequences() const;

 private:
  DictionaryWriter(std::unique_ptr<SqliteDb> db, const BatchLimits& limits) : db_(std::move(db)), limits_(limits) {}
  Status PrepareStatements();
  Status LoadCache();
  // The body of InternBatch's transaction; on error the caller rolls back.
  Status InternAll(const warpscope::v1::IngestBatch& batch, bool record_sequence, InternedBatch* out);
  Status UpsertSequence(const std::string& agent_id, uint64_t sequence);
  // Interns `key` in `ids`; on a miss runs `insert` with parameter 1 bound to
  // the new id and `bind` binding the rest.
  template <typename BindFn>
  StatusOr<uint64_t> Intern(ContentIds& ids, SqliteStatement& insert, BindFn bind, uint64_t* new_rows);
  void CommitCache();
  void RollbackCache();

  std::unique_ptr<SqliteDb> db_;
  BatchLimits limits_;
  ContentIds strings_, mappings_, functions_, locations_, stacks_, label_sets_, types_;
  std::unordered_map<std::string, uint64_t> last_sequence_;  // agent_id -> committed sequence
  SqliteStatement begin_, commit_, rollback_;
  SqliteStatement insert_string_, insert_mapping_, insert_function_, insert_location_, insert_stack_, insert_label_set_,
      insert_label_index_, insert_type_, upsert_sequence_;
  std::string key_;  // scratch for cache keys, reused to avoid allocations
};

}  // namespace warpscope::dictionary
