#include "model/label_matcher.h"

#include <gtest/gtest.h>

#include <chrono>

namespace warpscope {
namespace {

LabelMatcher MustCreate(const std::string& name, MatchOp op, const std::string& value) {
  StatusOr<LabelMatcher> m = LabelMatcher::Create(name, op, value);
  EXPECT_TRUE(m.ok()) << name << " " << value << ": " << m.status().ToString();
  return std::move(m).value();
}

std::string CreateError(const std::string& name, MatchOp op, const std::string& value) {
  StatusOr<LabelMatcher> m = LabelMatcher::Create(name, op, value);
  if (m.ok()) return "(no error)";
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  return m.status().message();
}

TEST(LabelMatcherTest, RegexIsAnchoredAtBothEnds) {
  const struct {
    const char* pattern;
    const char* value;
    bool want;
  } cases[] = {
      {"py", "python", false},      {"py", "py", true},          {"thon", "python", false},
      {"py.*", "python", true},     {".*thon", "python", true},  {"python.*", "python3.11", true},
      {"py|python", "python", true}, {"py|python", "py", true},  {"py|python", "pyt", false},
      {"^py$", "py", true},         {"", "", true},              {"", "x", false},
      {".*", "", true},             {".+", "", false},           {"a.c", "a\nc", false},  // '.' skips \n
      {"[0-9]{1,3}(\\.[0-9]{1,3}){3}", "10.0.0.1", true},          {"(?i)PYTHON", "Python", true},
      {"(?i)py", "PYTHON", false},  {"PYTHON", "python", false},
  };
  for (const auto& c : cases) {
    const LabelMatcher match = MustCreate("comm", MatchOp::kRegexMatch, c.pattern);
    const LabelMatcher no_match = MustCreate("comm", MatchOp::kRegexNoMatch, c.pattern);
    EXPECT_EQ(match.Matches(c.value), c.want) << c.pattern << " vs " << c.value;
    EXPECT_EQ(no_match.Matches(c.value), !c.want) << c.pattern << " vs " << c.value;
  }
}

TEST(LabelMatcherTest, EqualityAndEmpty) {
  const LabelMatcher eq = MustCreate("node", MatchOp::kEqual, "a");
  EXPECT_TRUE(eq.Matches("a"));
  EXPECT_FALSE(eq.Matches("ab"));
  EXPECT_FALSE(eq.Matches(""));
  const LabelMatcher ne = MustCreate("node", MatchOp::kNotEqual, "a");
  EXPECT_FALSE(ne.Matches("a"));
  EXPECT_TRUE(ne.Matches("b"));

  // What a store must know before pruning series that lack the label.
  EXPECT_FALSE(eq.matches_empty());
  EXPECT_TRUE(ne.matches_empty());
  EXPECT_TRUE(MustCreate("node", MatchOp::kEqual, "").matches_empty());
  EXPECT_FALSE(MustCreate("node", MatchOp::kNotEqual, "").matches_empty());
  EXPECT_TRUE(MustCreate("node", MatchOp::kRegexMatch, ".*").matches_empty());
  EXPECT_FALSE(MustCreate("node", MatchOp::kRegexMatch, ".+").matches_empty());
  EXPECT_TRUE(MustCreate("node", MatchOp::kRegexNoMatch, ".+").matches_empty());
}

TEST(LabelMatcherTest, RejectsBadNamesAndPatterns) {
  EXPECT_NE(CreateError("1abc", MatchOp::kEqual, "x").find("bad label name '1abc'"), std::string::npos);
  EXPECT_NE(CreateError("a-b", MatchOp::kEqual, "x").find("bad label name"), std::string::npos);
  EXPECT_NE(CreateError("", MatchOp::kEqual, "x").find("bad label name"), std::string::npos);
  EXPECT_NE(CreateError("comm", MatchOp::kRegexMatch, "(").find("label 'comm': regular expression \"(\" is invalid"),
            std::string::npos);
  for (const char* bad : {"[", "*", "+a", "a)", "a{", "[b-a]", "\\", "(?<name>x)", "a{2,1}"}) {
    EXPECT_NE(CreateError("comm", MatchOp::kRegexMatch, bad).find("is invalid"), std::string::npos) << bad;
  }
  // Back-references need backtracking, which the polynomial executor does not do (nor does RE2).
  EXPECT_NE(CreateError("comm", MatchOp::kRegexMatch, "(a)\\1").find("is invalid"), std::string::npos);
  // Equality values are not patterns.
  EXPECT_TRUE(LabelMatcher::Create("comm", MatchOp::kEqual, "(").ok());
}

TEST(LabelMatcherTest, BoundsRegexCost) {
  EXPECT_TRUE(LabelMatcher::Create("a", MatchOp::kRegexMatch, std::string(kMaxRegexBytes, 'x')).ok());
  EXPECT_NE(CreateError("a", MatchOp::kRegexMatch, std::string(kMaxRegexBytes + 1, 'x'))
                .find("label 'a': regular expression is 1025 bytes; the limit is 1024"),
            std::string::npos);
  // Short patterns that std::regex would expand to up to a million NFA states.
  for (const char* blowup : {"((a{0,100}){0,100}){0,100}", "(a{0,300}){0,300}", "(((x{9}){9}){9}){9}",
                             "a{99999999999999999999999}", "(?i)(a{0,300}){0,300}", "([ab]{50,}){50}"}) {
    EXPECT_NE(CreateError("a", MatchOp::kRegexMatch, blowup).find("too many states"), std::string::npos) << blowup;
  }
  for (const char* fine : {"a{0,1000}", "(ab){1,500}", "[0-9]{1,3}(\\.[0-9]{1,3}){3}", "x\\{1000000\\}", "[{]999"}) {
    EXPECT_TRUE(LabelMatcher::Create("a", MatchOp::kRegexMatch, fine).ok()) << fine;
  }
}

// Patterns that make a backtracking matcher exponential or blow its stack are answered
// quickly by the polynomial executor.
TEST(LabelMatcherTest, MatchingStaysLinear) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(MustCreate("a", MatchOp::kRegexMatch, "(a*)*b").Matches(std::string(40, 'a')));
  EXPECT_FALSE(MustCreate("a", MatchOp::kRegexMatch, "(a|aa)+b").Matches(std::string(40, 'a')));
  const std::string huge(1 << 20, 'a');
  EXPECT_TRUE(MustCreate("a", MatchOp::kRegexMatch, ".*").Matches(huge));
  EXPECT_TRUE(MustCreate("a", MatchOp::kRegexMatch, "(a|b)*").Matches(huge));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(LabelMatcherTest, ToStringQuotesAndEscapes) {
  EXPECT_EQ(MustCreate("node", MatchOp::kEqual, "a").ToString(), "node=\"a\"");
  EXPECT_EQ(MustCreate("node", MatchOp::kNotEqual, "").ToString(), "node!=\"\"");
  EXPECT_EQ(MustCreate("comm", MatchOp::kRegexMatch, "py\\.t").ToString(), "comm=~\"py\\\\.t\"");
  EXPECT_EQ(MustCreate("comm", MatchOp::kRegexNoMatch, "x").ToString(), "comm!~\"x\"");
  EXPECT_EQ(QuoteLabelValue("a\"b\\c\nd\te\rf"), "\"a\\\"b\\\\c\\nd\\te\\rf\"");
  EXPECT_EQ(QuoteLabelValue("ünï"), "\"ünï\"");
}

}  // namespace
}  // namespace warpscope
