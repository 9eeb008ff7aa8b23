// Syntax errors: the first error, where CPython reports it, with CPython's wording.
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::error_of;

TEST(ParserErrors, FormatIsPathLineColMessage) {
  // col is 1-based in the human format: `1 +` fails at the NEWLINE after '+', byte 7.
  EXPECT_EQ(error_of("x = 1 +\n"), "t.py:1:8: invalid syntax");
  EXPECT_EQ(error_of("x = 1\ny = = 2\n"), "t.py:2:5: invalid syntax");
}

TEST(ParserErrors, ExpectedIndentedBlock) {
  EXPECT_EQ(error_of("if x:\npass\n"),
            "t.py:2:1: expected an indented block after 'if' statement on line 1");
  EXPECT_EQ(error_of("def f():\n\n  # c\nreturn\n"),
            "t.py:4:1: expected an indented block after function definition on line 1");
  EXPECT_EQ(error_of("for x in y:\n  pass\nelse:\nz\n"),
            "t.py:4:1: expected an indented block after 'else' statement on line 3");
}

TEST(ParserErrors, UnexpectedIndentAndUnindent) {
  EXPECT_EQ(error_of("x = 1\n    y = 2\n"), "t.py:2:5: unexpected indent");
  std::string e = error_of("if x:\n    a\n  b\n");
  EXPECT_NE(e.find("unindent does not match any outer indentation level"), std::string::npos) << e;
  EXPECT_EQ(e.rfind("t.py:3:", 0), 0u) << e;
}

TEST(ParserErrors, Brackets) {
  EXPECT_EQ(error_of("x = (1,\ny = 2\n"), "t.py:1:5: '(' was never closed");
  std::string e = error_of("x = [1, 2)\n");
  EXPECT_NE(e.find("does not match"), std::string::npos) << e;
  e = error_of("x = 1)\n");
  EXPECT_NE(e.find("unmatched ')'"), std::string::npos) << e;
}

TEST(ParserErrors, Messages) {
  EXPECT_EQ(error_of("if x\n    pass\n"), "t.py:1:5: expected ':'");
  EXPECT_EQ(error_of("f(a=1, b)\n"), "t.py:1:8: positional argument follows keyword argument");
  EXPECT_EQ(error_of("f(**a, *b)\n"),
            "t.py:1:8: iterable argument unpacking follows keyword argument unpacking");
  EXPECT_EQ(error_of("f(x for x in y, 1)\n"),
            "t.py:1:3: Generator expression must be parenthesized");
  EXPECT_EQ(error_of("f() = 1\n"),
            "t.py:1:1: cannot assign to function call here. Maybe you meant '==' instead of '='?");
  EXPECT_EQ(error_of("for f() in x: pass\n"), "t.py:1:5: cannot assign to function call");
  EXPECT_EQ(error_of("del f()\n"), "t.py:1:5: cannot delete function call");
  EXPECT_EQ(error_of("def f(a=1, b): pass\n"),
            "t.py:1:12: non-default argument follows default argument");
  EXPECT_EQ(error_of("from a import b,\n"),
            "t.py:1:16: trailing comma not allowed without surrounding parentheses");
  EXPECT_EQ(error_of("a if b\n"), "t.py:1:7: expected 'else' after 'if' expression");
  // A replacement field takes a tuple (`{*a,}`) but no lone starred expression (CPython 3.12+
  // reports it at the star; 3.11 too, in its own f-string parser).
  EXPECT_EQ(error_of("x = f\"{*a}\"\n"), "t.py:1:8: f-string: cannot use starred expression here");
  EXPECT_EQ(error_of("x = f\"{*a=}\"\n"), "t.py:1:8: f-string: cannot use starred expression here");
  EXPECT_EQ(error_of("x = t\"{*a}\"\n"), "t.py:1:8: t-string: cannot use starred expression here");
  EXPECT_TRUE(testing::parse_text("x = f\"{*a,}\"\n").ok());
}

TEST(ParserErrors, LexicalErrorsAreReported) {
  std::string e = error_of("x = 'abc\n");
  EXPECT_EQ(e.rfind("t.py:1:5: ", 0), 0u) << e;
  EXPECT_NE(e.find("unterminated string literal"), std::string::npos) << e;
  Tree t = testing::parse_text("x = $\n");
  EXPECT_FALSE(t.ok());
}

TEST(ParserErrors, ALexicalErrorSurvivesTheWarningsOfTheParse) {
  // The lexical error was held by pointer into the diagnostics while the grammar appended its
  // warnings (`except X, e:`), so the vector's reallocation left it dangling: ASan reported a
  // heap-use-after-free and the release build crashed. Two warnings force the reallocation.
  Tree t = testing::parse_text(
      "try:\n    run()\nexcept OSError, err:\n    pass\ntry:\n    run()\n"
      "except KeyError, k:\n    pass\nvalue = 3 ? 4\n");
  ASSERT_FALSE(t.ok());
  ASSERT_GE(t.diagnostics().size(), 1u);
  EXPECT_EQ(t.diagnostics()[0].severity, text::Severity::Error);
  const std::string e = t.format(t.diagnostics()[0]);
  EXPECT_EQ(e.rfind("t.py:9:11: ", 0), 0u) << e;
}

TEST(ParserErrors, TreeOnErrorIsAnEmptyModuleOverTheWholeFile) {
  Tree t = testing::parse_text("x = (\n");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.root().kind(), NodeKind::Module);
  EXPECT_TRUE(t.root().children().empty());
  EXPECT_EQ(t.diagnostics().size(), 1u);
}

}  // namespace
}  // namespace torchport::syntax
