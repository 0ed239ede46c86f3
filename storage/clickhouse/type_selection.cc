#include "storage/clickhouse/type_selection.h"

#include <algorithm>

namespace warpscope::clickhouse {

TypeSelection SelectProfileTypes(const std::vector<TypeRow>& types, const std::string& name) {
  TypeSelection out;
  std::vector<const TypeRow*> chosen;
  for (const TypeRow& t : types) {
    if (t.kind == TypeKind::kProfile && (name.empty() || t.name == name)) chosen.push_back(&t);
  }
  if (chosen.empty()) return out;
  for (const TypeRow* t : chosen) out.ids.push_back(t->id);
  const TypeRow& first = *chosen.front();
  out.info = storage::ProfileTypeInfo{first.name, first.unit, first.period_nanos};
  const bool uniform = std::all_of(chosen.begin(), chosen.end(), [&](const TypeRow* t) {
    return t->unit == first.unit && t->period_nanos == first.period_nanos;
  });
  if (uniform) return out;
  out.info.sample_unit = "nanoseconds";
  out.info.period_nanos = 0;
  std::string cases;
  for (const TypeRow* t : chosen) {
    const bool counts = t->unit == "samples" || t->unit.empty();
    if (!counts || t->period_nanos <= 1) continue;
    cases += "type_id = " + std::to_string(t->id) + ", toInt64(" + std::to_string(t->period_nanos) + "), ";
  }
  if (!cases.empty()) out.value_sql = "value * multiIf(" + cases + "toInt64(1))";
  return out;
}

std::vector<uint64_t> TypeIds(const std::vector<TypeRow>& types, TypeKind kind, const std::string& name) {
  std::vector<uint64_t> out;
  for (const TypeRow& t : types) {
    if (t.kind == kind && (name.empty() || t.name == name)) out.push_back(t.id);
  }
  return out;
}

}  // namespace warpscope::clickhouse
