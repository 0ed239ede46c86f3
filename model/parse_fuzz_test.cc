// Random and mutated inputs for every parser in query/: each call must return a value or
// an InvalidArgument error, never crash, hang or throw. Seeds are fixed so a failure
// reproduces; raise kRounds locally for a longer soak.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "model/label_matcher.h"
#include "model/selector.h"
#include "model/time_range.h"

namespace warpscope {
namespace {

constexpr int kRounds = 20000;
constexpr int64_t kNow = 1'795'953'600'000'000'000;

std::string RandomString(std::mt19937& rng, std::string_view alphabet, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string out(len(rng), ' ');
  for (char& c : out) c = alphabet[pick(rng)];
  return out;
}

// Insert, delete or replace a few bytes of a valid input: reaches deeper than noise.
std::string Mutate(std::mt19937& rng, std::string s, std::string_view alphabet) {
  std::uniform_int_distribution<int> edits(1, 4);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  for (int e = edits(rng); e > 0; --e) {
    const size_t at = s.empty() ? 0 : std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
    switch (rng() % 3) {
      case 0: s.insert(s.begin() + at, alphabet[pick(rng)]); break;
      case 1: if (!s.empty()) s.erase(at, 1); break;
      default: if (!s.empty()) s[at] = alphabet[pick(rng)]; break;
    }
  }
  return s;
}

void CheckSelector(const std::string& text) {
  StatusOr<Selector> s = Selector::Parse(text);
  if (!s.ok()) {
    ASSERT_EQ(s.status().code(), StatusCode::kInvalidArgument) << text;
    ASSERT_EQ(s.status().message().rfind("selector: ", 0), 0u) << text << ": " << s.status().message();
    return;
  }
  // Whatever parses must print back to something that parses to the same selector,
  // and must be able to match.
  StatusOr<Selector> again = Selector::Parse(s->ToString());
  ASSERT_TRUE(again.ok()) << text << " -> " << s->ToString() << ": " << again.status().ToString();
  ASSERT_EQ(*again, *s) << text;
  (void)s->Matches(Selector::LabelList{{"a", "python"}, {"node", ""}, {"comm", "x\ny"}});
}

TEST(ParseFuzzTest, SelectorNoise) {
  std::mt19937 rng(1);
  const std::string_view alphabet = "{}=!~\",\\ \t\nabn_09.*()[]+?|^${}'`;\x01\xc3";
  // Half start with '{' so the noise gets past the first column.
  for (int i = 0; i < kRounds; ++i) CheckSelector((i % 2 ? "{" : "") + RandomString(rng, alphabet, 40));
}

TEST(ParseFuzzTest, SelectorMutations) {
  std::mt19937 rng(2);
  const std::vector<std::string> seeds = {
      "{node=\"a\", comm=~\"python.*\"}", "{a!=\"\",b!~\"x|y\",}", "{a=\"q\\\"q\\\\\\n\"}",
      "{ pod =~ \"[a-z]{1,3}(-[0-9]+)?\" }", "{}", "{a=~\"(?i)x{2,5}\"}",
  };
  const std::string_view alphabet = "{}=!~\",\\ abz_9.*()[]{}+?|,\n";
  for (int i = 0; i < kRounds; ++i) CheckSelector(Mutate(rng, seeds[i % seeds.size()], alphabet));
}

TEST(ParseFuzzTest, RegexPatterns) {
  std::mt19937 rng(3);
  const std::string_view alphabet = "ab.()[]{}*+?|^$\\,0123456789-:=!<dws";
  const std::string values[] = {"", "a", "ab", std::string(200, 'a'), "ba{}"};
  for (int i = 0; i < kRounds; ++i) {
    const std::string pattern = RandomString(rng, alphabet, 24);
    StatusOr<LabelMatcher> m = LabelMatcher::Create("a", MatchOp::kRegexMatch, pattern);
    if (!m.ok()) {
      ASSERT_EQ(m.status().code(), StatusCode::kInvalidArgument) << pattern;
      continue;
    }
    for (const std::string& v : values) (void)m->Matches(v);
  }
}

TEST(ParseFuzzTest, TimesNoiseAndMutations) {
  std::mt19937 rng(4);
  const std::string_view alphabet = "now+-0123456789msdhwT:Zz. ";
  const std::vector<std::string> seeds = {"now-1h30m", "2026-11-29T14:00:00.25+02:00", "1764417600000",
                                          "now+10s", "2100-02-28T23:59:59Z"};
  for (int i = 0; i < kRounds; ++i) {
    const std::string text = i % 2 ? RandomString(rng, alphabet, 32) : Mutate(rng, seeds[i % seeds.size()], alphabet);
    StatusOr<int64_t> t = ParseQueryTime(text, kNow);
    if (t.ok()) {
      ASSERT_GE(*t, 0) << text;
    } else {
      ASSERT_EQ(t.status().code(), StatusCode::kInvalidArgument) << text;
    }
    StatusOr<TimeRange> range = ParseTimeRange(text, "now", kNow);
    if (range.ok()) {
      ASSERT_LT(range->from_unix_ns, range->to_unix_ns) << text;
      ASSERT_LE(range->span_ns(), kDefaultMaxQuerySpanNs) << text;
      ASSERT_GE(ChooseStep(*range), kNanosPerSecond);
    }
  }
}

}  // namespace
}  // namespace warpscope
