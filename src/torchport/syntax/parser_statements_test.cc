// Statements: one test per construct, checking the tree shape (and spans where they matter).
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::accepts;
using testing::error_of;
using testing::first_stmt;
using testing::spans;

TEST(ParserStatements, Assignments) {
  EXPECT_EQ(first_stmt("x = 1\n"), "Assign(Name x, Constant 1)");
  EXPECT_EQ(first_stmt("a = b = c\n"), "Assign(Name a, Name b, Name c)");
  EXPECT_EQ(first_stmt("a, *b = c\n"), "Assign(Tuple(Name a, Starred(Name b)), Name c)");
  EXPECT_EQ(first_stmt("x.y[0] = yield\n"),
            "Assign(Subscript(Attribute y(Name x), Constant 0), Yield)");
  EXPECT_EQ(first_stmt("x += 2\n"), "AugAssign(Name x, Constant 2)");
  EXPECT_EQ(first_stmt("x: int = 3\n"), "AnnAssign(Name x, Name int, Constant 3)");
  EXPECT_EQ(first_stmt("(a): int\n"), "AnnAssign(Name a, Name int)");
  // The Assign starts at the parenthesis of its parenthesized target.
  EXPECT_EQ(spans("(a) = 1\n", NodeKind::Assign), "1:0-1:7");
  EXPECT_EQ(spans("x = 1; y = 2;\n", NodeKind::Assign), "1:0-1:5 1:7-1:12");
}

TEST(ParserStatements, InvalidTargetsAreSyntaxErrors) {
  EXPECT_FALSE(accepts("f() = 1\n"));
  EXPECT_FALSE(accepts("del f()\n"));
  EXPECT_FALSE(accepts("a + 1 += 2\n"));
  EXPECT_FALSE(accepts("(a, b) += 1\n"));
  EXPECT_FALSE(accepts("a, b: int\n"));
  EXPECT_FALSE(accepts("x = yield = 1\n"));
  EXPECT_FALSE(accepts("del *a\n"));
  EXPECT_FALSE(accepts("a := 1\n"));
  // ast.parse accepts these (the compiler rejects some of them later).
  EXPECT_TRUE(accepts("*a\n"));
  EXPECT_TRUE(accepts("x = *a, b\n"));
  EXPECT_TRUE(accepts("return 1\n"));
  EXPECT_TRUE(accepts("del (a), [b], c.d, e[0]\n"));
}

TEST(ParserStatements, SimpleStatements) {
  EXPECT_EQ(first_stmt("del a, b\n"), "Delete(Name a, Name b)");
  EXPECT_EQ(first_stmt("assert x, 'm'\n"), "Assert(Name x, Constant 'm')");
  EXPECT_EQ(first_stmt("raise E from e\n"), "Raise(Name E, Name e)");
  EXPECT_EQ(first_stmt("raise\n"), "Raise");
  EXPECT_EQ(first_stmt("return\n"), "Return");
  EXPECT_EQ(first_stmt("return 1, 2\n"), "Return(Tuple(Constant 1, Constant 2))");
  EXPECT_EQ(first_stmt("global a, b\n"), "Global");
  EXPECT_EQ(first_stmt("pass; break; continue\n"), "Pass");
  Tree t = testing::parse_text("nonlocal x, y\n");
  ASSERT_TRUE(t.ok());
  const Node& n = *t.root().children()[0];
  ASSERT_EQ(n.extra_tokens().size(), 2u);
  EXPECT_EQ(t.token_text(n.extra_tokens()[1]), "y");
}

TEST(ParserStatements, Imports) {
  EXPECT_EQ(first_stmt("import a.b as c, d\n"), "Import(alias a.b as c, alias d)");
  EXPECT_EQ(first_stmt("from . import (a, b as c,)\n"), "ImportFrom(alias a, alias b as c)");
  EXPECT_EQ(first_stmt("from x import *\n"), "ImportFrom(alias *)");
  Tree t = testing::parse_text("from ...pkg . mod import name\n");
  ASSERT_TRUE(t.ok());
  const Node& imp = *t.root().children()[0];
  EXPECT_EQ(t.module(imp), "pkg.mod");
  EXPECT_EQ(t.level(imp), 3u);
  EXPECT_EQ(spans("import os.path as p\n", NodeKind::alias), "1:7-1:19");
  EXPECT_FALSE(accepts("from . import a,\n"));
  EXPECT_FALSE(accepts("from import a\n"));
  EXPECT_FALSE(accepts("import a.\n"));
}

