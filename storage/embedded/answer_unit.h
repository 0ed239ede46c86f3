// AnswerUnit: the unit a profile answer (flame graph, series, timeline) is
// summed in, decided by the profile types whose rows the answer actually sums.
//
// The rule every store follows is storage/type_scaling.h's: an answer over
// rows of one type keeps that type's unit and period; one over rows of two or
// more is in nanoseconds. Types are unique per (name, unit, period), so "one
// type" is the same as "one (unit, period)".
//
// Rows are summed as they come: while they are all of one type, raw; when a
// row of a second type arrives, the caller's sums so far (all of the first
// type) are multiplied by the first type's period once, and every later row
// is scaled. So a scan reads each row once and needs no second pass, and the
// usual single-type answer costs one compare per row. Products and sums
// saturate (base/saturating.h).
//
// Belongs to one query on one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/saturating.h"
#include "storage/embedded/segment_file.h"
#include "storage/type_scaling.h"
#include "storage/embedded/series_catalog.h"

namespace warpscope::embedded {

class AnswerUnit {
 public:
  // `types`: the profile types the query reads (non-empty).
  explicit AnswerUnit(const std::vector<TypeEntry>& types) : types_(types) {
    uint32_t max_id = 0;
    for (const TypeEntry& t : types) max_id = std::max(max_id, t.id);
    multiplier_.assign(max_id + 1, 1);
    for (const TypeEntry& t : types) multiplier_[t.id] = storage::MixedAnswerFactor(t.info);
  }

  // The row's value in the answer's unit. `rescale_sums(m)` must multiply
  // every value the caller has summed so far by m (saturating); it is called
  // at most once, when the answer turns to nanoseconds.
  template <typename RescaleSums>
  int64_t Value(const SampleRow& row, RescaleSums&& rescale_sums) {
    if (row.type_id == first_type_ && !mixed_) [[likely]] return row.value;
    if (first_type_ == kNoType) {
      first_type_ = row.type_id;
      return row.value;
    }
    if (!mixed_) {
      mixed_ = true;
      if (multiplier_[first_type_] != 1) rescale_sums(multiplier_[first_type_]);
    }
    return SaturatingMul(row.value, multiplier_[row.type_id]);
  }

  // The answer's type: the one type that contributed rows; nanoseconds when
  // several did. With no rows at all, the query's only type, or nanoseconds
  // when the name has several.
  storage::ProfileTypeInfo info() const {
    if (!mixed_) {
      for (const TypeEntry& t : types_) {
        if (t.id == first_type_) return t.info;
      }
      if (types_.size() == 1) return types_.front().info;
    }
    return storage::MixedAnswerType(types_.front().info);
  }

 private:
  static constexpr uint32_t kNoType = UINT32_MAX;

  const std::vector<TypeEntry>& types_;  // the query's, outlives this
  std::vector<int64_t> multiplier_;       // by type id: the period of count types, else 1
  uint32_t first_type_ = kNoType;
  bool mixed_ = false;
};

// Multiplies every value in [begin, end) by m, saturating: the usual
// rescale_sums of a caller summing into an array.
template <typename It>
void SaturatingScale(It begin, It end, int64_t m) {
  for (It it = begin; it != end; ++it) *it = SaturatingMul(*it, m);
}

}  // namespace warpscope::embedded
