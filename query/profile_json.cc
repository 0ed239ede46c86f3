#include "query/profile_json.h"

#include "query/json_text.h"

namespace warpscope::query {

void AppendProfileTypeMembers(const storage::ProfileTypeInfo& type, std::string* out) {
  out->append("\"version\":");
  AppendJsonInt(kJsonAnswerVersion, out);
  out->append(",\"type\":");
  AppendJsonString(type.name, out);
  out->append(",\"unit\":");
  AppendJsonString(type.sample_unit, out);
  out->append(",\"period_nanos\":");
  AppendJsonInt(type.period_nanos, out);
}

}  // namespace warpscope::query
