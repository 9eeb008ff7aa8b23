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

}  // namespace
}  // namespace torchport::rules
