#include "query/profile_diff.h"

#include "query/call_tree.h"
#include "query/json_text.h"
#include "query/profile_json.h"

namespace warpscope::query {

std::string RenderDiffJson(const storage::MergedProfile& base, const storage::MergedProfile& target,
                           const FlameGraphOptions& options) {
  CallTree tree(/*sides=*/2);
  tree.AddProfile(base, 0);
  tree.AddProfile(target, 1);
  std::string out = "{";
  AppendProfileTypeMembers(target.type.name.empty() ? base.type : target.type, &out);
  out.append(",\"base_total\":");
  AppendJsonInt(tree.total(0), &out);
  out.append(",\"target_total\":");
  AppendJsonInt(tree.total(1), &out);
  out.push_back(',');
  tree.AppendJsonMembers(options.max_nodes, &out);
  out.push_back('}');
  return out;
}

}  // namespace warpscope::query
