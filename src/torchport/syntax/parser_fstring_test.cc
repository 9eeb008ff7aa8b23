// f-strings and t-strings (PEP 701, PEP 750), implicit concatenation, string values.
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>

namespace torchport::syntax {
namespace {

using testing::accepts;
using testing::first_stmt;
using testing::spans;

TEST(ParserFString, ReplacementFields) {
  EXPECT_EQ(first_stmt("f'a{b}c'\n"),
            "Expr(JoinedStr(Constant a, FormattedValue(Name b), Constant c))");
  Tree t = testing::parse_text("f'{x!r:>{width}}{y=}'\n");
  ASSERT_TRUE(t.ok());
  std::vector<const Node*> fv = t.find_all(NodeKind::FormattedValue);
  ASSERT_EQ(fv.size(), 3u);  // x, the nested {width} of the format spec, y
  EXPECT_EQ(fv[0]->aux(), static_cast<std::uint32_t>('r'));
  const Node* spec = fv[0]->child(Role::FormatSpec);
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->kind(), NodeKind::JoinedStr);
  EXPECT_EQ(t.name(*fv[1]->value()), "width");
  EXPECT_TRUE(fv[2]->has(kDebug));
  // Names inside replacement fields have their real positions.
  EXPECT_EQ(spans("f'{a.b}'\n", NodeKind::Name), "1:3-1:4");
}

TEST(ParserFString, NestedQuotesPep701) {
  EXPECT_TRUE(accepts("f'{d['key']}'\n"));
  EXPECT_TRUE(accepts("f'{f'{f'{x}'}'}'\n"));
  EXPECT_TRUE(accepts("f'{x:{'>'}10}'\n"));
  EXPECT_TRUE(accepts("f'{(lambda: 1)()}'\n"));
  EXPECT_TRUE(accepts("f'''{\n  a\n}'''\n"));
}

TEST(ParserFString, ImplicitConcatenationIsOneNode) {
  EXPECT_EQ(spans("x = 'a' \"b\" '''c'''\n", NodeKind::Constant), "1:4-1:19");
  EXPECT_EQ(spans("x = ('a'\n     f'{b}')\n", NodeKind::JoinedStr), "1:5-2:11");
  EXPECT_EQ(first_stmt("'a' f'b'\n"), "Expr(JoinedStr(Constant 'a', Constant b))");
  EXPECT_FALSE(accepts("b'a' 'b'\n"));
  EXPECT_FALSE(accepts("b'a' f'b'\n"));
}

TEST(ParserFString, TemplateStrings) {
  EXPECT_EQ(first_stmt("t'a{b}'\n"), "Expr(TemplateStr(Constant a, Interpolation(Name b)))");
  EXPECT_FALSE(accepts("t'a' 'b'\n"));
}

TEST(ParserFString, Invalid) {
  EXPECT_FALSE(accepts("f'{}'\n"));
  EXPECT_FALSE(accepts("f'{x!z}'\n"));
  EXPECT_FALSE(accepts("f'{x'\n"));
  // Format specs nest two levels deep at most, as in CPython.
  EXPECT_TRUE(accepts("f'{a:{b:{c}}}'\n"));
  EXPECT_FALSE(accepts("f'{a:{b:{c:{d}}}}'\n"));
}

TEST(ParserFString, DecodedValues) {
  Tree s = testing::parse_text("x = 'a\\n' r'\\n' '\\u00e9\\101'\n");
  ASSERT_TRUE(s.ok());
  const Node* c = s.find_all(NodeKind::Constant)[0];
  EXPECT_EQ(s.string_value(*c), std::optional<std::string>("a\n\\n\xc3\xa9"
                                                           "A"));
  Tree b = testing::parse_text("x = b'\\x41\\0'\n");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.string_value(*b.find_all(NodeKind::Constant)[0]), std::string("A\0", 2));
  EXPECT_EQ(b.string_prefix(b.find_all(NodeKind::Constant)[0]->token()), "b");
  Tree n = testing::parse_text("x = '\\N{DASH}'\n");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n.string_value(*n.find_all(NodeKind::Constant)[0]), std::nullopt);
}

}  // namespace
}  // namespace torchport::syntax
