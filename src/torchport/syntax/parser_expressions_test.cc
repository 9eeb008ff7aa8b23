// Expressions: precedence, atoms, calls, comprehensions, lambda, walrus, spans as CPython's.
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::accepts;
using testing::first_stmt;
using testing::spans;

TEST(ParserExpressions, Precedence) {
  EXPECT_EQ(first_stmt("a + b * c ** -d\n"),
            "Expr(BinOp(Name a, BinOp(Name b, BinOp(Name c, UnaryOp(Name d)))))");
  EXPECT_EQ(first_stmt("a - b - c\n"), "Expr(BinOp(BinOp(Name a, Name b), Name c))");
  EXPECT_EQ(first_stmt("2 ** 3 ** 4\n"), "Expr(BinOp(Constant 2, BinOp(Constant 3, Constant 4)))");
  EXPECT_EQ(first_stmt("a | b ^ c & d << e\n"),
            "Expr(BinOp(Name a, BinOp(Name b, BinOp(Name c, BinOp(Name d, Name e)))))");
  EXPECT_EQ(first_stmt("not a and b or c\n"),
            "Expr(BoolOp(BoolOp(UnaryOp(Name a), Name b), Name c))");
  EXPECT_EQ(first_stmt("x if c else y if d else z\n"),
            "Expr(IfExp(Name x, Name c, IfExp(Name y, Name d, Name z)))");
  EXPECT_EQ(first_stmt("await f() ** 2\n"), "Expr(BinOp(Await(Call(Name f)), Constant 2))");
}

TEST(ParserExpressions, ChainedComparisons) {
  Tree t = testing::parse_text("a < b not in c is not d == e\n");
  ASSERT_TRUE(t.ok());
  const Node* cmp = t.find_all(NodeKind::Compare)[0];
  EXPECT_EQ(testing::sexp(t, *cmp), "Compare(Name a, Name b, Name c, Name d, Name e)");
  std::vector<CmpOp> ops = t.compare_ops(*cmp);
  EXPECT_EQ(ops, (std::vector<CmpOp>{CmpOp::Lt, CmpOp::NotIn, CmpOp::IsNot, CmpOp::Eq}));
  EXPECT_EQ(cmp->left()->kind(), NodeKind::Name);
  EXPECT_EQ(cmp->comparators().size(), 4u);
  EXPECT_FALSE(accepts("a not b\n"));
}

TEST(ParserExpressions, ParenthesesAndSpans) {
  // A parenthesized name spans the name; enclosing nodes start at the parenthesis.
  EXPECT_EQ(spans("(a).b\n", NodeKind::Name), "1:1-1:2");
  EXPECT_EQ(spans("(a).b\n", NodeKind::Attribute), "1:0-1:5");
  EXPECT_EQ(spans("x = (a)\n", NodeKind::Assign), "1:0-1:7");
  // A parenthesized tuple includes its parentheses, a bare one does not have any.
  EXPECT_EQ(spans("x = (1, 2)\ny = 1, 2,\n", NodeKind::Tuple), "1:4-1:10 2:4-2:9");
  EXPECT_EQ(spans("f(a)(b)\n", NodeKind::Call), "1:0-1:7 1:0-1:4");
  EXPECT_EQ(first_stmt("()\n"), "Expr(Tuple)");
  EXPECT_EQ(first_stmt("(yield)\n"), "Expr(Yield)");
  EXPECT_FALSE(accepts("(*a)\n"));
  EXPECT_FALSE(accepts("(a\n"));
}

TEST(ParserExpressions, Calls) {
  Tree t = testing::parse_text("f(a, *b, k=1, *c, **d)\n");
  ASSERT_TRUE(t.ok());
  const Node* call = t.find_all(NodeKind::Call)[0];
  EXPECT_EQ(t.name(*call->func()), "f");
  EXPECT_EQ(call->args().size(), 3u);
  std::vector<std::string> names;
  for (const Node* k : call->keywords()) names.emplace_back(t.name(*k));
  EXPECT_EQ(names, (std::vector<std::string>{"k", ""}));
  EXPECT_EQ(testing::span(t, *call), "1:0-1:22");
  // The sole generator argument spans the call's parentheses.
  EXPECT_EQ(spans("f(x for x in y)\n", NodeKind::GeneratorExp), "1:1-1:15");
  EXPECT_FALSE(accepts("f(x for x in y, 1)\n"));
  EXPECT_FALSE(accepts("f(1, x for x in y)\n"));
  EXPECT_FALSE(accepts("f(a=1, b)\n"));
  EXPECT_FALSE(accepts("f(**a, *b)\n"));
  EXPECT_FALSE(accepts("f(**a, b)\n"));
  EXPECT_FALSE(accepts("f(a.b=1)\n"));
  EXPECT_TRUE(accepts("f(a:=1)\n"));
  EXPECT_TRUE(accepts("print(*a, sep='')\n"));
}

