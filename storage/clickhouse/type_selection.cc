#include "storage/clickhouse/type_selection.h"

#include <algorithm>

namespace warpscope::clickhouse {

TypeSelection SelectProfileTypes(const std::vector<TypeRow>& types, const std::string& name) {
  TypeSelection out;
  for (const TypeRow& t : types) {
    if (t.kind != TypeKind::kProfile || (!name.empty() && t.name != name)) continue;
    out.ids.push_back(t.id);
    out.types.emplace_back(t.id, storage::ProfileTypeInfo{t.name, t.unit, t.period_nanos});
  }
  if (!out.types.empty()) out.info = out.types.front().second;
  return out;
}

storage::TypeScaling TypeSelection::ScalingOf(const std::vector<uint64_t>& contributing) const {
  std::vector<std::pair<uint64_t, storage::ProfileTypeInfo>> present;
  for (const auto& t : types) {
    if (std::find(contributing.begin(), contributing.end(), t.first) != contributing.end()) present.push_back(t);
  }
  return storage::ScalingFor(present, info);
}

std::vector<uint64_t> TypeIds(const std::vector<TypeRow>& types, TypeKind kind, const std::string& name) {
  std::vector<uint64_t> out;
  for (const TypeRow& t : types) {
    if (t.kind == kind && (name.empty() || t.name == name)) out.push_back(t.id);
  }
  return out;
}

}  // namespace warpscope::clickhouse
