// Indentation: INDENT/DEDENT placement, tabs, form feeds, blank and comment lines, errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lexer_test_util.h"

namespace torchport::syntax {
namespace {

using testing::all_kinds;
using testing::kinds;
using testing::lex;
using testing::messages;

TEST(LexerIndentTest, IndentAndDedentAroundABlock) {
  EXPECT_EQ(kinds("if x:\n    y\nz\n"),
            "KwIf Name Colon Newline Indent Name Newline Dedent Name Newline EndMarker");
}

TEST(LexerIndentTest, IndentIsZeroWidthAfterTheLeadingWhitespace) {
  const std::string src = "if x:\n    y\n";
  const LexResult r = lex(src);
  // if, ' ', x, :, \n, '    ', Indent, y
  ASSERT_GE(r.tokens.size(), 8u);
  EXPECT_EQ(r.tokens[5].kind, TokenKind::Whitespace);
  EXPECT_EQ(r.tokens[5].text(src), "    ");
  EXPECT_EQ(r.tokens[6].kind, TokenKind::Indent);
  EXPECT_EQ(r.tokens[6].begin, 10u);
  EXPECT_EQ(r.tokens[7].kind, TokenKind::Name);
}

TEST(LexerIndentTest, DedentsComeBeforeTheFirstTokenOfTheLine) {
  const std::string src = "if a:\n  if b:\n    c\n  d\ne\n";
  EXPECT_EQ(kinds(src),
            "KwIf Name Colon Newline Indent KwIf Name Colon Newline Indent Name Newline Dedent "
            "Name Newline Dedent Name Newline EndMarker");
  const LexResult r = lex(src);
  for (const Token& t : r.tokens) {
    if (t.kind == TokenKind::Dedent && t.begin != src.size()) {
      EXPECT_TRUE(src[t.begin] == 'd' || src[t.begin] == 'e') << t.begin;
    }
  }
}

TEST(LexerIndentTest, SeveralDedentsAtOnceAndAtEof) {
  EXPECT_EQ(kinds("if a:\n if b:\n  c\nd\n"),
            "KwIf Name Colon Newline Indent KwIf Name Colon Newline Indent Name Newline Dedent "
            "Dedent Name Newline EndMarker");
  EXPECT_EQ(kinds("if a:\n if b:\n  c"),
            "KwIf Name Colon Newline Indent KwIf Name Colon Newline Indent Name Newline Dedent "
            "Dedent EndMarker");
}

TEST(LexerIndentTest, BlankAndCommentLinesDoNotAffectIndentation) {
  EXPECT_EQ(all_kinds("if x:\n  y\n\n# c\n      # d\n  z\n"),
            "KwIf Whitespace Name Colon Newline Whitespace Indent Name Newline NonLogicalNewline "
            "Comment NonLogicalNewline Whitespace Comment NonLogicalNewline Whitespace Name "
            "Newline Dedent EndMarker");
}

TEST(LexerIndentTest, BracketsSuspendIndentation) {
  EXPECT_EQ(kinds("x = [\n        1,\n  2]\ny\n"),
            "Name Equal LSqb Number Comma Number RSqb Newline Name Newline EndMarker");
}

TEST(LexerIndentTest, ContinuationLinesDoNotIndent) {
  EXPECT_EQ(kinds("x = 1 + \\\n        2\ny\n"),
            "Name Equal Number Plus Number Newline Name Newline EndMarker");
  // A line starting with a continuation takes the indentation of its first physical line.
  EXPECT_EQ(kinds("if x:\n  \\\n  y\n"),
            "KwIf Name Colon Newline Indent Name Newline Dedent EndMarker");
}

// lex_line_start() counts spaces sixteen at a time where sixteen bytes remain: every length of
// indentation around that step, compared with the line before (equal, one less, one more), and
// every byte that can end the run, at the end of the text too.
TEST(LexerIndentTest, SpacesAreCountedAtEveryLengthAndEveryEnd) {
  const std::string head = "KwIf Number Colon Newline Indent Name Newline ";
  for (std::size_t n = 1; n <= 40; ++n) {
    const std::string block = "if 1:\n" + std::string(n, ' ') + "a\n";
    for (const std::size_t k : {n - 1, n, n + 1}) {
      const std::string src = block + std::string(k, ' ') + "b\n";
      const std::string want = k == n ? "Name" : k > n ? "Indent Name" : "Dedent Name";
      EXPECT_EQ(kinds(src).substr(head.size(), want.size()), want) << n << " then " << k;
      EXPECT_EQ(messages(src),
                k < n && k > 0 ? "unindent does not match any outer indentation level" : "")
          << n << " then " << k;
    }
    const std::vector<std::string> tails = {"",   "\t", "\f", "#",
                                            "\n", "\r", "x",  "x\n" + std::string(20, ' ')};
    for (const std::string& tail : tails) {
      const std::string src = "x\n" + std::string(n, ' ') + tail;
      const LexResult r = lex(src);
      ASSERT_GE(r.tokens.size(), 3u) << n;
      const bool tab_or_ff = !tail.empty() && (tail[0] == '\t' || tail[0] == '\f');
      EXPECT_EQ(r.tokens[2].kind, TokenKind::Whitespace) << n;
      EXPECT_EQ(r.tokens[2].size(), n + (tab_or_ff ? 1 : 0)) << n << " before '" << tail << "'";
      EXPECT_EQ(r.tokens[3].kind, tail[0] == 'x' ? TokenKind::Indent : r.tokens[3].kind) << n;
    }
  }
}

TEST(LexerIndentTest, TabsCountToTheNextMultipleOfEight) {
  // A tab and eight spaces are the same level (and CPython's tab-size-1 check agrees once the
  // tab is followed by the same characters)... here the levels are consistent: tab everywhere.
  EXPECT_EQ(kinds("if a:\n\tb\n\tc\n"),
            "KwIf Name Colon Newline Indent Name Newline Name Newline Dedent EndMarker");
  EXPECT_EQ(messages("if a:\n\tb\n\tc\n"), "");
  // "  \t" is column 8 with tab size 8: deeper than 2 spaces.
  EXPECT_EQ(kinds("if a:\n  if b:\n  \tc\n"),
            "KwIf Name Colon Newline Indent KwIf Name Colon Newline Indent Name Newline Dedent "
            "Dedent EndMarker");
  EXPECT_EQ(messages("if a:\n  if b:\n  \tc\n"), "");
}

TEST(LexerIndentTest, InconsistentTabsAndSpaces) {
  EXPECT_EQ(messages("if x:\n\tif y:\n        z\n"),
            "inconsistent use of tabs and spaces in indentation");
  EXPECT_EQ(messages("if x:\n        y\n\tz\n"),
            "inconsistent use of tabs and spaces in indentation");
}

TEST(LexerIndentTest, UnindentMismatch) {
  EXPECT_EQ(messages("if x:\n  y\n z\n"), "unindent does not match any outer indentation level");
}

TEST(LexerIndentTest, FormFeedResetsTheColumn) {
  // "\f  " is column 2, like the previous line: no new level.
  EXPECT_EQ(kinds("if 1:\n  x\n\f  y\n"),
            "KwIf Number Colon Newline Indent Name Newline Name Newline Dedent EndMarker");
  EXPECT_EQ(messages("if 1:\n  x\n\f  y\n"), "");
  // "    \f" is column 0.
  EXPECT_EQ(kinds("x\n    \fy\n"), "Name Newline Name Newline EndMarker");
}

TEST(LexerIndentTest, UnexpectedIndentIsLeftToTheParser) {
  EXPECT_EQ(kinds("  x\n"), "Indent Name Newline Dedent EndMarker");
  EXPECT_EQ(messages("  x\n"), "");
}

TEST(LexerIndentTest, CrlfIndentation) {
  EXPECT_EQ(kinds("if x:\r\n    y\r\nz\r\n"),
            "KwIf Name Colon Newline Indent Name Newline Dedent Name Newline EndMarker");
}

TEST(LexerIndentTest, TooDeep) {
  std::string src;
  for (int i = 0; i < 101; ++i) src += std::string(static_cast<std::size_t>(i), ' ') + "if x:\n";
  src += std::string(101, ' ') + "pass\n";
  EXPECT_EQ(messages(src), "too many levels of indentation");
}

}  // namespace
}  // namespace torchport::syntax
