#include "storage/embedded/resolved_stack_cache.h"

namespace warpscope::embedded {

void ResolvedStackCache::InsertLocked(uint64_t id, std::shared_ptr<const storage::ResolvedStack> stack) {
  young_frames_ += stack->frames.size() + 1;
  young_.emplace(id, std::move(stack));
  if (young_frames_ * 2 >= max_frames_) {
    old_ = std::move(young_);
    young_ = {};
    young_frames_ = 0;
  }
}

StatusOr<std::vector<storage::ResolvedStack>> ResolvedStackCache::Resolve(const std::vector<uint64_t>& stack_ids) {
  std::vector<storage::ResolvedStack> out(stack_ids.size());
  std::vector<uint64_t> missing;
  std::vector<size_t> missing_at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < stack_ids.size(); ++i) {
      const uint64_t id = stack_ids[i];
      if (auto it = young_.find(id); it != young_.end()) {
        out[i] = *it->second;
      } else if (auto old = old_.find(id); old != old_.end()) {
        out[i] = *old->second;
        InsertLocked(id, old->second);
      } else {
        missing.push_back(id);
        missing_at.push_back(i);
      }
    }
  }
  if (missing.empty()) return out;
  ASSIGN_OR_RETURN(std::vector<storage::ResolvedStack> resolved, dictionary_->ResolveStacks(missing));
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t k = 0; k < missing.size(); ++k) {
    out[missing_at[k]] = resolved[k];
    if (max_frames_ > 0) InsertLocked(missing[k], std::make_shared<const storage::ResolvedStack>(std::move(resolved[k])));
  }
  return out;
}

}  // namespace warpscope::embedded
