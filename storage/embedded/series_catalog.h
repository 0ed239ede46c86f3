// The query side's view of series (label sets) and profile types: answers
// "which series pass this selector" from the dictionary's label index plus an
// in-memory cache of label sets, and keeps the (few) profile types in memory.
//
// Series are few (thousands) and immutable once interned, so every label set
// a query touched stays cached for the store's life.
//
// Threading: any thread; one internal mutex guards the caches (held only for
// map operations, never across SQLite calls).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "query/selector.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/store_types.h"

namespace warpscope::embedded {

struct TypeEntry {
  uint32_t id = 0;
  storage::ProfileTypeInfo info;
};

class SeriesCatalog {
 public:
  explicit SeriesCatalog(dictionary::DictionaryStore* dictionary) : dictionary_(dictionary) {}

  // Ascending ids of the series whose labels pass `selector`. Equality
  // matchers that cannot match an absent label narrow through the label
  // index; every matcher is then checked on the cached labels.
  StatusOr<std::vector<uint64_t>> Select(const Selector& selector);
  StatusOr<storage::Labels> LabelsOf(uint64_t series_id);
  // Every profile type, ascending id; `name` "" for all, else those with that name.
  StatusOr<std::vector<TypeEntry>> Types(const std::string& name = "");

 private:
  dictionary::DictionaryStore* const dictionary_;  // owned by the store, outlives this
  std::mutex mu_;
  std::unordered_map<uint64_t, storage::Labels> labels_;  // guarded by mu_
  std::vector<storage::ProfileTypeInfo> types_;           // guarded by mu_; id i at [i - 1] (ids are dense)
};

}  // namespace warpscope::embedded
