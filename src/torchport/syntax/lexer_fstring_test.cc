// f-strings (PEP 701) and t-strings (PEP 750): start/middle/end tokens, replacement fields,
// conversions, format specs, nesting, and errors.
#include <gtest/gtest.h>

#include <string>

#include "lexer_test_util.h"

namespace torchport::syntax {
namespace {

using testing::kinds;
using testing::lex;
using testing::messages;
using testing::texts;

TEST(LexerFStringTest, PlainFString) {
  EXPECT_EQ(kinds("f'abc'\n"), "FStringStart FStringMiddle FStringEnd Newline EndMarker");
  EXPECT_EQ(texts("f'abc'\n"), "f'|abc|'|\n|");
  EXPECT_EQ(kinds("f''\n"), "FStringStart FStringEnd Newline EndMarker");
}

TEST(LexerFStringTest, EveryPrefixInAnyCase) {
  for (const char* p : {"f", "F", "fr", "rf", "Fr", "fR", "RF", "rF"}) {
    const std::string src = std::string(p) + "'x'\n";
    EXPECT_EQ(kinds(src), "FStringStart FStringMiddle FStringEnd Newline EndMarker") << p;
    EXPECT_EQ(texts(src), std::string(p) + "'|x|'|\n|") << p;
  }
  for (const char* p : {"t", "T", "tr", "rt", "Tr", "tR", "RT"}) {
    const std::string src = std::string(p) + "\"x\"\n";
    EXPECT_EQ(kinds(src), "TStringStart TStringMiddle TStringEnd Newline EndMarker") << p;
  }
}

TEST(LexerFStringTest, ReplacementField) {
  EXPECT_EQ(texts("f'a{b}c'\n"), "f'|a|{|b|}|c|'|\n|");
  EXPECT_EQ(kinds("f'a{b}c'\n"),
            "FStringStart FStringMiddle LBrace Name RBrace FStringMiddle FStringEnd Newline "
            "EndMarker");
  EXPECT_EQ(kinds("t'{x}'\n"), "TStringStart LBrace Name RBrace TStringEnd Newline EndMarker");
}

TEST(LexerFStringTest, DoubledBracesStayInTheMiddle) {
  EXPECT_EQ(texts("f'a{{b}}c'\n"), "f'|a{{b}}c|'|\n|");
  EXPECT_EQ(texts("f'{{{x}}}'\n"), "f'|{{|{|x|}|}}|'|\n|");
  EXPECT_EQ(messages("f'{{{x}}}'\n"), "");
}

TEST(LexerFStringTest, ConversionsAndSelfDocumenting) {
  EXPECT_EQ(kinds("f'{x!r}'\n"),
            "FStringStart LBrace Name Exclamation Name RBrace FStringEnd Newline EndMarker");
  EXPECT_EQ(texts("f'{x=!r:>10}'\n"), "f'|{|x|=|!|r|:|>10|}|'|\n|");
  EXPECT_EQ(texts("f'{x = }'\n"), "f'|{|x|=|}|'|\n|");
  // `!=` inside a field is still the operator.
  EXPECT_EQ(texts("f'{a!=b}'\n"), "f'|{|a|!=|b|}|'|\n|");
}

TEST(LexerFStringTest, FormatSpecWithNestedFields) {
  EXPECT_EQ(texts("f'{x:>{w}.{p}f}'\n"), "f'|{|x|:|>|{|w|}|.|{|p|}|f|}|'|\n|");
  EXPECT_EQ(
      kinds("f'{x:{w}}'\n"),
      "FStringStart LBrace Name Colon LBrace Name RBrace RBrace FStringEnd Newline EndMarker");
  EXPECT_EQ(messages("f'{x:>{w}.{p}f}'\n"), "");
}

TEST(LexerFStringTest, ColonInsideBracketsIsNotAFormatSpec) {
  EXPECT_EQ(texts("f'{d[1:2]}'\n"), "f'|{|d|[|1|:|2|]|}|'|\n|");
  EXPECT_EQ(texts("f'{(lambda x: x)(1)}'\n"), "f'|{|(|lambda|x|:|x|)|(|1|)|}|'|\n|");
  EXPECT_EQ(texts("f'{(y:=1)}'\n"), "f'|{|(|y|:=|1|)|}|'|\n|");
  // At the field's own level `:=` starts a format spec "=1", as in CPython.
  EXPECT_EQ(texts("f'{y:=1}'\n"), "f'|{|y|:|=1|}|'|\n|");
  EXPECT_EQ(texts("f'{ {1: 2}[1] }'\n"), "f'|{|{|1|:|2|}|[|1|]|}|'|\n|");
}

TEST(LexerFStringTest, NestedStringsOfTheSameQuote) {
  // Python 3.12+: the inner string may reuse the outer quote.
  EXPECT_EQ(texts("f\"{\"a\"}\"\n"), "f\"|{|\"a\"|}|\"|\n|");
  EXPECT_EQ(texts("f'{f'{x}'}'\n"), "f'|{|f'|{|x|}|'|}|'|\n|");
  EXPECT_EQ(kinds("f'{f'{f'{x}'}'}'\n"),
            "FStringStart LBrace FStringStart LBrace FStringStart LBrace Name RBrace FStringEnd "
            "RBrace FStringEnd RBrace FStringEnd Newline EndMarker");
  EXPECT_EQ(messages("f'{f'{f'{x}'}'}'\n"), "");
}

TEST(LexerFStringTest, EscapesInMiddles) {
  EXPECT_EQ(texts("f'\\N{DASH} {x}'\n"), "f'|\\N{DASH} |{|x|}|'|\n|");
  EXPECT_EQ(texts("f'\\'{x}'\n"), "f'|\\'|{|x|}|'|\n|");
  // A backslash before a brace does not escape it.
  EXPECT_EQ(texts("f'\\{x}'\n"), "f'|\\|{|x|}|'|\n|");
  EXPECT_EQ(texts("rf'\\{x}'\n"), "rf'|\\|{|x|}|'|\n|");
  // In a raw f-string \N is not an escape: {DASH} is a field.
  EXPECT_EQ(texts("rf'\\N{DASH}'\n"), "rf'|\\N|{|DASH|}|'|\n|");
}

TEST(LexerFStringTest, BackslashInsideTheExpression) {
  // Allowed since Python 3.12.
  EXPECT_EQ(texts("f'{\"\\n\".join(x)}'\n"), "f'|{|\"\\n\"|.|join|(|x|)|}|'|\n|");
}

TEST(LexerFStringTest, MultiLineTripleQuoted) {
  const std::string src = "x = f'''a\n{b\n + c}\nd'''\ny\n";
  EXPECT_EQ(kinds(src),
            "Name Equal FStringStart FStringMiddle LBrace Name Plus Name RBrace FStringMiddle "
            "FStringEnd Newline Name Newline EndMarker");
  EXPECT_EQ(texts(src), "x|=|f'''|a\n|{|b|+|c|}|\nd|'''|\n|y|\n|");
  EXPECT_EQ(messages(src), "");
}

TEST(LexerFStringTest, CommentsInMultiLineFields) {
  const std::string src = "f'''{\n  x  # the value\n}'''\n";
  EXPECT_EQ(testing::all_kinds(src),
            "FStringStart LBrace NonLogicalNewline Whitespace Name Whitespace Comment "
            "NonLogicalNewline RBrace FStringEnd Newline EndMarker");
}

TEST(LexerFStringTest, LineBreakInSingleQuotedFieldIsNonLogical) {
  // Python 3.12+ accepts a line break inside the braces of a single-quoted f-string.
  EXPECT_EQ(testing::all_kinds("f\"{1 +\n2}\"\n"),
            "FStringStart LBrace Number Whitespace Plus NonLogicalNewline Number RBrace FStringEnd "
            "Newline EndMarker");
}

TEST(LexerFStringTest, TripleQuotedFStringMayContainSingleQuotes) {
  EXPECT_EQ(texts("f'''it's {x!r}'''\n"), "f'''|it's |{|x|!|r|}|'''|\n|");
  EXPECT_EQ(texts("f\"\"\"a\"b\"\"c\"\"\"\n"), "f\"\"\"|a\"b\"\"c|\"\"\"|\n|");
}

TEST(LexerFStringTest, FStringIndentationAndNewlines) {
  EXPECT_EQ(kinds("if x:\n    f'{y}'\n"),
            "KwIf Name Colon Newline Indent FStringStart LBrace Name RBrace FStringEnd Newline "
            "Dedent EndMarker");
}

TEST(LexerFStringTest, SingleClosingBraceIsAnError) {
  EXPECT_EQ(messages("f'}'\n"), "f-string: single '}' is not allowed");
  EXPECT_EQ(kinds("f'a}b'\n"),
            "FStringStart FStringMiddle Error FStringMiddle FStringEnd Newline EndMarker");
}

TEST(LexerFStringTest, MissingClosingBrace) {
  EXPECT_EQ(messages("f'{x'\n"), "f-string: expecting '}'");
  EXPECT_EQ(kinds("f'{x'\ny\n"),
            "FStringStart LBrace Name FStringEnd Newline Name Newline EndMarker");
  EXPECT_EQ(messages("f'{x:abc'\n"), "f-string: expecting '}'");
}

TEST(LexerFStringTest, Unterminated) {
  EXPECT_EQ(messages("f'abc\n"), "unterminated f-string literal (detected at line 1)");
  EXPECT_EQ(messages("f'{x}\n"), "unterminated f-string literal (detected at line 1)");
  EXPECT_EQ(messages("x = f'''{x}"),
            "unterminated triple-quoted f-string literal (detected at line 1)");
  EXPECT_EQ(messages("t'abc\n"), "unterminated t-string literal (detected at line 1)");
  EXPECT_EQ(messages("x = t'''a\nb"),
            "unterminated triple-quoted t-string literal (detected at line 2)");
  // After an unterminated single-quoted f-string, the next line lexes normally.
  EXPECT_EQ(kinds("f'abc\ny = 1\n"),
            "FStringStart FStringMiddle Newline Name Equal Number Newline EndMarker");
}

TEST(LexerFStringTest, UnterminatedInsideExpressionAtEof) {
  const LexResult r = lex("f'{x");
  ASSERT_FALSE(r.diagnostics.empty());
  EXPECT_EQ(r.diagnostics[0].message, "unterminated f-string literal (detected at line 1)");
}

TEST(LexerFStringTest, MismatchedBracketInsideField) {
  EXPECT_EQ(messages("f'{x(}'\n"),
            "f-string: closing parenthesis '}' does not match opening parenthesis '('");
  EXPECT_EQ(kinds("f'{x(}'\n"),
            "FStringStart LBrace Name LPar RBrace FStringEnd Newline EndMarker");
}

TEST(LexerFStringTest, DeeplyNestedDoesNotCrash) {
  std::string src;
  for (int i = 0; i < 300; ++i) src += "f'{";
  src += "x";
  for (int i = 0; i < 300; ++i) src += "}'";
  src += "\n";
  const LexResult r = lex(src);
  EXPECT_EQ(r.tokens[r.tokens.size() - 2].kind, TokenKind::Newline);
}

}  // namespace
}  // namespace torchport::syntax
