// The query side of the dictionaries: its own SQLite connection, so reads run
// beside the writer's transactions (WAL mode) and see committed data only.
// Belongs to one thread at a time (DictionaryStore holds its read mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "storage/embedded/dictionary/dictionary_types.h"
#include "storage/embedded/dictionary/sqlite_handle.h"

namespace warpscope::dictionary {

class DictionaryReader {
 public:
  // The schema must exist: open the DictionaryWriter first.
  static StatusOr<std::unique_ptr<DictionaryReader>> Open(const std::string& path);

  StatusOr<std::vector<ResolvedStack>> ResolveStacks(const std::vector<uint64_t>& stack_ids);
  StatusOr<std::vector<std::vector<uint64_t>>> StackLocations(const std::vector<uint64_t>& stack_ids);
  StatusOr<std::vector<std::vector<ResolvedFrame>>> ResolveLocations(const std::vector<uint64_t>& location_ids);
  StatusOr<Labels> LabelSet(uint64_t label_set_id);
  // Same order as `ids`; DataLoss for an id never stored.
  StatusOr<std::vector<std::string>> Strings(const std::vector<uint64_t>& ids);
  StatusOr<ProfileTypeInfo> ProfileType(uint64_t type_id);
  StatusOr<std::vector<uint64_t>> SeriesMatching(const Labels& equal_matchers);
  StatusOr<std::vector<std::string>> LabelNames();
  StatusOr<std::vector<std::string>> LabelValues(const std::string& name);
  StatusOr<DictionaryRowCounts> RowCounts();

 private:
  explicit DictionaryReader(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
  Status PrepareStatements();
  StatusOr<std::string> String(uint64_t id);
  // The bodies of StackLocations and ResolveLocations, without the reset.
  StatusOr<std::vector<std::vector<uint64_t>>> StackLocationsNoReset(const std::vector<uint64_t>& stack_ids);
  StatusOr<std::vector<std::vector<ResolvedFrame>>> ResolveLocationsNoReset(const std::vector<uint64_t>& location_ids);
  // 0 when the string was never stored.
  StatusOr<uint64_t> StringId(const std::string& value);
  // Runs `stmt` (bound by the caller) and collects column 0 of every row.
  StatusOr<std::vector<uint64_t>> Ids(SqliteStatement& stmt);

  // Resets every statement when a public call ends. A statement left on a row
  // keeps its read transaction open: the reader would go on seeing an old
  // snapshot and would hold back WAL checkpoints.
  class ResetOnExit {
   public:
    explicit ResetOnExit(DictionaryReader* reader) : reader_(reader) {}
    ~ResetOnExit();

   private:
    DictionaryReader* reader_;
  };

  std::unique_ptr<SqliteDb> db_;
  SqliteStatement string_, string_id_, mapping_, function_, location_, stack_, label_set_, type_, series_, all_series_,
      label_names_, label_values_;
};

}  // namespace warpscope::dictionary
