// The depth bound (limits.h): every file CPython compiles is accepted, deeper trees are a
// located "too deeply nested" error, and no parse of any depth exhausts a WalkThread's stack.
#include <gtest/gtest.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/parser_test_util.h>
#include <torchport/syntax/printer.h>

#include <functional>
#include <string>
#include <vector>

namespace torchport::syntax {
namespace {

using testing::joined;
using testing::repeat;

/// One way to nest: the statement for depth n, and the largest n CPython 3.11 compiles
/// (measured with compile(); one more gives RecursionError or MemoryError).
struct Kind {
  const char* name;
  std::function<std::string(int)> make;
  int cpython_max;
  bool left_deep = false;  ///< built by a loop: deepest at its first leaf
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {
      {"sum", [](int n) { return "y = " + joined("x.cuda()", " + ", n) + "\n"; }, 2991, true},
      {"chain", [](int n) { return "y = x" + repeat(".cuda()", n) + "\n"; }, 1496, true},
      {"attribute", [](int n) { return "y = x" + repeat(".a", n) + "\n"; }, 2992, true},
      {"subscript", [](int n) { return "y = x" + repeat("[0]", n) + "\n"; }, 2992, true},
      {"unary", [](int n) { return "y = " + repeat("-", n) + "x\n"; }, 2992},
      {"not", [](int n) { return "y = " + repeat("not ", n) + "x\n"; }, 2992},
      {"lambda", [](int n) { return "y = " + repeat("lambda: ", n) + "x\n"; }, 2983},
      {"ternary", [](int n) { return "y = " + repeat("a if b else ", n) + "c\n"; }, 2992},
      {"power", [](int n) { return "y = " + joined("x", "**", n) + "\n"; }, 2984},
  };
  return all;
}

Tree parse_deep(const std::string& src) {
  Tree* out = nullptr;
  run_on_walk_stack([&] { out = new Tree(parse("t.py", src)); });
  Tree t = std::move(*out);
  delete out;
  return t;
}

TEST(Depth, HeightCountsNodesDownToTheDeepestLeaf) {
  Tree t = parse("t.py", "x = a + b\n");
  ASSERT_TRUE(t.ok());
  // Module > Assign > BinOp > Name
  EXPECT_EQ(t.root().height(), 4u);
  EXPECT_EQ(t.root().children()[0]->height(), 3u);
}

TEST(Depth, EveryDepthCPythonCompilesIsAccepted) {
  for (const Kind& k : kinds()) {
    Tree t = parse_deep(k.make(k.cpython_max));
    EXPECT_TRUE(t.ok()) << k.name << ": " << (t.ok() ? "" : t.diagnostics()[0].message);
    EXPECT_LE(t.root().height(), kMaxNesting) << k.name;
  }
}

TEST(Depth, DeeperThanTheLimitIsALocatedErrorNearTheCrossing) {
  for (const Kind& k : kinds()) {
    const int n = static_cast<int>(kMaxNesting) + 50;
    const std::string src = k.make(n);
    Tree t = parse_deep(src);
    ASSERT_FALSE(t.ok()) << k.name;
    const std::string msg = t.format(t.diagnostics()[0]);
    EXPECT_TRUE(msg.starts_with("t.py:1:")) << k.name << ": " << msg;
    EXPECT_TRUE(msg.ends_with(": " + std::string(kTooDeep))) << k.name << ": " << msg;
    // Where the nesting is too deep: a loop-built tree at its deepest leaf, the first term
    // (column 5, after `y = `); a recursive form where the parser crossed the limit, past the
    // text of (limit - 10) levels and before the end of the line.
    const std::size_t col = std::stoul(msg.substr(7, msg.find(':', 7) - 7));
    if (k.left_deep) {
      EXPECT_EQ(col, 5u) << k.name << ": " << msg;
    } else {
      const std::size_t before = k.make(static_cast<int>(kMaxNesting) - 10).size() - 2;
      EXPECT_GE(col * 1.0, before * 0.99) << k.name << ": " << msg;
      EXPECT_LT(col, src.size()) << k.name << ": " << msg;
    }
    // The tree of a failed parse is an empty module, as for any syntax error.
    EXPECT_TRUE(t.root().children().empty());
  }
}

TEST(Depth, HundredsOfThousandsOfLevelsFailFastWithoutRecursing) {
  // The forms a generator produces: a 50,000-term sum, a 200,000-link chain, 100,000 unary
  // operators, 100,000 nested calls (CPython: "too many nested parentheses").
  for (const std::string& src :
       {"y = " + joined("x.cuda()", " + ", 50000) + "\n",
        "y = x" + repeat(".cuda()", 200000) + "\n", "y = " + repeat("-", 100000) + "x\n",
        "y = " + repeat("f(", 100000) + repeat(")", 100000) + "\n"}) {
    Tree t = parse_deep(src);
    ASSERT_FALSE(t.ok());
    const std::string& m = t.diagnostics()[0].message;
    EXPECT_TRUE(m == kTooDeep || m == "too many nested parentheses") << m;
  }
}

TEST(Depth, TheAcceptedTreeRoundTrips) {
  for (const Kind& k : kinds()) {
    const std::string src = k.make(k.cpython_max);
    std::string printed;
    run_on_walk_stack([&] { printed = print(parse("t.py", src)); });
    EXPECT_EQ(printed, src) << k.name;
  }
}

TEST(WalkThreadTest, RethrowsTheThreadsException) {
  EXPECT_THROW(run_on_walk_stack([] { throw std::runtime_error("boom"); }), std::runtime_error);
  int seen = 0;
  WalkThread t([&] { seen = 7; });
  t.join();
  EXPECT_EQ(seen, 7);
}

}  // namespace
}  // namespace torchport::syntax
