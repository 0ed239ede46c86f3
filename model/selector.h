// The `selector` parameter of the query API: a Prometheus-style label selector,
//   {node="a", comm=~"python.*", container!="", pod!~"canary-.*"}
// A profile passes when every matcher passes (AND). `{}` and the empty string select
// everything. Unlike PromQL there is no metric name in front (the `type` parameter plays
// that role) and no rule that some matcher must reject "".
//
// Syntax: label names [a-zA-Z_][a-zA-Z0-9_]*; values in double quotes with the escapes
// \" \\ \n \t \r (any other byte but a raw newline may appear as is); whitespace anywhere
// between tokens; a trailing comma is allowed. Regex semantics and cost limits are in
// label_matcher.h.
//
// A Selector is immutable after Parse and safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/label_matcher.h"

namespace warpscope {

// Bound the work one query can ask of every series it scans.
inline constexpr size_t kMaxSelectorMatchers = 32;
inline constexpr size_t kMaxSelectorBytes = 64 * 1024;

class Selector {
 public:
  // Reads a label's value, "" when the label is absent. The returned view must stay
  // valid until the next call.
  using LabelLookup = std::function<std::string_view(std::string_view label)>;
  using LabelList = std::vector<std::pair<std::string, std::string>>;

  // Selects everything.
  Selector() = default;
  // For code that builds a selector itself (a server adding a tenant matcher); no limits.
  explicit Selector(std::vector<LabelMatcher> matchers) : matchers_(std::move(matchers)) {}

  // InvalidArgument errors read "selector: column 12: expected ... , found ...", with
  // 1-based byte columns.
  static StatusOr<Selector> Parse(std::string_view text);

  bool Matches(const LabelLookup& get) const;
  // Linear lookup per matcher: label sets are small. The first pair with a name wins.
  bool Matches(const LabelList& labels) const;

  bool selects_everything() const { return matchers_.empty(); }
  // In the order written. A store may answer kEqual matchers whose matches_empty() is
  // false from an index, then run Matches on what the index returns.
  const std::vector<LabelMatcher>& matchers() const { return matchers_; }

  // {node="a", comm=~"python.*"}; "{}" when empty. Parse(ToString()) == *this.
  std::string ToString() const;

  bool operator==(const Selector& other) const = default;

 private:
  std::vector<LabelMatcher> matchers_;
};

// One query's run of a Selector over many label sets (a store's series). A regex
// matcher runs once per distinct value of its label: label values repeat across series
// (thousands of series share a handful of comm values), so a regex costs what the
// distinct values cost. And the regex work of the whole run is bounded: a selector that
// passes Parse's limits can still cost series x value bytes x NFA states, so past
// `budget` units of (value bytes + 1) x match_cost_per_byte() the run stops with
// InvalidArgument instead of holding a worker for minutes.
//
// Not thread-safe: one per query; the Selector must outlive it.
class SelectorEvaluation {
 public:
  // std::regex's polynomial executor takes up to ~120 ns a unit (a pattern that
  // expands to 2000 states, on a 2-core CI machine), so the default is about a
  // second of the worst work; a typical =~"python.*" over 16-byte values costs
  // 119 units a distinct value, so it allows some 80,000 distinct values.
  static constexpr uint64_t kDefaultRegexBudget = 10'000'000;

  explicit SelectorEvaluation(const Selector& selector, uint64_t regex_budget = kDefaultRegexBudget);

  StatusOr<bool> Matches(const Selector::LabelList& labels);
  uint64_t regex_work() const { return spent_; }

 private:
  const Selector& selector_;
  const uint64_t budget_;
  uint64_t spent_ = 0;
  struct ValueHash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>{}(v); }
  };
  // Per matcher (regex ones only): value -> whether it matched.
  std::vector<std::unordered_map<std::string, bool, ValueHash, std::equal_to<>>> memo_;
};

}  // namespace warpscope
