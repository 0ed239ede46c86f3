// One `name op "value"` term of a selector: =, !=, =~ or !~ against one label.
//
// Regexes follow Prometheus: fully anchored (=~"py" does not match "python"), compiled
// once at Create. The dialect is std::regex ECMAScript, not Prometheus' RE2: the common
// subset (classes, alternation, ., *, +, ?, {m,n}, (?:...)) behaves the same, a leading
// (?i) is honoured as case-insensitive, back-references are rejected, and '.' does not
// match '\n'.
//
// Cost is bounded at Create so a query cannot stall the store: a pattern is at most
// kMaxRegexBytes, counted repetitions may not blow it up past kMaxRegexExpandedAtoms, and
// matching runs libstdc++'s polynomial (Thompson) executor, whose time is linear in the
// value and whose stack does not grow with it. (The default backtracking executor is
// exponential on (a*)*b and overflows the stack on values of ~100 KB.)
//
// A LabelMatcher is immutable after Create; copies share the compiled regex, and Matches
// may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <regex>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warpscope {

enum class MatchOp { kEqual, kNotEqual, kRegexMatch, kRegexNoMatch };

// "=", "!=", "=~", "!~".
std::string_view MatchOpToken(MatchOp op);

inline constexpr size_t kMaxRegexBytes = 1024;
// Rough NFA size after expanding {m,n}: one per literal, class or escape, times the bounds
// of enclosing repetitions. Twice what the longest plain pattern costs.
inline constexpr size_t kMaxRegexExpandedAtoms = 2 * kMaxRegexBytes;

// [a-zA-Z_][a-zA-Z0-9_]*, as in Prometheus.
bool IsValidLabelName(std::string_view name);

// The value as a double-quoted selector string: \ " newline and tab escaped.
std::string QuoteLabelValue(std::string_view value);

class LabelMatcher {
 public:
  // Checks the name, and for =~ and !~ the pattern's limits and syntax.
  // Errors are InvalidArgument and name the label.
  static StatusOr<LabelMatcher> Create(std::string name, MatchOp op, std::string value);

  const std::string& name() const { return name_; }
  MatchOp op() const { return op_; }
  // The literal value for = and !=; the pattern as written for =~ and !~.
  const std::string& value() const { return value_; }

  // A missing label reads as "".
  bool Matches(std::string_view label_value) const;
  // Whether a series without this label passes. A store that pushes matchers down to an
  // index of (name, value) pairs must not drop such series when this is true.
  bool matches_empty() const { return matches_empty_; }
  bool is_regex() const { return regex_ != nullptr; }
  // The work of one Matches call per byte of the value, in NFA states (the regex's
  // expanded atoms); 0 for = and !=, whose cost does not depend on the pattern.
  size_t match_cost_per_byte() const { return match_cost_per_byte_; }

  // name="value", name=~"pattern": parses back to an equal matcher.
  std::string ToString() const;

  // Same name, op and value (equal values compile to equal regexes).
  bool operator==(const LabelMatcher& other) const {
    return name_ == other.name_ && op_ == other.op_ && value_ == other.value_;
  }

 private:
  LabelMatcher(std::string name, MatchOp op, std::string value, std::shared_ptr<const std::regex> regex);

  std::string name_;
  MatchOp op_;
  std::string value_;
  std::shared_ptr<const std::regex> regex_;  // set for =~ and !~ only
  bool matches_empty_ = false;
  size_t match_cost_per_byte_ = 0;
};

}  // namespace warpscope
