#include "query/flame_graph.h"

#include "query/call_tree.h"
#include "query/json_text.h"
#include "query/profile_json.h"

namespace warpscope::query {

std::string RenderFlameGraphJson(const storage::MergedProfile& profile, const FlameGraphOptions& options) {
  CallTree tree(/*sides=*/1);
  tree.AddProfile(profile, 0);
  std::string out = "{";
  AppendProfileTypeMembers(profile.type, &out);
  out.append(",\"total\":");
  AppendJsonInt(tree.total(0), &out);
  out.push_back(',');
  tree.AppendJsonMembers(options.max_nodes, &out);
  out.push_back('}');
  return out;
}

}  // namespace warpscope::query
