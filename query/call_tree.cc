#include "query/call_tree.h"

#include "base/saturating.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <string_view>
#include <unordered_map>

#include "base/logging.h"
#include "query/json_text.h"

namespace warpscope::query {

CallTree::CallTree(int sides) : sides_(sides) {
  CHECK(sides >= 1 && sides <= kMaxSides);
  const uint32_t root_label = labels_.InternSynthetic("total");
  other_label_ = labels_.InternSynthetic("other");
  nodes_.push_back(Node{UINT32_MAX, root_label});
}

CallTree::ChildIndex::ChildIndex() : keys_(1024, kEmpty), values_(1024), shift_(64 - 10) {}

uint32_t CallTree::ChildIndex::FindOrInsert(uint64_t key, uint32_t fresh, bool* inserted) {
  const size_t mask = keys_.size() - 1;
  for (size_t i = (key * 0x9E3779B97F4A7C15ULL) >> shift_;; i = (i + 1) & mask) {
    if (keys_[i] == key) {
      *inserted = false;
      return values_[i];
    }
    if (keys_[i] != kEmpty) continue;
    keys_[i] = key;
    values_[i] = fresh;
    *inserted = true;
    if (++size_ * 2 > keys_.size()) Grow();
    return fresh;
  }
}

void CallTree::ChildIndex::Grow() {
  std::vector<uint64_t> old_keys(keys_.size() * 2, kEmpty);
  std::vector<uint32_t> old_values(values_.size() * 2);
  old_keys.swap(keys_);
  old_values.swap(values_);
  --shift_;
  const size_t mask = keys_.size() - 1;
  for (size_t j = 0; j < old_keys.size(); ++j) {
    if (old_keys[j] == kEmpty) continue;
    size_t i = (old_keys[j] * 0x9E3779B97F4A7C15ULL) >> shift_;
    while (keys_[i] != kEmpty) i = (i + 1) & mask;
    keys_[i] = old_keys[j];
    values_[i] = old_values[j];
  }
}

void CallTree::AddProfile(const storage::MergedProfile& profile, int side) {
  CHECK(side >= 0 && side < sides_);
  StackLabeler labeler(&labels_, profile);
  for (const storage::StackValue& stack : profile.stacks) {
    if (stack.value > 0) AddStack(stack, &labeler, side, stack.value);
  }
}

uint32_t CallTree::Child(uint32_t parent, uint32_t label) {
  const uint64_t key = (static_cast<uint64_t>(parent) << 32) | label;
  bool inserted = false;
  const uint32_t node = child_.FindOrInsert(key, static_cast<uint32_t>(nodes_.size()), &inserted);
  if (inserted) nodes_.push_back(Node{parent, label});
  return node;
}

void CallTree::AddStack(const storage::StackValue& stack, StackLabeler* labeler, int side, int64_t value) {
  labeler->Label(stack, &scratch_labels_);
  uint32_t node = 0;
  // Saturating: stacks may each be near INT64_MAX (storage/type_scaling.h).
  SaturatingAddTo(nodes_[0].total[side], value);
  // Frames are leaf first; the tree grows from the root.
  for (auto it = scratch_labels_.rbegin(); it != scratch_labels_.rend(); ++it) {
    node = Child(node, *it);
    SaturatingAddTo(nodes_[node].total[side], value);
  }
  SaturatingAddTo(nodes_[node].self[side], value);
}


void CallTree::AppendJsonMembers(size_t max_nodes, std::string* out) const {
  const size_t n = nodes_.size();
  max_nodes = std::max<size_t>(max_nodes, 2);  // the root and one "other"

  // Children of each node (CSR), sorted by label name, binary, kind.
  std::vector<uint32_t> label_rank(labels_.size());
  {
    std::vector<uint32_t> by_name(labels_.size());
    std::iota(by_name.begin(), by_name.end(), 0);
    std::sort(by_name.begin(), by_name.end(), [this](uint32_t a, uint32_t b) {
      const FrameLabel& la = labels_.label(a);
      const FrameLabel& lb = labels_.label(b);
      if (const int c = la.name.compare(lb.name); c != 0) return c < 0;
      if (const int c = la.binary.compare(lb.binary); c != 0) return c < 0;
      return la.JsonKind() < lb.JsonKind();
    });
    for (uint32_t rank = 0; rank < by_name.size(); ++rank) label_rank[by_name[rank]] = rank;
  }
  std::vector<uint32_t> child_begin(n + 1, 0);
  for (size_t i = 1; i < n; ++i) ++child_begin[nodes_[i].parent + 1];
  std::partial_sum(child_begin.begin(), child_begin.end(), child_begin.begin());
  std::vector<uint32_t> children(n > 0 ? n - 1 : 0);
  {
    std::vector<uint32_t> fill(child_begin.begin(), child_begin.end() - 1);
    for (size_t i = 1; i < n; ++i) children[fill[nodes_[i].parent]++] = static_cast<uint32_t>(i);
  }
  for (size_t i = 0; i < n; ++i) {
    std::sort(children.begin() + child_begin[i], children.begin() + child_begin[i + 1],
              [&](uint32_t a, uint32_t b) { return label_rank[nodes_[a].label] < label_rank[nodes_[b].label]; });
  }
  const auto child_count = [&](uint32_t node) { return child_begin[node + 1] - child_begin[node]; };

  // Which nodes to keep. Best first from the root: a child never outranks its
  // parent (its totals are no bigger, and ties go to the earlier node in
  // preorder), so the kept nodes always form a tree.
  std::vector<bool> kept(n, true);
  std::vector<uint32_t> left_out_children(n, 0);  // per kept node
  size_t kept_count = n;
  if (n > max_nodes) {
    std::vector<uint32_t> preorder(n, 0);
    {
      std::vector<uint32_t> stack = {0};
      uint32_t next = 0;
      while (!stack.empty()) {
        const uint32_t node = stack.back();
        stack.pop_back();
        preorder[node] = next++;
        for (uint32_t c = child_begin[node + 1]; c > child_begin[node]; --c) stack.push_back(children[c - 1]);
      }
    }
    double side_total[kMaxSides] = {};
    for (int s = 0; s < sides_; ++s) side_total[s] = static_cast<double>(std::max<int64_t>(nodes_[0].total[s], 1));
    const auto share = [&](uint32_t node) {
      double best = 0;
      for (int s = 0; s < sides_; ++s) best = std::max(best, static_cast<double>(nodes_[node].total[s]) / side_total[s]);
      return best;
    };
    // True when a ranks below b (std::priority_queue pops the top rank).
    const auto ranks_below = [&](uint32_t a, uint32_t b) {
      if (sides_ == 1) {
        if (nodes_[a].total[0] != nodes_[b].total[0]) return nodes_[a].total[0] < nodes_[b].total[0];
      } else {
        const double sa = share(a), sb = share(b);
        if (sa != sb) return sa < sb;
      }
      return preorder[a] > preorder[b];
    };
    std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(ranks_below)> candidates(ranks_below);
    std::fill(kept.begin(), kept.end(), false);
    kept[0] = true;
    kept_count = 1;
    for (size_t i = 0; i < n; ++i) left_out_children[i] = child_count(static_cast<uint32_t>(i));
    size_t rendered = 1 + (child_count(0) > 0 ? 1 : 0);
    for (uint32_t c = child_begin[0]; c < child_begin[1]; ++c) candidates.push(children[c]);
    while (!candidates.empty()) {
      const uint32_t node = candidates.top();
      const uint32_t parent = nodes_[node].parent;
      // Keeping it adds its row and, if it has children, their "other" row;
      // it removes the parent's "other" row when it is the last child left out.
      const size_t after = rendered + 1 + (child_count(node) > 0 ? 1 : 0) - (left_out_children[parent] == 1 ? 1 : 0);
      if (after > max_nodes) break;
      candidates.pop();
      rendered = after;
      kept[node] = true;
      ++kept_count;
      --left_out_children[parent];
      for (uint32_t c = child_begin[node]; c < child_begin[node + 1]; ++c) candidates.push(children[c]);
    }
  }

  // Render in preorder.
  JsonStringTable names, binaries;
  std::vector<int64_t> name_of_label(labels_.size(), -1), binary_of_label(labels_.size(), -1);
  std::string rows;
  rows.reserve(std::min(n, max_nodes) * (sides_ == 1 ? 32 : 48));
  int64_t row_count = 0;
  const auto append_row = [&](int64_t parent, uint32_t label, const int64_t* self, const int64_t* total) {
    if (name_of_label[label] < 0) {
      name_of_label[label] = names.Index(labels_.label(label).name);
      binary_of_label[label] = binaries.Index(labels_.label(label).binary);
    }
    if (row_count != 0) rows.push_back(',');
    rows.push_back('[');
    AppendJsonInt(parent, &rows);
    rows.push_back(',');
    AppendJsonInt(name_of_label[label], &rows);
    rows.push_back(',');
    AppendJsonInt(binary_of_label[label], &rows);
    rows.push_back(',');
    AppendJsonInt(labels_.label(label).JsonKind(), &rows);
    for (int s = 0; s < sides_; ++s) {
      rows.push_back(',');
      AppendJsonInt(self[s], &rows);
      rows.push_back(',');
      AppendJsonInt(total[s], &rows);
    }
    rows.push_back(']');
    return row_count++;
  };
  struct Visit {
    uint32_t node;
    int64_t row;
    uint32_t next_child;  // index into children
  };
  std::vector<Visit> stack;
  stack.push_back({0, append_row(-1, nodes_[0].label, nodes_[0].self, nodes_[0].total), child_begin[0]});
  while (!stack.empty()) {
    Visit& visit = stack.back();
    const uint32_t end = child_begin[visit.node + 1];
    while (visit.next_child < end && !kept[children[visit.next_child]]) ++visit.next_child;
    if (visit.next_child < end) {
      const uint32_t child = children[visit.next_child++];
      const int64_t row = append_row(visit.row, nodes_[child].label, nodes_[child].self, nodes_[child].total);
      stack.push_back({child, row, child_begin[child]});
      continue;
    }
    if (left_out_children[visit.node] > 0 && kept_count < n) {
      int64_t other[kMaxSides] = {};
      for (uint32_t c = child_begin[visit.node]; c < end; ++c) {
        if (kept[children[c]]) continue;
        for (int s = 0; s < sides_; ++s) SaturatingAddTo(other[s], nodes_[children[c]].total[s]);
      }
      append_row(visit.row, other_label_, other, other);
    }
    stack.pop_back();
  }

  out->append("\"truncated\":");
  AppendJsonInt(static_cast<int64_t>(n - kept_count), out);
  out->append(",\"names\":");
  names.AppendArray(out);
  out->append(",\"binaries\":");
  binaries.AppendArray(out);
  out->append(",\"nodes\":[");
  out->append(rows);
  out->push_back(']');
}

}  // namespace warpscope::query
