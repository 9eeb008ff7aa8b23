// Typing syntax: PEP 604 unions, PEP 646 star unpacking, PEP 695 type parameters and aliases,
// PEP 696 defaults.
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::accepts;
using testing::first_stmt;

TEST(ParserTypes, Pep604Unions) {
  EXPECT_EQ(first_stmt("x: int | None = None\n"),
            "AnnAssign(Name x, BinOp(Name int, Constant None), Constant None)");
}

TEST(ParserTypes, Pep646StarUnpacking) {
  EXPECT_EQ(first_stmt("x: Tuple[*Ts]\n"),
            "AnnAssign(Name x, Subscript(Name Tuple, Starred(Name Ts)))");
  Tree t = testing::parse_text("def f(*args: *Ts): pass\n");
  ASSERT_TRUE(t.ok());
  const Node* arg = t.find_all(NodeKind::arg)[0];
  EXPECT_TRUE(arg->has(kStarredAnnotation));
  EXPECT_EQ(arg->role(), Role::VarArg);
  EXPECT_FALSE(accepts("def f(x: *Ts): pass\n"));
}

TEST(ParserTypes, Pep695TypeParameters) {
  EXPECT_EQ(first_stmt("def f[T: int, *Ts, **P](x: T) -> T: pass\n"),
            "FunctionDef f(TypeVar T(Name int), TypeVarTuple Ts, ParamSpec P, arguments(arg "
            "x(Name T)), Name T, Pass)");
  EXPECT_EQ(first_stmt("class C[T: (int, str) = str](Base[T]): pass\n"),
            "ClassDef C(TypeVar T(Tuple(Name int, Name str), Name str), Subscript(Name Base, Name "
            "T), Pass)");
  EXPECT_EQ(first_stmt("class C[*Ts = *tuple[int]]: pass\n"),
            "ClassDef C(TypeVarTuple Ts(Starred(Subscript(Name tuple, Name int))), Pass)");
  EXPECT_FALSE(accepts("def f[](): pass\n"));
  EXPECT_FALSE(accepts("def f[*Ts: int](): pass\n"));
  EXPECT_FALSE(accepts("def f[**P: int](): pass\n"));
}

TEST(ParserTypes, TypeAliases) {
  EXPECT_EQ(first_stmt("type Point = tuple[float, float]\n"),
            "TypeAlias(Name Point, Subscript(Name tuple, Tuple(Name float, Name float)))");
  EXPECT_EQ(first_stmt("type ListOrSet[T] = list[T] | set[T]\n"),
            "TypeAlias(Name ListOrSet, TypeVar T, BinOp(Subscript(Name list, Name T), "
            "Subscript(Name set, Name T)))");
  Tree t = testing::parse_text("type X = int\n");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.name(*t.root().children()[0]), "X");
  EXPECT_FALSE(accepts("type X[0] = int\n"));
}

}  // namespace
}  // namespace torchport::syntax
