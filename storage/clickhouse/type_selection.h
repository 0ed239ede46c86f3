// Which type ids a query reads, and how their values add up. Types of one
// name can differ in period (agents sampling at 19 Hz and at 99 Hz both send
// "cpu" in "samples"): their counts cannot be added, so such answers are in
// nanoseconds, each row's value times its type's period - the embedded
// store's rule (embedded_store_query.cc, TypeScaling), here as SQL.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "storage/clickhouse/content_ids.h"
#include "storage/store_types.h"

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
  storage::ProfileTypeInfo info;  // name "" when no type matched
  std::vector<uint64_t> ids;      // empty when no type matched
  // The row's value in the answer's unit: "value", or "value * multiIf(type_id = ..., period, ..., 1)".
  std::string value_sql = "value";
};

// Profile types named `name` ("": every profile type). `types` sorted as
// ClickHouseProfileStore::LoadTypes returns them.
TypeSelection SelectProfileTypes(const std::vector<TypeRow>& types, const std::string& name);

// Ids of the types of `kind` named `name` ("": every one of that kind).
std::vector<uint64_t> TypeIds(const std::vector<TypeRow>& types, TypeKind kind, const std::string& name);

}  // namespace warpscope::clickhouse
