#include "model/label_matcher.h"

#include <algorithm>
#include <utility>
#include <vector>

// Matching relies on libstdc++'s polynomial executor (std::regex_constants::__polynomial);
// any other library's backtracking std::regex would bring back the blow-ups it avoids.
#ifndef __GLIBCXX__
#error "model/label_matcher.cc needs libstdc++'s polynomial std::regex executor"
#endif

namespace warpscope {
namespace {

constexpr std::string_view kCaseInsensitivePrefix = "(?i)";
// Saturation point for the estimate; anything this big is rejected anyway.
constexpr size_t kAtomsCap = size_t{1} << 40;

size_t SaturatingAdd(size_t a, size_t b) { return std::min(a + std::min(b, kAtomsCap), kAtomsCap); }
size_t SaturatingMul(size_t a, size_t b) {
  size_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kAtomsCap : std::min(product, kAtomsCap);
}

// Parses "{m}", "{m,}" or "{m,n}" at p[i]; returns the copies it makes of the item before
// it and moves i past it, or 0 when p[i] does not start a counted repetition.
size_t RepetitionBound(std::string_view p, size_t& i) {
  size_t j = i + 1;
  const auto number = [&](size_t& value) {
    const size_t begin = j;
    for (value = 0; j < p.size() && p[j] >= '0' && p[j] <= '9'; ++j) {
      value = SaturatingAdd(SaturatingMul(value, 10), p[j] - '0');
    }
    return j > begin;
  };
  size_t low = 0, high = 0;
  if (!number(low)) return 0;
  high = low;
  if (j < p.size() && p[j] == ',') {
    ++j;
    if (!number(high)) high = SaturatingAdd(low, 1);  // {m,}: m copies and a star
  }
  if (j >= p.size() || p[j] != '}') return 0;
  i = j + 1;
  return std::max<size_t>({low, high, 1});
}

// A rough size of the NFA std::regex builds, which copies a group once per repetition
// count: ((a{0,100}){0,100}){0,100} is 19 bytes but a million states. Not a regex parser;
// it only needs to see groups, classes, escapes and braces well enough that a pattern it
// passes cannot be much bigger than it says.
size_t ExpandedAtoms(std::string_view p) {
  std::vector<size_t> open_groups{0};  // cost so far of each enclosing group
  size_t last_item = 0;                // cost of the item a following quantifier repeats
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '(') {
      open_groups.push_back(0);
      ++i;
      continue;
    }
    if (c == ')') {
      if (open_groups.size() > 1) {
        last_item = open_groups.back();
        open_groups.pop_back();
        open_groups.back() = SaturatingAdd(open_groups.back(), last_item);
      }
      ++i;
      continue;
    }
    if (c == '{') {
      if (const size_t copies = RepetitionBound(p, i); copies != 0) {
        open_groups.back() = SaturatingAdd(open_groups.back(), SaturatingMul(last_item, copies - 1));
        last_item = SaturatingMul(last_item, copies);
        continue;
      }
    }
    if (c == '*' || c == '+' || c == '?' || c == '|' || c == '^' || c == '$') {
      ++i;
      continue;
    }
    if (c == '\\') {
      i += 2;
    } else if (c == '[') {
      size_t j = i + 1;
      while (j < p.size() && p[j] != ']') j += p[j] == '\\' ? 2 : 1;
      i = j + 1;
    } else {
      ++i;
    }
    last_item = 1;
    open_groups.back() = SaturatingAdd(open_groups.back(), 1);
  }
  size_t total = 0;
  for (size_t cost : open_groups) total = SaturatingAdd(total, cost);
  return total;
}

StatusOr<std::shared_ptr<const std::regex>> CompileAnchored(const std::string& label, const std::string& pattern) {
  if (pattern.size() > kMaxRegexBytes) {
    return InvalidArgumentError("label '" + label + "': regular expression is " + std::to_string(pattern.size()) +
                                " bytes; the limit is " + std::to_string(kMaxRegexBytes));
  }
  const std::string context = "label '" + label + "': regular expression " + QuoteLabelValue(pattern);
  std::string_view body = pattern;
  // Polynomial: the Thompson executor (see the header); it refuses back-references.
  auto flags = std::regex::ECMAScript | std::regex_constants::__polynomial;
  if (body.substr(0, kCaseInsensitivePrefix.size()) == kCaseInsensitivePrefix) {
    body.remove_prefix(kCaseInsensitivePrefix.size());
    flags |= std::regex::icase;
  }
  if (ExpandedAtoms(body) > kMaxRegexExpandedAtoms) {
    return InvalidArgumentError(context + " expands to too many states; use smaller {m,n} counts");
  }
  // std::regex reports syntax errors only by throwing; the exception stops here.
  try {
    // regex_match (used by Matches) is anchored at both ends, as Prometheus' ^(?:re)$.
    return std::make_shared<const std::regex>(body.begin(), body.end(), flags);
  } catch (const std::regex_error& e) {
    return InvalidArgumentError(context + " is invalid: " + e.what());
  }
}

}  // namespace

std::string_view MatchOpToken(MatchOp op) {
  switch (op) {
    case MatchOp::kEqual: return "=";
    case MatchOp::kNotEqual: return "!=";
    case MatchOp::kRegexMatch: return "=~";
    case MatchOp::kRegexNoMatch: return "!~";
  }
  return "?";
}

bool IsValidLabelName(std::string_view name) {
  const auto is_start = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (name.empty() || !is_start(name[0])) return false;
  return std::all_of(name.begin() + 1, name.end(), [&](char c) { return is_start(c) || (c >= '0' && c <= '9'); });
}

std::string QuoteLabelValue(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

StatusOr<LabelMatcher> LabelMatcher::Create(std::string name, MatchOp op, std::string value) {
  if (!IsValidLabelName(name)) {
    return InvalidArgumentError("bad label name '" + name + "' (want [a-zA-Z_][a-zA-Z0-9_]*)");
  }
  std::shared_ptr<const std::regex> regex;
  if (op == MatchOp::kRegexMatch || op == MatchOp::kRegexNoMatch) {
    ASSIGN_OR_RETURN(regex, CompileAnchored(name, value));
  }
  return LabelMatcher(std::move(name), op, std::move(value), std::move(regex));
}

LabelMatcher::LabelMatcher(std::string name, MatchOp op, std::string value, std::shared_ptr<const std::regex> regex)
    : name_(std::move(name)), op_(op), value_(std::move(value)), regex_(std::move(regex)) {
  matches_empty_ = Matches("");
  if (regex_ != nullptr) match_cost_per_byte_ = std::max<size_t>(1, ExpandedAtoms(value_));
}

bool LabelMatcher::Matches(std::string_view label_value) const {
  switch (op_) {
    case MatchOp::kEqual: return label_value == value_;
    case MatchOp::kNotEqual: return label_value != value_;
    case MatchOp::kRegexMatch: return std::regex_match(label_value.begin(), label_value.end(), *regex_);
    case MatchOp::kRegexNoMatch: return !std::regex_match(label_value.begin(), label_value.end(), *regex_);
  }
  return false;
}

std::string LabelMatcher::ToString() const {
  return name_ + std::string(MatchOpToken(op_)) + QuoteLabelValue(value_);
}

}  // namespace warpscope
