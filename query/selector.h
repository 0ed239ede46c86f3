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
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "query/label_matcher.h"

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

}  // namespace warpscope
