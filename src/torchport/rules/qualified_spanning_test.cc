// Context::qualified_spanning searches from its previous answer (the families ask in source
// order): in any order of questions it answers as a search of the whole table does.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/context.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace torchport::rules {
namespace {

/// The answer by the definition: the last reference (in reference order) with a qualified name
/// whose tokens span exactly `r`.
const std::string* expected(const syntax::Tree& tree, const semantic::Model& m,
                            syntax::ByteRange r) {
  const std::string* out = nullptr;
  for (const semantic::Reference& ref : m.references())
    if (!ref.qualified.empty() && tree.tokens()[ref.first].begin == r.begin &&
        tree.tokens()[ref.last].end == r.end)
      out = &ref.qualified;
  return out;
}

TEST(QualifiedSpanning, AnswersAsAWholeSearchInAnyOrderOfQuestions) {
  std::string src = "import torch\nimport torch.nn as nn\nfrom os import path as p\n";
  for (int i = 0; i < 40; ++i)
    src += "x" + std::to_string(i) + " = torch.cuda.is_available() and nn.Linear(" +
           std::to_string(i) + ") or p.join(torch.zeros(1).sum(), local.y)\n";
  syntax::Tree tree = syntax::parse("t.py", src);
  ASSERT_TRUE(tree.ok());
  semantic::Model m(tree);
  const catalogue::Catalogue& cat = catalogue::Catalogue::builtin();
  const catalogue::Target* target = cat.target("npu");
  ASSERT_NE(target, nullptr);
  Options o;
  o.target = "npu";

  // Every reference's span, every node's span (most of them no reference's), and spans that
  // start inside or straddle references.
  std::vector<syntax::ByteRange> questions;
  for (const semantic::Reference& ref : m.references())
    questions.push_back({tree.tokens()[ref.first].begin, tree.tokens()[ref.last].end});
  syntax::walk(tree.root(),
               [&](const syntax::Node& n) { questions.push_back(tree.byte_range(n)); });
  for (std::uint32_t b = 0; b + 7 < src.size(); b += 5) questions.push_back({b, b + 7});
  questions.push_back({0, 0});
  questions.push_back(
      {static_cast<std::uint32_t>(src.size()), static_cast<std::uint32_t>(src.size())});

  std::size_t found = 0;
  auto ask_all = [&](const std::vector<syntax::ByteRange>& qs) {
    Context ctx(tree, m, cat, *target, o);  // a fresh table and hint
    for (const syntax::ByteRange& r : qs) {
      const std::string* want = expected(tree, m, r);
      const std::string* got = ctx.qualified_spanning(r);
      ASSERT_EQ(got, want) << "range [" << r.begin << ", " << r.end << ")";
      if (want) ++found;
    }
  };
  std::vector<syntax::ByteRange> in_order = questions;
  std::sort(in_order.begin(), in_order.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  ask_all(in_order);
  std::vector<syntax::ByteRange> backwards(in_order.rbegin(), in_order.rend());
  ask_all(backwards);
  std::vector<syntax::ByteRange> shuffled = questions;
  std::mt19937 rng(35);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    ask_all(shuffled);
  }
  EXPECT_GT(found, 200u);  // the questions do hit references (40 lines of several each)
}

}  // namespace
}  // namespace torchport::rules