TEST(ParserStatements, IfElifElse) {
  EXPECT_EQ(first_stmt("if a:\n    x\nelif b:\n    y\nelse:\n    z\n"),
            "If(Name a, Expr(Name x), If(Name b, Expr(Name y), Expr(Name z)))");
  EXPECT_EQ(first_stmt("if (n := 10) > 5: pass\n"),
            "If(Compare(NamedExpr(Name n, Constant 10), Constant 5), Pass)");
}

TEST(ParserStatements, Loops) {
  EXPECT_EQ(first_stmt("for x, in y: pass\nelse: pass\n"),
            "For(Tuple(Name x), Name y, Pass, Pass)");
  EXPECT_EQ(first_stmt("for x in *a, *b: pass\n"),
            "For(Name x, Tuple(Starred(Name a), Starred(Name b)), Pass)");
  EXPECT_EQ(first_stmt("while x: break\nelse: pass\n"), "While(Name x, Break, Pass)");
  EXPECT_EQ(first_stmt("async def f():\n    async for a in b: pass\n"),
            "AsyncFunctionDef f(arguments, AsyncFor(Name a, Name b, Pass))");
  // `for x in y` must not read `x in y` as a comparison.
  EXPECT_EQ(spans("for i in range(3):\n    pass\n", NodeKind::For), "1:0-2:8");
  EXPECT_FALSE(accepts("for f() in y: pass\n"));
}

TEST(ParserStatements, With) {
  EXPECT_EQ(first_stmt("with a as b, c: pass\n"),
            "With(withitem(Name a, Name b), withitem(Name c), Pass)");
  EXPECT_EQ(first_stmt("with (a as b, c,): pass\n"),
            "With(withitem(Name a, Name b), withitem(Name c), Pass)");
  // A parenthesized tuple used as one context manager.
  EXPECT_EQ(first_stmt("with (a, b) as c: pass\n"),
            "With(withitem(Tuple(Name a, Name b), Name c), Pass)");
  EXPECT_EQ(first_stmt("with (a), b: pass\n"), "With(withitem(Name a), withitem(Name b), Pass)");
  EXPECT_EQ(spans("with open(p) as (f): pass\n", NodeKind::withitem), "1:5-1:18");
  EXPECT_EQ(spans("async def f():\n    async with a: pass\n", NodeKind::AsyncWith), "2:4-2:22");
}

TEST(ParserStatements, Try) {
  EXPECT_EQ(first_stmt("try: pass\nexcept (A, B) as e: pass\nelse: pass\nfinally: pass\n"),
            "Try(Pass, ExceptHandler e(Tuple(Name A, Name B), Pass), Pass, Pass)");
  EXPECT_EQ(first_stmt("try: pass\nexcept* E: pass\n"),
            "TryStar(Pass, ExceptHandler(Name E, Pass))");
  EXPECT_EQ(first_stmt("try: pass\nfinally: pass\n"), "Try(Pass, Pass)");
  EXPECT_FALSE(accepts("try: pass\n"));
  EXPECT_FALSE(accepts("try: pass\nexcept A: pass\nexcept* B: pass\n"));
  EXPECT_FALSE(accepts("try: pass\nexcept*: pass\n"));
  EXPECT_FALSE(accepts("try: pass\nelse: pass\n"));
}

TEST(ParserStatements, ExceptWithoutParenthesesPep758) {
  // Python 3.14 accepts an unparenthesized tuple of exception types when there is no `as`.
  EXPECT_EQ(first_stmt("try: pass\nexcept A, B: pass\n"),
            "Try(Pass, ExceptHandler(Tuple(Name A, Name B), Pass))");
  EXPECT_EQ(first_stmt("try: pass\nexcept* A, b.C, D: pass\n"),
            "TryStar(Pass, ExceptHandler(Tuple(Name A, Attribute C(Name b), Name D), Pass))");
  EXPECT_EQ(spans("try: pass\nexcept A, B: pass\n", NodeKind::Tuple), "2:7-2:11");
  EXPECT_EQ(error_of("try: pass\nexcept A, B as e: pass\n"),
            "t.py:2:8: multiple exception types must be parenthesized when using 'as'");
  // `except X, e:` was Python 2's `except X as e:`: accepted as 3.14 reads it, with a warning.
  Tree t = testing::parse_text("try:\n    pass\nexcept ValueError, e:\n    pass\n");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t.diagnostics().size(), 1u);
  EXPECT_EQ(t.diagnostics()[0].severity, text::Severity::Warning);
  EXPECT_NE(t.format(t.diagnostics()[0]).find("t.py:3:18: `except X, e:` catches X or e (PEP 758"),
            std::string::npos);
  EXPECT_TRUE(testing::parse_text("try: pass\nexcept (A, B): pass\n").diagnostics().empty());
}