TEST(ParserExpressions, SubscriptsAndSlices) {
  EXPECT_EQ(first_stmt("a[1:2, ::3, *b]\n"),
            "Expr(Subscript(Name a, Tuple(Slice(Constant 1, Constant 2), Slice(Constant 3), "
            "Starred(Name b))))");
  EXPECT_EQ(spans("a[1:]\n", NodeKind::Slice), "1:2-1:4");
  EXPECT_EQ(spans("a[:]\n", NodeKind::Slice), "1:2-1:3");
  EXPECT_EQ(spans("x[i]\n", NodeKind::Subscript), "1:0-1:4");
  EXPECT_TRUE(accepts("a[b:=1]\n"));
  EXPECT_FALSE(accepts("a[*b:1]\n"));
}

TEST(ParserExpressions, Displays) {
  EXPECT_EQ(first_stmt("[1, *a]\n"), "Expr(List(Constant 1, Starred(Name a)))");
  EXPECT_EQ(first_stmt("{1: 2, **d}\n"), "Expr(Dict(Constant 1, Constant 2, Name d))");
  EXPECT_EQ(first_stmt("{a, *b}\n"), "Expr(Set(Name a, Starred(Name b)))");
  EXPECT_EQ(first_stmt("{}\n"), "Expr(Dict)");
  EXPECT_EQ(first_stmt("{a := 1}\n"), "Expr(Set(NamedExpr(Name a, Constant 1)))");
  EXPECT_FALSE(accepts("{a := 1: 2}\n"));
  EXPECT_FALSE(accepts("{*a: 1}\n"));
}

TEST(ParserExpressions, Comprehensions) {
  EXPECT_EQ(first_stmt("[x for x in y if x if not x for z in x]\n"),
            "Expr(ListComp(Name x, comprehension(Name x, Name y, Name x, UnaryOp(Name x)), "
            "comprehension(Name z, Name x)))");
  EXPECT_EQ(first_stmt("{k: v for k, v in d}\n"),
            "Expr(DictComp(Name k, Name v, comprehension(Tuple(Name k, Name v), Name d)))");
  EXPECT_EQ(first_stmt("{x async for x in y}\n"),
            "Expr(SetComp(Name x, comprehension(Name x, Name y)))");
  EXPECT_EQ(first_stmt("(x for x in y)\n"),
            "Expr(GeneratorExp(Name x, comprehension(Name x, Name y)))");
  EXPECT_FALSE(accepts("[*x for x in y]\n"));
}

TEST(ParserExpressions, Lambda) {
  EXPECT_EQ(first_stmt("lambda: 0\n"), "Expr(Lambda(arguments, Constant 0))");
  EXPECT_EQ(first_stmt("lambda a, /, b=1, *c, d, **e: a\n"),
            "Expr(Lambda(arguments(arg a, arg b, Constant 1, arg c, arg d, arg e), Name a))");
  EXPECT_EQ(first_stmt("lambda *, k: k\n"), "Expr(Lambda(arguments(arg k), Name k))");
  EXPECT_EQ(spans("f = lambda x: (x)\n", NodeKind::Lambda), "1:4-1:17");
  EXPECT_FALSE(accepts("lambda *: 0\n"));
  EXPECT_FALSE(accepts("lambda a: int: 0\n"));
}

TEST(ParserExpressions, YieldAndAwait) {
  EXPECT_EQ(first_stmt("x = yield from g()\n"), "Assign(Name x, YieldFrom(Call(Name g)))");
  EXPECT_EQ(first_stmt("yield a, *b\n"), "Expr(Yield(Tuple(Name a, Starred(Name b))))");
  EXPECT_EQ(first_stmt("await x\n"), "Expr(Await(Name x))");
}

TEST(ParserExpressions, WalrusRules) {
  EXPECT_TRUE(accepts("while (line := f()): pass\n"));
  EXPECT_TRUE(accepts("[y := f(x), y**2]\n"));
  EXPECT_FALSE(accepts("x = a := 1\n"));
  EXPECT_FALSE(accepts("(a.b := 1)\n"));
  EXPECT_FALSE(accepts("((a) := 1)\n"));
}

TEST(ParserExpressions, Constants) {
  Tree t = testing::parse_text("x = (1, 2.5, 3j, 0x_1F, None, True, ...)\n");
  ASSERT_TRUE(t.ok());
  int numbers = 0, others = 0;
  for (const Node* c : t.find_all(NodeKind::Constant)) (c->has(kNumber) ? numbers : others)++;
  EXPECT_EQ(numbers, 4);
  EXPECT_EQ(others, 3);
  // `-1` is a UnaryOp around the Constant 1, as in ast.
  EXPECT_EQ(spans("-1\n", NodeKind::Constant), "1:1-1:2");
}

TEST(ParserExpressions, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '(');
  EXPECT_FALSE(accepts(deep + "\n"));
  std::string minus(100000, '-');
  EXPECT_FALSE(accepts(minus + "1\n"));
  std::string nots;
  for (int i = 0; i < 20000; ++i) nots += "not ";
  EXPECT_FALSE(accepts(nots + "x\n"));
  std::string lambdas;
  for (int i = 0; i < 20000; ++i) lambdas += "lambda: ";
  EXPECT_FALSE(accepts(lambdas + "x\n"));
  std::string moderate(50, '[');
  EXPECT_TRUE(accepts(moderate + std::string(50, ']') + "\n"));
}

}  // namespace
}  // namespace torchport::syntax
