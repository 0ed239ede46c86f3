#include "storage/embedded/series_catalog.h"

namespace warpscope::embedded {

StatusOr<std::vector<uint64_t>> SeriesCatalog::Select(const Selector& selector, const storage::QueryContext* context) {
  RETURN_IF_ERROR(storage::CheckQuery(context));
  storage::Labels equal;
  for (const LabelMatcher& m : selector.matchers()) {
    if (m.op() == MatchOp::kEqual && !m.matches_empty()) equal.emplace_back(m.name(), m.value());
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> candidates, dictionary_->SeriesMatching(equal));
  if (selector.selects_everything()) return candidates;
  std::vector<uint64_t> out;
  out.reserve(candidates.size());
  // Each regex runs once per distinct label value, within a budget of regex
  // work (InvalidArgument past it: model/selector.h).
  SelectorEvaluation evaluation(selector);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i % 1024 == 1023) RETURN_IF_ERROR(storage::CheckQuery(context));
    const uint64_t id = candidates[i];
    ASSIGN_OR_RETURN(storage::Labels labels, LabelsOf(id));
    ASSIGN_OR_RETURN(const bool matches, evaluation.Matches(labels));
    if (matches) out.push_back(id);
  }
  return out;
}

StatusOr<storage::Labels> SeriesCatalog::LabelsOf(uint64_t series_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = labels_.find(series_id);
    if (it != labels_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(storage::Labels labels, dictionary_->LabelSet(series_id));
  std::lock_guard<std::mutex> lock(mu_);
  labels_.emplace(series_id, labels);
  return labels;
}

StatusOr<std::vector<TypeEntry>> SeriesCatalog::Types(const std::string& name, TypeKind kind) {
  size_t known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    known = types_.size();
  }
  // Types are few and only ever added with the next id: probe for new ones.
  std::vector<storage::ProfileTypeInfo> added;
  while (true) {
    StatusOr<storage::ProfileTypeInfo> info = dictionary_->ProfileType(known + added.size() + 1);
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) break;
      return info.status();
    }
    added.push_back(std::move(info).value());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (types_.size() == known) types_.insert(types_.end(), added.begin(), added.end());
  std::vector<TypeEntry> out;
  for (size_t i = 0; i < types_.size(); ++i) {
    if (!name.empty() && types_[i].name != name) continue;
    TypeEntry entry{static_cast<uint32_t>(i + 1), types_[i]};
    if (kind == TypeKind::kAny || entry.is_metric() == (kind == TypeKind::kMetric)) out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace warpscope::embedded
