#include "query/json_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace warpscope::query {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

// The reference parser must accept it (it rejects invalid UTF-8) and read back `want`.
void ExpectParsesTo(std::string_view text, const std::string& want) {
  const std::string json = Quoted(text);
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(parsed.is_discarded()) << json;
  EXPECT_EQ(parsed.get<std::string>(), want) << json;
}

TEST(JsonTextTest, PlainTextIsCopied) {
  EXPECT_EQ(Quoted(""), "\"\"");
  EXPECT_EQ(Quoted("std::vector<int>::push_back(int&&)"), "\"std::vector<int>::push_back(int&&)\"");
}

TEST(JsonTextTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Quoted("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(Quoted("\n\t\r\b\f"), R"("\n\t\r\b\f")");
  EXPECT_EQ(Quoted(std::string_view("\x00\x01\x1f", 3)), R"("\u0000\u0001\u001f")");
  EXPECT_EQ(Quoted("\x7f"), "\"\x7f\"");  // DEL is allowed in JSON strings
  ExpectParsesTo(std::string_view("x\0y\"\\\n", 6), std::string("x\0y\"\\\n", 6));
}

TEST(JsonTextTest, KeepsWellFormedUtf8) {
  const std::string text = "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \xEF\xBF\xBF \xF4\x8F\xBF\xBF";
  EXPECT_EQ(Quoted(text), "\"" + text + "\"");
  ExpectParsesTo(text, text);
}

TEST(JsonTextTest, ReplacesEachInvalidByteWithReplacementCharacter) {
  const std::string fffd = "\xEF\xBF\xBD";
  struct Case {
    std::string in;
    std::string want;
  };
  const Case cases[] = {
      {"a\xFF" "b", "a" + fffd + "b"},
      {"\x80", fffd},                                  // lone continuation byte
      {"\xE4\xB8", fffd + fffd},                       // truncated at the end
      {"\xE4\xB8z", fffd + fffd + "z"},                // truncated before ASCII
      {"\xC0\xAF", fffd + fffd},                       // overlong '/'
      {"\xE0\x80\xAF", fffd + fffd + fffd},            // overlong
      {"\xED\xA0\x80", fffd + fffd + fffd},            // UTF-16 surrogate
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"\xF5", fffd},
      {"\"\xFF\\", "\"" + fffd + "\\"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Quoted(c.want));
    ExpectParsesTo(c.in, c.want);
  }
}

TEST(JsonTextTest, EveryByteStringGivesValidJson) {
  // All pairs of bytes: the reference parser must accept every output.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 7) {
      const char text[] = {static_cast<char>(a), static_cast<char>(b), '\xE2', static_cast<char>(a)};
      const std::string json = Quoted(std::string_view(text, sizeof(text)));
      ASSERT_FALSE(nlohmann::json::parse(json, nullptr, false).is_discarded()) << a << " " << b;
    }
  }
}

TEST(JsonTextTest, Integers) {
  std::string out;
  AppendJsonInt(0, &out);
  out.push_back(' ');
  AppendJsonInt(-1, &out);
  out.push_back(' ');
  AppendJsonInt(std::numeric_limits<int64_t>::max(), &out);
  out.push_back(' ');
  AppendJsonInt(std::numeric_limits<int64_t>::min(), &out);
  EXPECT_EQ(out, "0 -1 9223372036854775807 -9223372036854775808");
}

}  // namespace
}  // namespace warpscope::query
