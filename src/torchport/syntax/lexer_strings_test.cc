// Plain string literals: prefixes, quotes, escapes, and unterminated strings.
#include <gtest/gtest.h>

#include <string>

#include "lexer_test_util.h"

namespace torchport::syntax {
namespace {

using testing::kinds;
using testing::lex;
using testing::messages;
using testing::texts;

void expect_string(const std::string& literal) {
  const std::string src = "x = " + literal + "\n";
  EXPECT_EQ(kinds(src), "Name Equal String Newline EndMarker") << literal;
  EXPECT_EQ(texts(src), "x|=|" + literal + "|\n|") << literal;
  EXPECT_EQ(messages(src), "") << literal;
}

TEST(LexerStringsTest, EveryNonFormattedPrefixInAnyCase) {
  for (const char* p :
       {"", "r", "u", "b", "br", "rb", "R", "U", "B", "Br", "bR", "RB", "Rb", "rB"}) {
    expect_string(std::string(p) + "'a'");
    expect_string(std::string(p) + "\"a\"");
    expect_string(std::string(p) + "'''a'''");
    expect_string(std::string(p) + "\"\"\"a\"\"\"");
  }
}

TEST(LexerStringsTest, Flags) {
  // lex() checks every String token's flags against its text; these spell the answers out.
  auto flags = [](const std::string& literal) {
    const LexResult r = lex("x = " + literal + "\n");
    EXPECT_EQ(r.tokens[4].kind, TokenKind::String) << literal;
    return static_cast<int>(r.tokens[4].flags);
  };
  constexpr int bs = kTokenHasBackslash, triple = kTokenTripleQuoted, bytes = kTokenBytes;
  constexpr int one = 1 << kTokenPrefixShift, two = 2 << kTokenPrefixShift;
  EXPECT_EQ(flags("'abc'"), 0);
  EXPECT_EQ(flags("'a\\nb'"), bs);
  EXPECT_EQ(flags("r'a\\b'"), one | bs);
  EXPECT_EQ(flags("'''a\nb'''"), triple);
  EXPECT_EQ(flags("'''a\\\nb'''"), triple | bs);
  EXPECT_EQ(flags("\"\"\"doc \\\"\"\" x\"\"\""), triple | bs);
  EXPECT_EQ(flags("b''"), one | bytes);
  EXPECT_EQ(flags("Rb'\\x'"), two | bytes | bs);
  EXPECT_EQ(flags("u'x'"), one);
  EXPECT_EQ(flags("''''''"), triple);
  EXPECT_EQ(flags("''"), 0);
}

TEST(LexerStringsTest, InvalidPrefixesAreNames) {
  EXPECT_EQ(kinds("ur'a'\n"), "Name String Newline EndMarker");
  EXPECT_EQ(kinds("bu'a'\n"), "Name String Newline EndMarker");
  EXPECT_EQ(kinds("rr'a'\n"), "Name String Newline EndMarker");
  EXPECT_EQ(kinds("bf'a'\n"), "Name String Newline EndMarker");
  EXPECT_EQ(kinds("abc'a'\n"), "Name String Newline EndMarker");
}

TEST(LexerStringsTest, Escapes) {
  expect_string(R"('it\'s')");
  expect_string(R"("say \"hi\"")");
  expect_string(R"('back\\')");
  expect_string(R"(r'\'')");  // a raw string still cannot end on an escaped quote
  expect_string(R"(r'\\')");
  expect_string(R"('\N{EM DASH} \x41 \u00e9')");
  expect_string("'''it''s \"\"\" ''\\''''");
}

TEST(LexerStringsTest, BackslashNewlineContinuesASingleQuotedString) {
  expect_string("'abc\\\ndef'");
  expect_string("'abc\\\r\ndef'");
}

TEST(LexerStringsTest, TripleQuotedSpansLines) {
  const std::string src = "x = '''a\nb\r\nc\rd'''\ny\n";
  EXPECT_EQ(kinds(src), "Name Equal String Newline Name Newline EndMarker");
  EXPECT_EQ(messages(src), "");
}

TEST(LexerStringsTest, QuotesOfTheOtherKindInside) {
  expect_string("\"it's\"");
  expect_string("'say \"x\"'");
  expect_string("\"\"\"a ' '' \" \"\" b\"\"\"");
}

TEST(LexerStringsTest, AdjacentStringsAreSeparateTokens) {
  EXPECT_EQ(texts("'a' \"b\" rb'c'\n"), "'a'|\"b\"|rb'c'|\n|");
}

TEST(LexerStringsTest, UnterminatedSingleQuoted) {
  EXPECT_EQ(messages("x = 'abc\n"), "unterminated string literal (detected at line 1)");
  EXPECT_EQ(kinds("x = 'abc\ny\n"), "Name Equal Error Newline Name Newline EndMarker");
  // The Error token stops before the line break; the next line lexes normally.
  EXPECT_EQ(texts("x = 'abc\ny\n"), "x|=|'abc|\n|y|\n|");
  EXPECT_EQ(messages("x = 'ab\\\ncd\n"), "unterminated string literal (detected at line 2)");
  EXPECT_EQ(messages("\n\nx = \"abc"), "unterminated string literal (detected at line 3)");
  const LexResult r = lex("x = 'abc\n");
  EXPECT_EQ(r.diagnostics[0].offset, 4u);
}

TEST(LexerStringsTest, UnterminatedTripleQuoted) {
  EXPECT_EQ(messages("x = '''abc\n"),
            "unterminated triple-quoted string literal (detected at line 1)");
  EXPECT_EQ(messages("x = '''abc\ndef"),
            "unterminated triple-quoted string literal (detected at line 2)");
  EXPECT_EQ(messages("x = \"\"\"a\n\nb\n\n"),
            "unterminated triple-quoted string literal (detected at line 4)");
  EXPECT_EQ(kinds("x = '''abc\ndef"), "Name Equal Error Newline EndMarker");
}

TEST(LexerStringsTest, StringPrefixFollowedByNonQuoteIsAName) {
  EXPECT_EQ(kinds("rb = b + f\n"), "Name Equal Name Plus Name Newline EndMarker");
}

}  // namespace
}  // namespace torchport::syntax
