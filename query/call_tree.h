// The call tree behind the flame graph (one side) and the diff (two sides):
// stacks merged root to leaf by frame label (frame_label.h), a self and a
// total value per side in every node, folded to a node budget when rendered.
//
// Invariants, also after folding: a node's total = its self + the sum of its
// children's totals, per side; the root's total is the sum of the stacks'
// values of that side.
//
// Owned by one query (one thread). Keeps string_views into the profiles
// added, which must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "query/frame_label.h"
#include "storage/profile_store.h"

namespace warpscope::query {

class CallTree {
 public:
  static constexpr int kMaxSides = 2;

  // sides: 1 (flame graph) or 2 (diff: 0 = base, 1 = target).
  explicit CallTree(int sides);

  // Adds every stack of `profile` to `side`. Stacks with a value <= 0 (which
  // storage never returns) are skipped; a stack without frames counts as
  // self time of the root.
  void AddProfile(const storage::MergedProfile& profile, int side);

  int64_t total(int side) const { return nodes_[0].total[side]; }
  size_t node_count() const { return nodes_.size(); }

  // Appends the members `"truncated":N,"names":[..],"binaries":[..],"nodes":[..]`
  // (no braces) rendering at most max(max_nodes, 2) nodes. Rows are
  // [parent, name, binary, kind, then self, total per side], depth-first
  // preorder, root first with parent -1; children sorted by name, binary,
  // kind, with the "other" node (kind 3) last. When the tree is bigger than
  // the budget, nodes are kept biggest first (by total; in a diff by the
  // larger of the two totals as shares of their side's total), and the
  // children left out of each kept node become one "other" child holding
  // their summed totals as its self and total. "truncated" counts the nodes
  // left out.
  void AppendJsonMembers(size_t max_nodes, std::string* out) const;

 private:
  struct Node {
    uint32_t parent;
    uint32_t label;
    int64_t self[kMaxSides] = {};
    int64_t total[kMaxSides] = {};
  };

  void AddStack(const storage::StackValue& stack, StackLabeler* labeler, int side, int64_t value);
  uint32_t Child(uint32_t parent, uint32_t label);

  // (parent << 32 | label) -> child node: open addressing with linear
  // probing, because std::unordered_map's node per entry made the lookup
  // most of the time at 1M+ nodes.
  class ChildIndex {
   public:
    ChildIndex();
    // The node for `key`, or `fresh` (now stored) when the key is new.
    uint32_t FindOrInsert(uint64_t key, uint32_t fresh, bool* inserted);

   private:
    static constexpr uint64_t kEmpty = UINT64_MAX;  // parent UINT32_MAX is never a node
    void Grow();
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> values_;
    size_t size_ = 0;
    int shift_ = 0;  // 64 - log2(capacity)
  };

  const int sides_;
  FrameLabelInterner labels_;
  uint32_t other_label_ = 0;
  std::vector<Node> nodes_;  // nodes_[0] is the root
  ChildIndex child_;
  std::vector<uint32_t> scratch_labels_;
};

}  // namespace warpscope::query
