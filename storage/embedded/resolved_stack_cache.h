// Resolved stacks kept in memory across queries. Resolving a stack costs ~20
// SQLite lookups (one per frame, shared within a call); the same few thousand
// stacks come back in every query of a fleet, and stacks never change once
// interned, so a cache needs no invalidation, only a bound.
//
// Eviction is two generations: hits in the old generation move to the new
// one; when the new one holds max_frames / 2 frames it becomes the old one and
// the previous old one is dropped. A cheap approximation of LRU with at most
// max_frames frames held.
//
// Threading: any thread; one mutex, never held across the dictionary call.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/store_types.h"

namespace warpscope::embedded {

class ResolvedStackCache {
 public:
  ResolvedStackCache(dictionary::DictionaryStore* dictionary, size_t max_frames)
      : dictionary_(dictionary), max_frames_(max_frames) {}

  // Same order as `stack_ids`.
  StatusOr<std::vector<storage::ResolvedStack>> Resolve(const std::vector<uint64_t>& stack_ids);

 private:
  using Map = std::unordered_map<uint64_t, std::shared_ptr<const storage::ResolvedStack>>;
  void InsertLocked(uint64_t id, std::shared_ptr<const storage::ResolvedStack> stack);

  dictionary::DictionaryStore* const dictionary_;  // owned by the store, outlives this
  const size_t max_frames_;
  std::mutex mu_;
  Map young_, old_;          // guarded by mu_
  size_t young_frames_ = 0;  // guarded by mu_
};

}  // namespace warpscope::embedded
