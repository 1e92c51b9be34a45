#include "core/json.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace lockstep {
namespace {

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString(""), R"("")");
  EXPECT_EQ(JsonString("cats"), R"("cats")");
  EXPECT_EQ(JsonString(R"(say "hi" \ bye)"), R"("say \"hi\" \\ bye")");
  EXPECT_EQ(JsonString("two\nlines\ttab\r\x01\x1f"),
            R"("two\u000alines\u0009tab\u000d\u0001\u001f")");
  EXPECT_EQ(JsonString(std::string("nul\0byte", 8)), R"("nul\u0000byte")");
  EXPECT_EQ(JsonString("del\x7f/slash"), "\"del\x7f/slash\"");  // JSON escapes neither
}

TEST(JsonStringTest, KeepsUtf8AndReplacesBytesThatAreNot) {
  const std::string utf8 = "caf\xc3\xa9 \xe2\x88\x91 \xf0\x9f\x98\x80";  // café ∑ 😀
  EXPECT_EQ(JsonString(utf8), absl::StrCat("\"", utf8, "\""));
  EXPECT_EQ(JsonString("latin1 caf\xe9"), R"("latin1 caf\ufffd")");
  EXPECT_EQ(JsonString("\x80"), R"("\ufffd")");                                // lone continuation
  EXPECT_EQ(JsonString("\xc0\xaf"), R"("\ufffd\ufffd")");                      // overlong '/'
  EXPECT_EQ(JsonString("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");            // a surrogate
  EXPECT_EQ(JsonString("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // past U+10FFFF
  EXPECT_EQ(JsonString("end\xe2\x82"), R"("end\ufffd\ufffd")");                // cut short
  EXPECT_EQ(JsonString("\xe2\x82\""), R"("\ufffd\ufffd\"")");  // cut short by a quote
}

}  // namespace
}  // namespace lockstep
