#include "query/top_table.h"

#include "base/saturating.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "query/frame_label.h"
#include "query/json_text.h"
#include "query/profile_json.h"

namespace warpscope::query {

std::string RenderTopJson(const storage::MergedProfile& profile, const TopOptions& options) {
  struct Cost {
    int64_t self = 0;
    int64_t total = 0;
    size_t last_stack = SIZE_MAX;  // the last stack that counted this function's total
  };
  FrameLabelInterner labels;
  StackLabeler labeler(&labels, profile);
  std::vector<uint32_t> stack_labels;
  std::vector<Cost> costs;
  int64_t profile_total = 0;
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const storage::StackValue& stack = profile.stacks[i];
    if (stack.value <= 0) continue;
    SaturatingAddTo(profile_total, stack.value);
    labeler.Label(stack, &stack_labels);
    for (size_t f = 0; f < stack_labels.size(); ++f) {
      const uint32_t id = stack_labels[f];
      if (id >= costs.size()) costs.resize(id + 1);
      Cost& cost = costs[id];
      if (f == 0) SaturatingAddTo(cost.self, stack.value);  // frames are leaf first
      if (cost.last_stack != i) {
        SaturatingAddTo(cost.total, stack.value);
        cost.last_stack = i;
      }
    }
  }

  std::vector<uint32_t> order(costs.size());
  std::iota(order.begin(), order.end(), 0);
  const bool by_total = options.sort_by == TopOptions::SortBy::kTotal;
  const auto before = [&](uint32_t a, uint32_t b) {
    const Cost& ca = costs[a];
    const Cost& cb = costs[b];
    const int64_t ka1 = by_total ? ca.total : ca.self, kb1 = by_total ? cb.total : cb.self;
    if (ka1 != kb1) return ka1 > kb1;
    const int64_t ka2 = by_total ? ca.self : ca.total, kb2 = by_total ? cb.self : cb.total;
    if (ka2 != kb2) return ka2 > kb2;
    const FrameLabel& la = labels.label(a);
    const FrameLabel& lb = labels.label(b);
    if (const int c = la.name.compare(lb.name); c != 0) return c < 0;
    if (const int c = la.binary.compare(lb.binary); c != 0) return c < 0;
    return la.JsonKind() < lb.JsonKind();
  };
  const size_t rows = options.limit == 0 ? order.size() : std::min(options.limit, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(rows), order.end(), before);

  std::string out = "{";
  AppendProfileTypeMembers(profile.type, &out);
  out.append(",\"total\":");
  AppendJsonInt(profile_total, &out);
  out.append(",\"function_count\":");
  AppendJsonInt(static_cast<int64_t>(costs.size()), &out);
  out.append(",\"functions\":[");
  for (size_t r = 0; r < rows; ++r) {
    const FrameLabel& label = labels.label(order[r]);
    const Cost& cost = costs[order[r]];
    if (r != 0) out.push_back(',');
    out.append("{\"name\":");
    AppendJsonString(label.name, &out);
    out.append(",\"binary\":");
    AppendJsonString(label.binary, &out);
    out.append(",\"kind\":");
    AppendJsonInt(label.JsonKind(), &out);
    out.append(",\"self\":");
    AppendJsonInt(cost.self, &out);
    out.append(",\"total\":");
    AppendJsonInt(cost.total, &out);
    out.push_back('}');
  }
  out.append("]}");
  return out;
}

}  // namespace warpscope::query
