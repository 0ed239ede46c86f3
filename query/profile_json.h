// Members shared by the query API's JSON answers. Pure functions.
#pragma once

#include <string>

#include "storage/store_types.h"

namespace warpscope::query {

// Version of every JSON answer's shape (the "version" member); bumped when a
// field changes meaning, not when one is added.
inline constexpr int kJsonAnswerVersion = 1;

// Appends `"version":1,"type":"cpu","unit":"samples","period_nanos":N`.
void AppendProfileTypeMembers(const storage::ProfileTypeInfo& type, std::string* out);

}  // namespace warpscope::query
