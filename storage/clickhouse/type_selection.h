// Which type ids a query reads. How their values add up is decided by the
// types that contribute rows to the answer (storage/type_scaling.h): queries
// group their sums by type id and scale them here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/clickhouse/content_ids.h"
#include "storage/store_types.h"
#include "storage/type_scaling.h"

namespace warpscope::clickhouse {

// One row of the `types` table.
struct TypeRow {
  uint64_t id = 0;
  TypeKind kind = TypeKind::kProfile;
  std::string name;
  std::string unit;
  int64_t period_nanos = 0;
};

struct TypeSelection {
  storage::ProfileTypeInfo info;  // the first type's; name "" when no type matched
  std::vector<uint64_t> ids;      // empty when no type matched
  std::vector<std::pair<uint64_t, storage::ProfileTypeInfo>> types;  // (id, info) of each, as ids

  // The scaling of an answer whose rows came from `contributing` type ids.
  storage::TypeScaling ScalingOf(const std::vector<uint64_t>& contributing) const;
};

// Profile types named `name` ("": every profile type). `types` sorted as
// ClickHouseProfileStore::LoadTypes returns them.
TypeSelection SelectProfileTypes(const std::vector<TypeRow>& types, const std::string& name);

// Ids of the types of `kind` named `name` ("": every one of that kind).
std::vector<uint64_t> TypeIds(const std::vector<TypeRow>& types, TypeKind kind, const std::string& name);

}  // namespace warpscope::clickhouse
