#include "storage/embedded/resolved_stack_cache.h"

#include <string>

namespace warpscope::embedded {

namespace {

// What an unordered_map entry costs besides its value: the node (key, value
// header, next pointer, cached hash), malloc's header and a bucket slot.
constexpr size_t kMapEntryBytes = 64;

size_t HeapBytes(const std::string& s) {
  return s.capacity() > 15 ? s.capacity() + 1 + 16 : 0;  // beyond libstdc++'s inline buffer
}

size_t StackBytes(const std::vector<uint64_t>& locations) {
  return kMapEntryBytes + 16 + locations.capacity() * sizeof(uint64_t);
}

size_t LocationBytes(const std::vector<storage::ResolvedFrame>& frames) {
  size_t bytes = kMapEntryBytes + 64;  // + make_shared's control block and vector
  for (const storage::ResolvedFrame& f : frames) {
    bytes += sizeof(storage::ResolvedFrame) + HeapBytes(f.function_name) + HeapBytes(f.system_name) +
             HeapBytes(f.file) + HeapBytes(f.mapping_file) + HeapBytes(f.build_id);
  }
  return bytes;
}

}  // namespace

size_t ResolvedStackCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return young_.bytes + old_.bytes;
}

void ResolvedStackCache::RotateIfFullLocked() {
  if (young_.bytes * 2 < max_bytes_) return;
  old_ = std::move(young_);
  young_ = Generation{};
}

void ResolvedStackCache::AddStackLocked(uint64_t id, std::vector<uint64_t> locations) {
  const size_t bytes = StackBytes(locations);
  if (young_.stacks.try_emplace(id, std::move(locations)).second) young_.bytes += bytes;
  RotateIfFullLocked();
}

void ResolvedStackCache::AddLocationLocked(uint64_t id, std::shared_ptr<const Frames> frames) {
  const size_t bytes = LocationBytes(*frames);
  if (young_.locations.try_emplace(id, std::move(frames)).second) young_.bytes += bytes;
  RotateIfFullLocked();
}

void ResolvedStackCache::FindStacksLocked(const std::vector<uint64_t>& ids,
                                          std::vector<std::vector<uint64_t>>* found, std::vector<size_t>* missing) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (auto it = young_.stacks.find(ids[i]); it != young_.stacks.end()) {
      (*found)[i] = it->second;
    } else if (auto old = old_.stacks.find(ids[i]); old != old_.stacks.end()) {
      (*found)[i] = old->second;
      std::vector<uint64_t> promoted = std::move(old->second);
      old_.bytes -= StackBytes(promoted);
      old_.stacks.erase(old);
      AddStackLocked(ids[i], std::move(promoted));
    } else {
      missing->push_back(i);
    }
  }
}

void ResolvedStackCache::FindLocationsLocked(const std::vector<uint64_t>& ids,
                                             std::vector<std::shared_ptr<const Frames>>* found,
                                             std::vector<size_t>* missing) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (auto it = young_.locations.find(ids[i]); it != young_.locations.end()) {
      (*found)[i] = it->second;
    } else if (auto old = old_.locations.find(ids[i]); old != old_.locations.end()) {
      (*found)[i] = old->second;
      old_.bytes -= LocationBytes(*old->second);
      old_.locations.erase(old);
      AddLocationLocked(ids[i], (*found)[i]);
    } else {
      missing->push_back(i);
    }
  }
}

StatusOr<ResolvedStackTable> ResolvedStackCache::Resolve(const std::vector<uint64_t>& stack_ids) {
  // 1. Each stack's location ids.
  std::vector<std::vector<uint64_t>> stack_locations(stack_ids.size());
  std::vector<size_t> missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    FindStacksLocked(stack_ids, &stack_locations, &missing);
  }
  if (!missing.empty()) {
    std::vector<uint64_t> ids;
    ids.reserve(missing.size());
    for (size_t i : missing) ids.push_back(stack_ids[i]);
    ASSIGN_OR_RETURN(std::vector<std::vector<uint64_t>> resolved, dictionary_->StackLocations(ids));
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t k = 0; k < missing.size(); ++k) {
      stack_locations[missing[k]] = resolved[k];
      if (max_bytes_ > 0) AddStackLocked(ids[k], std::move(resolved[k]));
    }
  }

  // 2. The distinct locations, in order of first use; each stack's entries
  // become slots into that list.
  std::vector<uint64_t> locations;
  {
    std::unordered_map<uint64_t, uint64_t> slot_of;
    for (std::vector<uint64_t>& stack : stack_locations) {
      for (uint64_t& id : stack) {
        const auto [it, inserted] = slot_of.try_emplace(id, locations.size());
        if (inserted) locations.push_back(id);
        id = it->second;
      }
    }
  }
  std::vector<std::shared_ptr<const Frames>> frames(locations.size());
  missing.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    FindLocationsLocked(locations, &frames, &missing);
  }
  if (!missing.empty()) {
    std::vector<uint64_t> ids;
    ids.reserve(missing.size());
    for (size_t i : missing) ids.push_back(locations[i]);
    ASSIGN_OR_RETURN(std::vector<Frames> resolved, dictionary_->ResolveLocations(ids));
    for (size_t k = 0; k < missing.size(); ++k) frames[missing[k]] = std::make_shared<const Frames>(std::move(resolved[k]));
    if (max_bytes_ > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t k = 0; k < missing.size(); ++k) AddLocationLocked(ids[k], frames[missing[k]]);
    }
  }

  // 3. The table: each location's frames copied once (the shared_ptrs keep
  // them alive without the lock, whatever the cache evicts meanwhile).
  ResolvedStackTable out;
  std::vector<uint32_t> first(locations.size());
  size_t frame_count = 0;
  for (const auto& f : frames) frame_count += f->size();
  out.frames.reserve(frame_count);
  for (size_t i = 0; i < frames.size(); ++i) {
    first[i] = static_cast<uint32_t>(out.frames.size());
    out.frames.insert(out.frames.end(), frames[i]->begin(), frames[i]->end());
  }
  out.stacks.resize(stack_locations.size());
  for (size_t i = 0; i < stack_locations.size(); ++i) {
    std::vector<uint32_t>& stack = out.stacks[i];
    stack.reserve(stack_locations[i].size());
    for (uint64_t slot : stack_locations[i]) {
      for (uint32_t line = 0; line < frames[slot]->size(); ++line) stack.push_back(first[slot] + line);
    }
  }
  return out;
}

}  // namespace warpscope::embedded
