#include "model/selector.h"

#include <gtest/gtest.h>

namespace warpscope {
namespace {

Selector MustParse(std::string_view text) {
  StatusOr<Selector> s = Selector::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().ToString();
  return s.ok() ? std::move(s).value() : Selector();
}

TEST(SelectorTest, ParsesValidSelectors) {
  const struct {
    const char* text;
    const char* canonical;
  } cases[] = {
      {"", "{}"},
      {" \t\n", "{}"},
      {"{}", "{}"},
      {"  {  }  ", "{}"},
      {"{node=\"a\"}", "{node=\"a\"}"},
      {"{node=\"a\",}", "{node=\"a\"}"},
      {"{node=\"a\" , }", "{node=\"a\"}"},
      {"{ node = \"a\" , comm =~ \"python.*\" }", "{node=\"a\", comm=~\"python.*\"}"},
      {"{\n\tnode=\"a\",\n\tcomm!~\"py\"\n}", "{node=\"a\", comm!~\"py\"}"},
      {"{a!=\"\"}", "{a!=\"\"}"},
      {"{a=\"\"}", "{a=\"\"}"},
      {"{a!~\"x|y\",b=~\".+\"}", "{a!~\"x|y\", b=~\".+\"}"},
      {"{_=\"1\", _x9=\"2\", Abc_D=\"3\"}", "{_=\"1\", _x9=\"2\", Abc_D=\"3\"}"},
      {"{a=\"x\",a!=\"y\"}", "{a=\"x\", a!=\"y\"}"},  // same label twice: both apply
      {"{a=\"q\\\"q \\\\ n\\n t\\t r\\r\"}", "{a=\"q\\\"q \\\\ n\\n t\\t r\\r\"}"},
      {"{a=\"tab\tinside\"}", "{a=\"tab\\tinside\"}"},
      {"{a=\"ünïcødé\"}", "{a=\"ünïcødé\"}"},
      {"{a=~\"py\\\\.\\\\d+\"}", "{a=~\"py\\\\.\\\\d+\"}"},
      {"{a=\"}\",b=\",\"}", "{a=\"}\", b=\",\"}"},
      {"{a=\"=~!\"}", "{a=\"=~!\"}"},
  };
  for (const auto& c : cases) {
    const Selector s = MustParse(c.text);
    EXPECT_EQ(s.ToString(), c.canonical) << c.text;
    // Round trip: the canonical form parses back to an equal selector and prints the same.
    const Selector again = MustParse(s.ToString());
    EXPECT_EQ(again, s) << c.text;
    EXPECT_EQ(again.ToString(), c.canonical);
  }
}

TEST(SelectorTest, RejectsWithColumn) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"node=\"a\"", "selector: column 1: expected '{', found 'n' (no metric name goes before '{'"},
      {"cpu{node=\"a\"}", "column 1: expected '{', found 'c'"},
      {"}", "column 1: expected '{', found '}'"},
      {"{", "column 2: expected a label name, found end of input"},
      {"{node}", "column 6: expected '=', '!=', '=~' or '!~' after label name 'node', found '}'"},
      {"{node", "column 6: expected '=', '!=', '=~' or '!~' after label name 'node', found end of input"},
      {"{node=a}", "column 7: expected a double-quoted value, found 'a'"},
      {"{node='a'}", "column 7: expected a double-quoted value, found '''"},
      {"{node=`a`}", "column 7: expected a double-quoted value, found '`'"},
      {"{node=", "column 7: expected a double-quoted value, found end of input"},
      {"{node=\"a\"", "column 10: expected ',' or '}' after a matcher, found end of input"},
      {"{node=\"a}", "column 7: quoted value is not closed"},
      {"{node=\"a\\\"}", "column 7: quoted value is not closed"},
      {"{node=\"a\\", "column 7: quoted value is not closed"},
      {"{node=\"a\" comm=\"b\"}", "column 11: expected ',' or '}' after a matcher, found 'c'"},
      {"{node=\"a\";comm=\"b\"}", "column 10: expected ',' or '}' after a matcher, found ';'"},
      {"{,}", "column 2: expected a label name, found ','"},
      {"{node=\"a\",,}", "column 11: expected a label name, found ','"},
      {"{9a=\"x\"}", "column 2: expected a label name, found '9'"},
      {"{\"a\"=\"x\"}", "column 2: expected a label name, found '\"'"},
      {"{a-b=\"x\"}", "column 3: expected '=', '!=', '=~' or '!~' after label name 'a', found '-'"},
      {"{a!\"x\"}", "column 4: expected '=' or '~' after '!', found '\"'"},
      {"{a==\"x\"}", "column 4: expected a double-quoted value, found '='"},
      {"{a~\"x\"}", "column 3: expected '=', '!=', '=~' or '!~' after label name 'a', found '~'"},
      {"{a=~\"(\"}", "column 5: label 'a': regular expression \"(\" is invalid"},
      {"{a=~\"(a)\\\\1\"}", "column 5: label 'a': regular expression"},
      {"{a=\"x\\.y\"}", "column 6: unknown escape '\\.'"},
      {"{a=\"x\\u00e9\"}", "column 6: unknown escape '\\u'"},
      {"{a=\"x\ny\"}", "column 6: newline inside a quoted value"},
      {"{a=\"x\"} junk", "column 9: expected nothing after the closing '}', found 'j'"},
      {"{a=\"x\"}}", "column 8: expected nothing after the closing '}', found '}'"},
      {"{a=\"x\"}{b=\"y\"}", "column 8: expected nothing after the closing '}', found '{'"},
      {"{\xc3\xa9=\"x\"}", "column 2: expected a label name, found byte 0xc3"},
      {"{a=\"x\"\x01}", "column 7: expected ',' or '}' after a matcher, found byte 0x01"},
  };
  for (const auto& c : cases) {
    StatusOr<Selector> s = Selector::Parse(c.text);
    ASSERT_FALSE(s.ok()) << c.text << " parsed as " << s->ToString();
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(s.status().message().find(c.message), std::string::npos) << c.text << "\n  got: " << s.status().message();
  }
}

