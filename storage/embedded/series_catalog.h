// The query side's view of series (label sets) and types: answers "which
// series pass this selector" from the dictionary's label index plus an
// in-memory cache of label sets, and keeps the (few) profile and metric types
// in memory.
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
#include "model/selector.h"
#include "storage/embedded/dictionary/dictionary_store.h"
#include "storage/query_context.h"
#include "storage/store_types.h"

namespace warpscope::embedded {

// Profile types and metric types share one id space (dictionary_types.h,
// kMetricTypePeriodNanos); a query asks for the kind it reads.
enum class TypeKind { kProfile, kMetric, kAny };

struct TypeEntry {
  uint32_t id = 0;
  // For a metric: name, sample_unit = the metric's unit, period_nanos = kMetricTypePeriodNanos.
  storage::ProfileTypeInfo info;
  bool is_metric() const { return info.period_nanos == dictionary::kMetricTypePeriodNanos; }
};

class SeriesCatalog {
 public:
  explicit SeriesCatalog(dictionary::DictionaryStore* dictionary) : dictionary_(dictionary) {}

  // Ascending ids of the series whose labels pass `selector`. Equality
  // matchers that cannot match an absent label narrow through the label
  // index; every matcher is then checked on the cached labels, each regex
  // once per distinct value and within SelectorEvaluation's budget of regex
  // work (InvalidArgument past it), the context's deadline every 1024 series
  // (`context` may be null).
  StatusOr<std::vector<uint64_t>> Select(const Selector& selector, const storage::QueryContext* context = nullptr);
  StatusOr<storage::Labels> LabelsOf(uint64_t series_id);
  // The types of `kind`, ascending id; `name` "" for all, else those with that name.
  StatusOr<std::vector<TypeEntry>> Types(const std::string& name, TypeKind kind);

 private:
  dictionary::DictionaryStore* const dictionary_;  // owned by the store, outlives this
  std::mutex mu_;
  std::unordered_map<uint64_t, storage::Labels> labels_;  // guarded by mu_
  std::vector<storage::ProfileTypeInfo> types_;           // guarded by mu_; id i at [i - 1] (ids are dense)
};

}  // namespace warpscope::embedded