TEST(ParserStatements, FunctionsAndDecorators) {
  EXPECT_EQ(first_stmt("@d\n@e.f(1)\ndef g(a, /, b=1, *c, d, e=2, **f) -> int: pass\n"),
            "FunctionDef g(Name d, Call(Attribute f(Name e), Constant 1), arguments(arg a, arg b, "
            "Constant 1, arg c, arg d, arg e, Constant 2, arg f), Name int, Pass)");
  // A decorated def starts at `def`; its end is the end of its last statement.
  EXPECT_EQ(spans("@d\ndef f():\n    x = 1\n", NodeKind::FunctionDef), "2:0-3:9");
  // A trailing ';' belongs to the def's span, as in CPython.
  EXPECT_EQ(spans("def f():\n    x = 1;\n", NodeKind::FunctionDef), "1:0-2:10");
  Tree t = testing::parse_text("def f(a, /, b, *, c): pass\n");
  ASSERT_TRUE(t.ok());
  const Node* args = t.root().children()[0]->arguments();
  ASSERT_NE(args, nullptr);
  ASSERT_EQ(args->children().size(), 3u);
  EXPECT_EQ(args->children()[0]->role(), Role::PosOnlyArg);
  EXPECT_EQ(args->children()[1]->role(), Role::PlainArg);
  EXPECT_EQ(args->children()[2]->role(), Role::KwOnlyArg);
  EXPECT_FALSE(accepts("def f(a=1, b): pass\n"));
  EXPECT_FALSE(accepts("def f(*): pass\n"));
  EXPECT_FALSE(accepts("def f(*, **k): pass\n"));
  EXPECT_FALSE(accepts("def f(/, a): pass\n"));
  EXPECT_FALSE(accepts("def f(**k, a): pass\n"));
  EXPECT_FALSE(accepts("def f(*a, *b): pass\n"));
  EXPECT_TRUE(accepts("def f(a, *, b=1, c): pass\n"));
  EXPECT_TRUE(accepts("def f(**k,): pass\n"));
}

TEST(ParserStatements, Classes) {
  EXPECT_EQ(first_stmt("class C(B, metaclass=M, **kw): pass\n"),
            "ClassDef C(Name B, keyword metaclass(Name M), keyword(Name kw), Pass)");
  EXPECT_EQ(first_stmt("class C: pass\n"), "ClassDef C(Pass)");
  EXPECT_FALSE(accepts("class C(x for x in y): pass\n"));
}

TEST(ParserStatements, SoftKeywordsAsNames) {
  EXPECT_EQ(first_stmt("match = 1\n"), "Assign(Name match, Constant 1)");
  EXPECT_EQ(first_stmt("match(x)\n"), "Expr(Call(Name match, Name x))");
  EXPECT_EQ(first_stmt("match.x: int\n"), "AnnAssign(Attribute x(Name match), Name int)");
  EXPECT_EQ(first_stmt("type = 5\n"), "Assign(Name type, Constant 5)");
  EXPECT_EQ(first_stmt("case, _ = 1, 2\n"),
            "Assign(Tuple(Name case, Name _), Tuple(Constant 1, Constant 2))");
  EXPECT_EQ(first_stmt("print(match, type)\n"), "Expr(Call(Name print, Name match, Name type))");
}

TEST(ParserStatements, BlocksAndIndentation) {
  EXPECT_EQ(first_stmt("if a:\n    # comment\n\n    b\n"), "If(Name a, Expr(Name b))");
  EXPECT_EQ(first_stmt("if a: b; c\n"), "If(Name a, Expr(Name b), Expr(Name c))");
  EXPECT_FALSE(accepts("if a:\npass\n"));
  EXPECT_FALSE(accepts("  x = 1\n"));
}

}  // namespace
}  // namespace torchport::syntax
