// The write side of the dictionaries: the writer connection plus the complete
// in-memory content -> id cache. Belongs to one thread at a time (the
// DictionaryStore serializes callers with its write mutex); opening it creates
// or checks the schema, so it is opened before any reader.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "proto/warpscope/v1/ingest.pb.h"
#include "storage/embedded/dictionary/batch_validator.h"
#include "storage/embedded/dictionary/content_fingerprint.h"
#include "storage/embedded/dictionary/content_ids.h"
#include "storage/embedded/dictionary/dictionary_types.h"
#include "storage/embedded/dictionary/sqlite_handle.h"
#include "storage/embedded/dictionary_marks.h"

namespace warpscope::dictionary {

class DictionaryWriter {
 public:
  // `create`: make the schema in an empty database (else FailedPrecondition).
  static StatusOr<std::unique_ptr<DictionaryWriter>> Open(const std::string& path, const BatchLimits& limits,
                                                          bool create = true);

  StatusOr<InternedBatch> InternBatch(const warpscope::v1::IngestBatch& batch, bool record_sequence);
  bool SeenBefore(const std::string& agent_id, uint64_t sequence) const;
  // Raises each agent's stored sequence to at least the given one, in one transaction.
  Status RecordAgentSequences(const std::vector<std::pair<std::string, uint64_t>>& sequences);
  std::vector<std::pair<std::string, uint64_t>> AgentSequences() const;
  // The dictionary's identity and highest committed ids (dictionary_marks.h).
  DictionaryMarks Marks() const;
  // The writer's connection, for the segment manifest's statements (same thread rules).
  SqliteDb* db() { return db_.get(); }

 private:
  DictionaryWriter(std::unique_ptr<SqliteDb> db, const BatchLimits& limits) : db_(std::move(db)), limits_(limits) {}
  Status PrepareStatements();
  Status LoadCache();
  // The body of InternBatch's transaction; on error the caller rolls back.
  Status InternAll(const warpscope::v1::IngestBatch& batch, bool record_sequence, InternedBatch* out);
  Status UpsertSequence(const std::string& agent_id, uint64_t sequence);
  // Interns `key` (content_key.h encoding) in `ids`; on a miss runs `insert` with parameter 1 bound to
  // the new id and `bind` binding the rest.
  template <typename BindFn>
  StatusOr<uint64_t> Intern(ContentIds& ids, std::string_view key, SqliteStatement& insert, BindFn bind,
                            uint64_t* new_rows);
  void CommitCache();
  void RollbackCache();
  // InternAll's helpers: the batch's strings, mappings, functions and
  // locations resolved to ids only when a stack that uses them is not
  // recognized by its fingerprint (content_fingerprint.h).
  struct BatchResolution;
  static void FingerprintLocations(BatchResolution* r);
  StatusOr<uint64_t> StringId(BatchResolution* r, uint32_t index, uint64_t* new_rows);
  StatusOr<uint64_t> MappingId(BatchResolution* r, uint32_t index, uint64_t* new_rows);
  StatusOr<uint64_t> FunctionId(BatchResolution* r, uint32_t index, uint64_t* new_rows);
  StatusOr<uint64_t> LocationId(BatchResolution* r, uint32_t index, uint64_t* new_rows);

  std::unique_ptr<SqliteDb> db_;
  BatchLimits limits_;
  uint64_t store_id_ = 0;
  ContentIds strings_, mappings_, functions_, locations_, stacks_, label_sets_, types_;
  // Stack fingerprint -> stack id, for stacks interned by this process; a
  // bounded cache (at most 48 bytes per entry, cleared when full).
  FingerprintIds stack_fingerprints_{kMaxStackFingerprints};
  static constexpr size_t kMaxStackFingerprints = 1 << 20;
  std::unordered_map<std::string, uint64_t> last_sequence_;  // agent_id -> committed sequence
  SqliteStatement begin_, commit_, rollback_;
  SqliteStatement insert_string_, insert_mapping_, insert_function_, insert_location_, insert_stack_, insert_label_set_,
      insert_label_index_, insert_type_, upsert_sequence_;
  std::string key_;  // scratch for cache keys, reused to avoid allocations
};

}  // namespace warpscope::dictionary
