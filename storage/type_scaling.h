// How the values of one answer add up across profile types. Types of one
// name can differ in period: agents sampling at 19 Hz and at 99 Hz both send
// "cpu" in "samples", but a sample stands for 52.6 ms of CPU in one and
// 10.1 ms in the other, so their counts cannot be added. An answer whose rows
// come from types of one (unit, period) keeps that unit; one mixing several
// is in nanoseconds, each count times its type's period. Only the types that
// contribute rows to the answer decide, so one agent's period never changes
// the unit of a query that does not select it. Products and sums saturate
// (base/saturating.h). Every store follows this rule.
//
// Stateless; any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/saturating.h"
#include "storage/store_types.h"

namespace warpscope::storage {

// What one row of type `t` is multiplied by in an answer that mixes types:
// its period for counts of samples, 1 for values already in nanoseconds.
inline int64_t MixedAnswerFactor(const ProfileTypeInfo& t) {
  const bool counts = t.sample_unit == "samples" || t.sample_unit.empty();
  return counts && t.period_nanos > 1 ? t.period_nanos : 1;
}

// The type of an answer that mixes types, named after `first`.
inline ProfileTypeInfo MixedAnswerType(const ProfileTypeInfo& first) {
  ProfileTypeInfo out = first;
  out.sample_unit = "nanoseconds";
  out.period_nanos = 0;
  return out;
}

// The scaling of an answer decided after its rows are summed per type (a
// store that sums as it scans applies MixedAnswerFactor itself).
struct TypeScaling {
  ProfileTypeInfo info;  // the answer's unit and period
  // (type id, factor) of the contributing types whose rows are scaled; empty
  // when the answer keeps its types' own unit.
  std::vector<std::pair<uint64_t, int64_t>> factors;

  int64_t Scale(uint64_t type_id, int64_t value) const {
    for (const auto& [id, factor] : factors) {
      if (id == type_id) return SaturatingMul(value, factor);
    }
    return value;
  }
};

// `contributing`: (id, info) of the types with rows in the answer; the first
// one's name names the answer. Empty: an answer with no rows, `fallback`'s
// unit.
inline TypeScaling ScalingFor(const std::vector<std::pair<uint64_t, ProfileTypeInfo>>& contributing,
                              const ProfileTypeInfo& fallback = {}) {
  TypeScaling out;
  if (contributing.empty()) {
    out.info = fallback;
    return out;
  }
  out.info = contributing.front().second;
  const bool uniform = std::all_of(contributing.begin(), contributing.end(), [&](const auto& t) {
    return t.second.sample_unit == out.info.sample_unit && t.second.period_nanos == out.info.period_nanos;
  });
  if (uniform) return out;
  out.info = MixedAnswerType(out.info);
  for (const auto& [id, info] : contributing) {
    if (const int64_t factor = MixedAnswerFactor(info); factor != 1) out.factors.emplace_back(id, factor);
  }
  return out;
}

}  // namespace warpscope::storage
