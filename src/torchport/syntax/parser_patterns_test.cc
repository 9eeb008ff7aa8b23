// Match statements and every pattern kind (PEP 634).
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::accepts;
using testing::first_stmt;
using testing::spans;

std::string case_pattern(const std::string& pattern) {
  Tree t = testing::parse_text("match x:\n    case " + pattern + ": pass\n");
  EXPECT_TRUE(t.ok()) << pattern;
  if (!t.ok()) return "<error>";
  const Node* mc = t.find_all(NodeKind::match_case)[0];
  return testing::sexp(t, *mc->pattern());
}

TEST(ParserPatterns, EveryKind) {
  EXPECT_EQ(case_pattern("1"), "MatchValue(Constant 1)");
  EXPECT_EQ(case_pattern("-1"), "MatchValue(UnaryOp(Constant 1))");
  EXPECT_EQ(case_pattern("1 + 2j"), "MatchValue(BinOp(Constant 1, Constant 2j))");
  EXPECT_EQ(case_pattern("'a' 'b'"), "MatchValue(Constant 'a' 'b')");
  EXPECT_EQ(case_pattern("None"), "MatchSingleton");
  EXPECT_EQ(case_pattern("a.b.c"), "MatchValue(Attribute c(Attribute b(Name a)))");
  EXPECT_EQ(case_pattern("name"), "MatchAs name");
  EXPECT_EQ(case_pattern("_"), "MatchAs");
  EXPECT_EQ(case_pattern("[1, *rest]"), "MatchSequence(MatchValue(Constant 1), MatchStar rest)");
  EXPECT_EQ(case_pattern("(a, *_)"), "MatchSequence(MatchAs a, MatchStar)");
  EXPECT_EQ(case_pattern("a, b"), "MatchSequence(MatchAs a, MatchAs b)");
  EXPECT_EQ(case_pattern("()"), "MatchSequence");
  EXPECT_EQ(case_pattern("(a)"), "MatchAs a");
  EXPECT_EQ(case_pattern("{1: a, 'k': _, **rest}"),
            "MatchMapping(Constant 1, MatchAs a, Constant 'k', MatchAs)");
  EXPECT_EQ(case_pattern("Point(0, y=b)"),
            "MatchClass(Name Point, MatchValue(Constant 0), MatchAs b)");
  EXPECT_EQ(case_pattern("1 | 2 | c.D"),
            "MatchOr(MatchValue(Constant 1), MatchValue(Constant 2), "
            "MatchValue(Attribute D(Name c)))");
  EXPECT_EQ(case_pattern("[a] as b"), "MatchAs b(MatchSequence(MatchAs a))");
}

TEST(ParserPatterns, MatchStatementShapeAndSpans) {
  EXPECT_EQ(first_stmt("match a, *b:\n    case x if x > 0:\n        pass\n    case _: pass\n"),
            "Match(Tuple(Name a, Starred(Name b)), match_case(MatchAs x, Compare(Name x, "
            "Constant 0), Pass), match_case(MatchAs, Pass))");
  // match_case: from the pattern to the end of the last statement of the body.
  EXPECT_EQ(spans("match x:\n    case 1:\n        y = 2\n", NodeKind::match_case), "2:9-3:13");
  // An enclosing pattern starts at the parenthesis of a group.
  EXPECT_EQ(spans("match x:\n    case (0 as z) | 1: pass\n", NodeKind::match_case), "2:9-2:27");
}

TEST(ParserPatterns, FStringPatternsParseLikeAstParse) {
  // ast.parse accepts them; only the compiler rejects them.
  EXPECT_TRUE(accepts("match x:\n    case f'{a}': pass\n"));
}

TEST(ParserPatterns, Rejected) {
  EXPECT_FALSE(accepts("match x:\n    case a as _: pass\n"));
  EXPECT_FALSE(accepts("match x:\n    case C(a=1, b): pass\n"));
  EXPECT_FALSE(accepts("match x:\n    case 1 + 2: pass\n"));
  EXPECT_FALSE(accepts("match x:\n    case {**r, 1: a}: pass\n"));
  EXPECT_FALSE(accepts("match x:\n    case {**_}: pass\n"));
  EXPECT_FALSE(accepts("match x:\n    pass\n"));
  EXPECT_FALSE(accepts("match x:\ncase 1: pass\n"));
}

}  // namespace
}  // namespace torchport::syntax
