// TP700 on string literals: the rule reads a one-token literal without escapes as it is written
// and decodes only the others (escapes, implicit concatenation, bytes, a line continuation). Every
// literal whose value is a CUDA device string or "nccl" is reported, however it is written.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

std::vector<std::uint32_t> leftover_lines(const std::string& src) {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = "npu";
  std::vector<std::uint32_t> lines;
  for (const Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings)
    if (f.code == "TP700") lines.push_back(tree.lines().locate(f.begin).line);
  return lines;
}

TEST(CudaLeftover, EveryWayOfWritingADeviceStringOrNcclIsReported) {
  const std::string src =
      "import torch\n"
      "\n"
      "a = \"\\x63uda:1\"\n"      // an escape
      "b = (\"cu\" \"da:2\")\n"   // implicit concatenation
      "c = \"\"\"cuda:3\"\"\"\n"  // triple quotes
      "d = r\"nccl\"\n"
      "e = b\"cuda\"\n"  // bytes: decoded as their byte values
      "f = \"cpu\"\n"
      "g = \"hello cuda\"\n"
      "h = 'cuda'\n"
      "i = u\"nccl\"\n"
      "j = \"cu\\\nda:5\"\n"  // a line continuation inside the literal
      "k = \"ncc\" \"l\"\n"
      "l = \"cudnn\"\n";
  EXPECT_EQ(leftover_lines(src), (std::vector<std::uint32_t>{3, 4, 5, 6, 7, 10, 11, 12, 14}));
}

// The walk enters only the subtrees that hold a string or a call it can report: whatever their
// depth and their context (an f-string, a call in an argument, a lambda, a default, a decorator,
// a comprehension, a call inside a message), they are found; a message's own strings and a
// docstring are not reported.
TEST(CudaLeftover, TheWalkReachesEveryReportableNodeAndNoMessage) {
  const std::string src =
      "import torch\n"
      "\n"
      "def f(model, rank, local_rank, gpu):\n"
      "    \"\"\"cuda:0 in a docstring\"\"\"\n"
      "    a = (f\"cuda:{rank}\", 1)\n"                // 5: an f-string
      "    b = [f\"cuda\"]\n"                          // 6: an f-string of one part
      "    print(\"cuda:1\", model.to(local_rank))\n"  // 7: a call inside a message
      "    g = lambda: h((\"cuda:3\", 0))\n"           // 8: in a lambda's argument
      "    c = [(k, \"nccl\") for k in model]\n"       // 9: in a comprehension
      "    raise ValueError(\"nccl\")\n"               // 10: a message: not reported
      "\n"
      "def g(x=torch.device(0), y=(\"cuda:2\",)):\n"  // 12: in a default
      "    return x\n"
      "\n"
      "@dec(names=(\"cuda:5\",))\n"  // 15: in a decorator
      "def h(t):\n"
      "    assert t, f\"cuda:{t}\"\n"    // 17: an assert's message
      "    return t.new(device=gpu)\n";  // 18: device=
  EXPECT_EQ(leftover_lines(src), (std::vector<std::uint32_t>{5, 6, 7, 8, 9, 12, 15, 18}));
}

}  // namespace
}  // namespace torchport::rules
