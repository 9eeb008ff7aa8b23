// The tree API rule writers use: walking, finding, parents, byte ranges, typed accessors.
#include <gtest/gtest.h>
#include <torchport/syntax/parser_test_util.h>
#include <torchport/syntax/printer.h>

#include <thread>
#include <vector>

namespace torchport::syntax {
namespace {

constexpr const char* kSrc =
    "import torch.cuda as tc, os\n"
    "from ..a.b import c as d\n"
    "x: int = torch.cuda.is_available()\n"
    "with torch.cuda.device(0) as dev:\n"
    "    y = model.to(device='cuda', non_blocking=True)\n"
    "for i, v in enumerate(xs): pass\n"
    "if a is not None: pass\n";

TEST(TreeApi, FindAllBuildsItsIndexOnceWhenThreadsAskTogether) {
  // The first find_all builds the index of every kind under a lock; threads asking at once all
  // get that one index, the same lists a single caller gets.
  const Tree one = testing::parse_text(kSrc);
  const std::vector<const Node*> calls = one.find_all(NodeKind::Call);
  const std::vector<const Node*> names = one.find_all(NodeKind::Name);
  for (int round = 0; round < 20; ++round) {
    const Tree t = testing::parse_text(kSrc);
    std::vector<const std::vector<const Node*>*> seen(8);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < seen.size(); ++i)
      threads.emplace_back(
          [&, i] { seen[i] = &t.find_all(i % 2 ? NodeKind::Call : NodeKind::Name); });
    for (std::thread& th : threads) th.join();
    for (std::size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i], &t.find_all(i % 2 ? NodeKind::Call : NodeKind::Name));
      ASSERT_EQ(seen[i]->size(), (i % 2 ? calls : names).size());
      for (std::size_t k = 0; k < seen[i]->size(); ++k)
        EXPECT_EQ(t.byte_range(*(*seen[i])[k]).begin,
                  one.byte_range(*(i % 2 ? calls : names)[k]).begin);
    }
  }
}

TEST(TreeApi, FindWalkAndParents) {
  Tree t = testing::parse_text(kSrc);
  ASSERT_TRUE(t.ok());
  std::vector<const Node*> calls = t.find_all(NodeKind::Call);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(t.text(*calls[0]), "torch.cuda.is_available()");
  EXPECT_EQ(t.text(*calls[2]), "model.to(device='cuda', non_blocking=True)");
  // Parents lead back to the module.
  const Node* n = calls[2];
  int depth = 0;
  while (n->parent() != nullptr) {
    n = n->parent();
    ++depth;
  }
  EXPECT_EQ(n, &t.root());
  EXPECT_EQ(depth, 3);  // Call -> Assign -> With -> Module
  int names = 0;
  walk(t.root(), [&](const Node& x) {
    if (x.kind() == NodeKind::Name) ++names;
  });
  EXPECT_EQ(names, 12);
  // Returning false skips the subtree.
  int visited = 0;
  walk(t.root(), [&](const Node& x) {
    ++visited;
    return x.kind() == NodeKind::Module;
  });
  EXPECT_EQ(visited, 1 + 6);
}

TEST(TreeApi, PositionsAndBytes) {
  Tree t = testing::parse_text(kSrc);
  const Node* call = t.find_all(NodeKind::Call)[2];
  ByteRange r = t.byte_range(*call);
  EXPECT_EQ(t.text().substr(r.begin, r.end - r.begin), t.text(*call));
  EXPECT_EQ(t.start(*call).line, 5u);
  EXPECT_EQ(t.start(*call).column, 8u);
  EXPECT_EQ(t.end(*call).column, 50u);
  EXPECT_EQ(print(t, *call), t.text(*call));
  EXPECT_EQ(print(t), kSrc);
}

TEST(TreeApi, TypedAccessors) {
  Tree t = testing::parse_text(kSrc);
  const Node& imp = *t.find_all(NodeKind::Import)[0];
  std::vector<std::pair<std::string, std::string>> aliases;
  for (const Node* a : imp.aliases()) aliases.emplace_back(t.alias_name(*a), t.name(*a));
  EXPECT_EQ(aliases,
            (std::vector<std::pair<std::string, std::string>>{{"torch.cuda", "tc"}, {"os", ""}}));
  const Node& from = *t.find_all(NodeKind::ImportFrom)[0];
  EXPECT_EQ(t.module(from), "a.b");
  EXPECT_EQ(t.level(from), 2u);

  const Node& ann = *t.find_all(NodeKind::AnnAssign)[0];
  EXPECT_EQ(t.name(*ann.target()), "x");
  EXPECT_EQ(t.text(*ann.annotation()), "int");
  EXPECT_EQ(ann.value()->kind(), NodeKind::Call);

  const Node& item = *t.find_all(NodeKind::withitem)[0];
  EXPECT_EQ(t.text(*item.context_expr()), "torch.cuda.device(0)");
  EXPECT_EQ(t.name(*item.optional_vars()), "dev");

  const Node& call = *t.find_all(NodeKind::Call)[2];
  const Node& attr = *call.func();
  EXPECT_EQ(attr.kind(), NodeKind::Attribute);
  EXPECT_EQ(t.name(attr), "to");
  EXPECT_EQ(t.token_text(attr.token()), "to");
  EXPECT_EQ(t.name(*attr.value()), "model");
  std::vector<std::string> kw;
  for (const Node* k : call.keywords())
    kw.push_back(std::string(t.name(*k)) + "=" + std::string(t.text(*k->value())));
  EXPECT_EQ(kw, (std::vector<std::string>{"device='cuda'", "non_blocking=True"}));
  const Node* device = *call.keywords().begin();
  EXPECT_EQ(t.string_value(*device->value()), std::optional<std::string>("cuda"));
  EXPECT_TRUE(t.is_string(*device->value()));

  const Node& loop = *t.find_all(NodeKind::For)[0];
  EXPECT_EQ(loop.target()->kind(), NodeKind::Tuple);
  EXPECT_EQ(t.text(*loop.iter()), "enumerate(xs)");

  const Node& cmp = *t.find_all(NodeKind::Compare)[0];
  EXPECT_EQ(t.compare_ops(cmp), std::vector<CmpOp>{CmpOp::IsNot});

  Tree d = testing::parse_text("@dec\nclass C(B):\n    def m(self): pass\n");
  const Node& cls = *d.find_all(NodeKind::ClassDef)[0];
  EXPECT_EQ(d.name(cls), "C");
  EXPECT_EQ(d.name(**cls.decorators().begin()), "dec");
  EXPECT_EQ(d.name(**cls.body().begin()), "m");
  EXPECT_EQ(d.name(**cls.bases().begin()), "B");

  Tree s = testing::parse_text("x[1:2]\n");
  const Node& sub = *s.find_all(NodeKind::Subscript)[0];
  EXPECT_EQ(s.name(*sub.value()), "x");
  EXPECT_EQ(sub.slice()->kind(), NodeKind::Slice);

  Tree f = testing::parse_text("f'a{b}'\n");
  const Node& js = *f.find_all(NodeKind::JoinedStr)[0];
  EXPECT_EQ(js.parts().size(), 2u);
  EXPECT_EQ(f.string_prefix(js.token()), "f");
}

}  // namespace
}  // namespace torchport::syntax
