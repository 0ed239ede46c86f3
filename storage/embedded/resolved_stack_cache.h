// Resolved stacks kept in memory across queries. Resolving costs SQLite
// lookups (one per stack, one per new location and its strings); the same few
// thousand stacks come back in every query of a fleet, and stacks and
// locations never change once interned, so a cache needs no invalidation,
// only a bound.
//
// Stacks and frames are kept apart, as the dictionary keeps them: a stack is
// its list of location ids, and each location's frames (names, files,
// mapping) are held once however many stacks contain it. The server_load
// fleet's hour (13k stacks of depth 20-40) has ~400k frame references but
// only 9.5k distinct frames, so this holds a small fraction of what whole
// resolved stacks would, and an answer copies each distinct location's
// frames once into its frame table (storage::MergedProfile).
//
// The bound is in bytes (an estimate of the heap each entry holds). Eviction
// is two generations: hits in the old generation move to the new one; when
// the new one reaches max_bytes / 2 it becomes the old one and the previous
// old one is dropped. A cheap approximation of LRU holding at most ~max_bytes.
//
// Threading: any thread; one mutex, never held across a dictionary call or
// while frames are copied into an answer.
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

// Stacks as a frame table plus index lists: the shape of storage::MergedProfile.
struct ResolvedStackTable {
  std::vector<storage::ResolvedFrame> frames;  // each location's frames once, its lines consecutive
  std::vector<std::vector<uint32_t>> stacks;   // per requested stack: indexes into frames, leaf first
};

class ResolvedStackCache {
 public:
  // max_bytes 0 caches nothing (every call reads the dictionary).
  ResolvedStackCache(dictionary::DictionaryStore* dictionary, size_t max_bytes)
      : dictionary_(dictionary), max_bytes_(max_bytes) {}

  // stacks[i] is stack_ids[i].
  StatusOr<ResolvedStackTable> Resolve(const std::vector<uint64_t>& stack_ids);

  // Bytes held (estimated), for tests.
  size_t bytes() const;

 private:
  using Frames = std::vector<storage::ResolvedFrame>;
  struct Generation {
    std::unordered_map<uint64_t, std::vector<uint64_t>> stacks;  // stack id -> location ids, leaf first
    std::unordered_map<uint64_t, std::shared_ptr<const Frames>> locations;
    size_t bytes = 0;
  };

  // Each fills found[i] for the ids it has and lists the rest in `missing`
  // (indexes into ids). mu_ held.
  void FindStacksLocked(const std::vector<uint64_t>& ids, std::vector<std::vector<uint64_t>>* found,
                        std::vector<size_t>* missing);
  void FindLocationsLocked(const std::vector<uint64_t>& ids, std::vector<std::shared_ptr<const Frames>>* found,
                           std::vector<size_t>* missing);
  void AddStackLocked(uint64_t id, std::vector<uint64_t> locations);
  void AddLocationLocked(uint64_t id, std::shared_ptr<const Frames> frames);
  void RotateIfFullLocked();

  dictionary::DictionaryStore* const dictionary_;  // owned by the store, outlives this
  const size_t max_bytes_;
  mutable std::mutex mu_;
  Generation young_, old_;  // guarded by mu_
};

}  // namespace warpscope::embedded
