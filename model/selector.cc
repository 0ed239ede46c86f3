#include "model/selector.h"

#include <algorithm>
#include <cstdio>

namespace warpscope {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// Recursive descent over one selector string; lives for one Parse call.
class SelectorParser {
 public:
  explicit SelectorParser(std::string_view text) : text_(text) {}

  StatusOr<Selector> Run() {
    if (text_.size() > kMaxSelectorBytes) {
      return InvalidArgumentError("selector: " + std::to_string(text_.size()) + " bytes; the limit is " +
                                  std::to_string(kMaxSelectorBytes));
    }
    SkipSpace();
    if (AtEnd()) return Selector();
    if (Peek() != '{') {
      const std::string hint =
          IsNameStart(Peek()) ? " (no metric name goes before '{'; the profile type is the 'type' parameter)" : "";
      return Expected("'{'", hint);
    }
    ++pos_;
    std::vector<LabelMatcher> matchers;
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;  // "{}" or a trailing comma
      if (matchers.size() == kMaxSelectorMatchers) {
        return Error(pos_, "more than " + std::to_string(kMaxSelectorMatchers) + " matchers");
      }
      ASSIGN_OR_RETURN(std::string name, ParseName());
      SkipSpace();
      ASSIGN_OR_RETURN(const MatchOp op, ParseOp(name));
      SkipSpace();
      const size_t value_pos = pos_;
      ASSIGN_OR_RETURN(std::string value, ParseQuoted());
      StatusOr<LabelMatcher> matcher = LabelMatcher::Create(std::move(name), op, std::move(value));
      if (!matcher.ok()) return Error(value_pos, matcher.status().message());
      matchers.push_back(std::move(matcher).value());
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') break;
      return Expected("',' or '}' after a matcher");
    }
    ++pos_;  // the closing '}'
    SkipSpace();
    if (!AtEnd()) return Expected("nothing after the closing '}'");
    return Selector(std::move(matchers));
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  // '\0' at the end, which no token starts with.
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  void SkipSpace() {
    while (!AtEnd() && IsSpace(text_[pos_])) ++pos_;
  }

  Status Error(size_t pos, const std::string& what) const {
    return InvalidArgumentError("selector: column " + std::to_string(pos + 1) + ": " + what);
  }
  Status Expected(const std::string& what, const std::string& hint = "") const {
    std::string found = "end of input";
    if (!AtEnd()) {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      char buf[16];
      if (c >= 0x20 && c < 0x7f) std::snprintf(buf, sizeof(buf), "'%c'", c);
      else std::snprintf(buf, sizeof(buf), "byte 0x%02x", c);
      found = buf;
    }
    return Error(pos_, "expected " + what + ", found " + found + hint);
  }

  StatusOr<std::string> ParseName() {
    if (AtEnd() || !IsNameStart(Peek())) return Expected("a label name");
    const size_t begin = pos_;
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    return std::string(text_.substr(begin, pos_ - begin));
  }

  StatusOr<MatchOp> ParseOp(const std::string& name) {
    if (Peek() == '=') {
      ++pos_;
      if (Peek() != '~') return MatchOp::kEqual;
      ++pos_;
      return MatchOp::kRegexMatch;
    }
    if (Peek() == '!') {
      ++pos_;
      const char next = Peek();
      if (next != '=' && next != '~') return Expected("'=' or '~' after '!'");
      ++pos_;
      return next == '=' ? MatchOp::kNotEqual : MatchOp::kRegexNoMatch;
    }
    return Expected("'=', '!=', '=~' or '!~' after label name '" + name + "'");
  }

  StatusOr<std::string> ParseQuoted() {
    if (Peek() != '"') return Expected("a double-quoted value");
    const size_t open = pos_++;
    std::string value;
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return value;
      }
      if (c == '\n') return Error(pos_, "newline inside a quoted value; write it as \\n");
      if (c != '\\') {
        value += c;
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= text_.size()) break;
      switch (text_[pos_ + 1]) {
        case '"': value += '"'; break;
        case '\\': value += '\\'; break;
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        default:
          return Error(pos_, "unknown escape '\\" + std::string(1, text_[pos_ + 1]) +
                                 "' (escapes are \\\" \\\\ \\n \\t \\r; a regex's \\. is written \\\\.)");
      }
      pos_ += 2;
    }
    return Error(open, "quoted value is not closed");
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<Selector> Selector::Parse(std::string_view text) { return SelectorParser(text).Run(); }

bool Selector::Matches(const LabelLookup& get) const {
  return std::all_of(matchers_.begin(), matchers_.end(),
                     [&](const LabelMatcher& m) { return m.Matches(get(m.name())); });
}

bool Selector::Matches(const LabelList& labels) const {
  return Matches([&labels](std::string_view name) -> std::string_view {
    for (const auto& [key, value] : labels) {
      if (key == name) return value;
    }
    return {};
  });
}

std::string Selector::ToString() const {
  std::string out = "{";
  for (size_t i = 0; i < matchers_.size(); ++i) {
    if (i > 0) out += ", ";
    out += matchers_[i].ToString();
  }
  return out + "}";
}

SelectorEvaluation::SelectorEvaluation(const Selector& selector, uint64_t regex_budget)
    : selector_(selector), budget_(regex_budget), memo_(selector.matchers().size()) {}

StatusOr<bool> SelectorEvaluation::Matches(const Selector::LabelList& labels) {
  const std::vector<LabelMatcher>& matchers = selector_.matchers();
  for (size_t i = 0; i < matchers.size(); ++i) {
    const LabelMatcher& m = matchers[i];
    std::string_view value;
    for (const auto& [name, v] : labels) {
      if (name == m.name()) {
        value = v;
        break;
      }
    }
    bool pass;
    if (!m.is_regex()) {
      pass = m.Matches(value);
    } else if (auto it = memo_[i].find(value); it != memo_[i].end()) {
      pass = it->second;
    } else {
      spent_ += (value.size() + 1) * m.match_cost_per_byte();
      if (spent_ > budget_) {
        return InvalidArgumentError("selector too expensive: " + m.ToString() + " over this many distinct values of '" +
                                    m.name() + "' passes the limit on regular-expression work; narrow it with an "
                                    "equality matcher (node=\"...\") or a simpler expression");
      }
      pass = m.Matches(value);
      memo_[i].emplace(std::string(value), pass);
    }
    if (!pass) return false;
  }
  return true;
}

}  // namespace warpscope