TEST(SelectorTest, LimitsMatchersAndSize) {
  std::string text = "{";
  for (size_t i = 0; i < kMaxSelectorMatchers; ++i) text += "l" + std::to_string(i) + "=\"v\",";
  EXPECT_EQ(MustParse(text + "}").matchers().size(), kMaxSelectorMatchers);
  StatusOr<Selector> too_many = Selector::Parse(text + "x=\"v\"}");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("more than 32 matchers"), std::string::npos);

  const std::string big = "{a=\"" + std::string(kMaxSelectorBytes, 'x') + "\"}";
  StatusOr<Selector> too_big = Selector::Parse(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("the limit is 65536"), std::string::npos);
  EXPECT_TRUE(Selector::Parse("{a=\"" + std::string(kMaxSelectorBytes - 6, 'x') + "\"}").ok());
}

TEST(SelectorTest, MatchesLabelSets) {
  const Selector s = MustParse("{node=\"a\", comm=~\"python.*\", pod!~\"canary-.*\"}");
  const struct {
    Selector::LabelList labels;
    bool want;
  } cases[] = {
      {{{"node", "a"}, {"comm", "python3"}}, true},                        // missing pod reads as ""
      {{{"node", "a"}, {"comm", "python3"}, {"pod", "web-1"}}, true},
      {{{"node", "a"}, {"comm", "python3"}, {"pod", "canary-1"}}, false},
      {{{"node", "b"}, {"comm", "python3"}}, false},
      {{{"node", "a"}, {"comm", "cpython"}}, false},                       // anchored
      {{{"comm", "python"}, {"node", "a"}}, true},                         // order does not matter
      {{{"comm", "python"}}, false},
      {{}, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(s.Matches(c.labels), c.want) << testing::PrintToString(c.labels);
  }

  // The lookup form: a store hands out views into its own label storage.
  const Selector::LabelLookup lookup = [](std::string_view name) -> std::string_view {
    if (name == "node") return "a";
    if (name == "comm") return "python3.12";
    return "";
  };
  EXPECT_TRUE(s.Matches(lookup));
  EXPECT_FALSE(MustParse("{node=\"b\"}").Matches(lookup));

  const Selector everything = MustParse("");
  EXPECT_TRUE(everything.selects_everything());
  EXPECT_TRUE(everything.Matches(Selector::LabelList{}));
  EXPECT_TRUE(Selector().Matches(lookup));
  EXPECT_TRUE(MustParse("{node=\"\"}").Matches(Selector::LabelList{{"comm", "x"}}));
  EXPECT_FALSE(MustParse("{node!=\"\"}").Matches(Selector::LabelList{{"comm", "x"}}));
}

TEST(SelectorTest, ExposesMatchersForIndexPushdown) {
  const Selector s = MustParse("{node=\"a\", comm=~\"py.*\", pod!=\"x\", gpu=\"\"}");
  ASSERT_EQ(s.matchers().size(), 4u);
  std::vector<std::string> indexable;
  for (const LabelMatcher& m : s.matchers()) {
    if (m.op() == MatchOp::kEqual && !m.matches_empty()) indexable.push_back(m.name() + "=" + m.value());
  }
  EXPECT_EQ(indexable, std::vector<std::string>{"node=a"});
  EXPECT_EQ(s.matchers()[1].op(), MatchOp::kRegexMatch);
  EXPECT_EQ(s.matchers()[1].value(), "py.*");
  EXPECT_EQ(s.matchers()[2].op(), MatchOp::kNotEqual);
  EXPECT_FALSE(s.selects_everything());
}

TEST(SelectorTest, BuiltFromMatchers) {
  StatusOr<LabelMatcher> tenant = LabelMatcher::Create("tenant", MatchOp::kEqual, "t1");
  ASSERT_TRUE(tenant.ok());
  std::vector<LabelMatcher> matchers = MustParse("{node=\"a\"}").matchers();
  matchers.push_back(*tenant);
  const Selector s(std::move(matchers));
  EXPECT_EQ(s.ToString(), "{node=\"a\", tenant=\"t1\"}");
  EXPECT_EQ(MustParse(s.ToString()), s);
}

// A regex runs once per distinct value, and the same answers come out as Matches.
TEST(SelectorEvaluationTest, RunsEachRegexOncePerDistinctValue) {
  auto sel = Selector::Parse(R"({comm=~"py.*", node!="b"})");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  SelectorEvaluation eval(*sel);
  const char* comms[] = {"python3", "bash", "pypy"};
  const char* nodes[] = {"a", "b"};
  for (int i = 0; i < 3000; ++i) {
    Selector::LabelList labels = {{"comm", comms[i % 3]}, {"node", nodes[i % 2]}, {"pid", std::to_string(i)}};
    StatusOr<bool> got = eval.Matches(labels);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, sel->Matches(labels)) << i;
  }
  const uint64_t per_byte = sel->matchers()[0].match_cost_per_byte();
  EXPECT_EQ(eval.regex_work(), (8 + 5 + 5) * per_byte);  // "python3", "bash", "pypy", each once
  // A missing label reads as "".
  StatusOr<bool> none = eval.Matches({{"node", "a"}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

// A selector that parses but costs series x bytes x states (2000 states
// against distinct 4 KB values) stops at the budget instead of running for
// minutes.
TEST(SelectorEvaluationTest, RegexWorkIsBounded) {
  auto sel = Selector::Parse(R"({comm=~"(.*){1,2000}"})");
  ASSERT_TRUE(sel.ok()) << sel.status().ToString();
  SelectorEvaluation eval(*sel);
  Status failure;
  int matched = 0;
  for (int i = 0; i < 1500 && failure.ok(); ++i) {
    StatusOr<bool> got = eval.Matches({{"comm", std::to_string(i) + std::string(4096, 'x')}});
    if (!got.ok()) {
      failure = got.status();
    } else {
      matched += *got;
    }
  }
  ASSERT_FALSE(failure.ok()) << "1500 values of 4 KB against 2000 states ran to the end";
  EXPECT_EQ(failure.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failure.message().find("selector too expensive"), std::string::npos) << failure.message();
  EXPECT_LE(eval.regex_work(), SelectorEvaluation::kDefaultRegexBudget + 4097 * 2000);
  EXPECT_GE(matched, 1);
}

}  // namespace
}  // namespace warpscope
