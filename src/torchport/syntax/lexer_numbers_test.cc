// Numeric literals: every valid form is one Number token; invalid forms are worded as CPython.
#include <gtest/gtest.h>

#include <string>

#include "lexer_test_util.h"

namespace torchport::syntax {
namespace {

using testing::kinds;
using testing::lex;
using testing::messages;
using testing::texts;

/// The literal must come out as a single Number token with no diagnostics.
void expect_number(const std::string& literal) {
  const std::string src = literal + "\n";
  EXPECT_EQ(kinds(src), "Number Newline EndMarker") << literal;
  EXPECT_EQ(texts(src), literal + "|\n|") << literal;
  EXPECT_EQ(messages(src), "") << literal;
}

TEST(LexerNumbersTest, Integers) {
  for (const char* n : {"0", "7", "00", "0_0", "123", "1_000_000", "0x1F", "0XdeadBEEF", "0x_1",
                        "0o17", "0O_7", "0b1010", "0B_1_0", "0b0"}) {
    expect_number(n);
  }
}

TEST(LexerNumbersTest, FloatsAndExponents) {
  for (const char* n : {"1.", ".5", "1.5", "1_0.0_1", "1e10", "1E-3", "1e+3", "1.e5", ".5e-1_0",
                        "09.5", "0777.0", "0777e1", "00.0"}) {
    expect_number(n);
  }
}

TEST(LexerNumbersTest, Imaginary) {
  for (const char* n : {"1j", "1J", "1.5j", ".5j", "1e5j", "0j", "0777j", "1_0j"}) expect_number(n);
}

TEST(LexerNumbersTest, AttributeOfIntegerNeedsSpaceOrParens) {
  EXPECT_EQ(texts("1 .real\n"), "1|.|real|\n|");
  EXPECT_EQ(texts("1..real\n"), "1.|.|real|\n|");
}

TEST(LexerNumbersTest, UnderscoreErrors) {
  EXPECT_EQ(messages("1__0\n"), "invalid decimal literal");
  EXPECT_EQ(messages("1_\n"), "invalid decimal literal");
  EXPECT_EQ(messages("1.0_\n"), "invalid decimal literal");
  EXPECT_EQ(messages("1e1_\n"), "invalid decimal literal");
  EXPECT_EQ(messages("0x1_\n"), "invalid hexadecimal literal");
  EXPECT_EQ(messages("0o1__2\n"), "invalid octal literal");
  // The bad literal becomes one Error token, not a Number.
  EXPECT_EQ(kinds("1__0\n"), "Error Newline EndMarker");
}

TEST(LexerNumbersTest, PrefixWithoutDigits) {
  EXPECT_EQ(messages("0x\n"), "invalid hexadecimal literal");
  EXPECT_EQ(messages("0o\n"), "invalid octal literal");
  EXPECT_EQ(messages("0b\n"), "invalid binary literal");
}

TEST(LexerNumbersTest, DigitsOutOfRange) {
  EXPECT_EQ(messages("0o8\n"), "invalid digit '8' in octal literal");
  EXPECT_EQ(messages("0o18\n"), "invalid digit '8' in octal literal");
  EXPECT_EQ(messages("0b12\n"), "invalid digit '2' in binary literal");
}

TEST(LexerNumbersTest, LeadingZeros) {
  EXPECT_EQ(messages("0777\n"),
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for "
            "octal integers");
  EXPECT_EQ(messages("09\n"),
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for "
            "octal integers");
}

TEST(LexerNumbersTest, ExponentWithoutDigits) {
  EXPECT_EQ(messages("1e+\n"), "invalid decimal literal");
  EXPECT_EQ(messages("1e\n"), "invalid decimal literal");
  EXPECT_EQ(messages("1.5E-x\n"), "invalid decimal literal");
}

TEST(LexerNumbersTest, IdentifierGluedToNumberIsAnError) {
  EXPECT_EQ(messages("1abc\n"), "invalid decimal literal");
  EXPECT_EQ(texts("1abc\n"), "1|abc|\n|");  // as CPython's tokenize splits it
  EXPECT_EQ(messages("0x1g\n"), "invalid hexadecimal literal");
  EXPECT_EQ(messages("1jx\n"), "invalid imaginary literal");
  EXPECT_EQ(messages("1.__class__\n"), "invalid decimal literal");
  EXPECT_EQ(messages("1andy\n"), "invalid decimal literal");
}

TEST(LexerNumbersTest, KeywordGluedToNumberIsOnlyAWarning) {
  const std::string src = "x = 1if y else 2\n";
  EXPECT_EQ(kinds(src), "Name Equal Number KwIf Name KwElse Number Newline EndMarker");
  const LexResult r = lex(src);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].severity, text::Severity::Warning);
  EXPECT_EQ(r.diagnostics[0].message, "invalid decimal literal");
  EXPECT_EQ(r.diagnostics[0].offset, 5u);
  // `1else`: the 'e' is not an exponent.
  EXPECT_EQ(texts("1else\n"), "1|else|\n|");
  EXPECT_EQ(texts("[0x1for x in y]\n"), "[|0x1f|or|x|in|y|]|\n|");
  EXPECT_EQ(texts("1or 2\n"), "1|or|2|\n|");
  EXPECT_EQ(texts("1in x\n"), "1|in|x|\n|");
  EXPECT_EQ(texts("1not in x\n"), "1|not|in|x|\n|");
}

}  // namespace
}  // namespace torchport::syntax
