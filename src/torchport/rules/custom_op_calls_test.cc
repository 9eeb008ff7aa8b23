// TP903: every call whose called name (a Name, or an Attribute's last name) is one of the
// project's operators is reported, and no other: the family's filter on the operators' name
// lengths and first bytes turns away only names the map does not hold.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

std::vector<std::uint32_t> custom_op_lines(const std::string& src, const CustomOps& ops) {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = "npu";
  o.custom_ops = &ops;
  std::vector<std::uint32_t> lines;
  for (const Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings)
    if (f.code == "TP903") lines.push_back(tree.lines().locate(f.begin).line);
  return lines;
}

TEST(CustomOpCalls, EveryCallOfAnOperatorAndNoOther) {
  const std::string long_name(70, 'q');  // longer than 63: one length bit for all of them
  const CustomOps ops = {{"fused_adam", "csrc/a.cu"},
                         {"z", "csrc/b.cu"},
                         {"RoIAlign", "csrc/c.cpp"},
                         {long_name, "csrc/d.cu"}};
  const std::string src =
      "import ext\n"
      "ext.fused_adam(p, g)\n"  // 2: an attribute's last name
      "fused_adam(p)\n"         // 3: a name
      "fused_adamw(p)\n"        // a longer name, same first byte
      "used_adam(p)\n"          // the same length, another first byte
      "z(1)\n"                  // 6: one byte
      "y(1)\n"
      "ext.RoIAlign(x)\n"  // 8
      "ext.roialign(x)\n"
      "ext." +
      long_name +
      "()\n"  // 10
      "ext." +
      std::string(71, 'q') +
      "()\n"  // a longer name in the same length bit
      "fused_adam.x(p)\n";
  EXPECT_EQ(custom_op_lines(src, ops), (std::vector<std::uint32_t>{2, 3, 6, 8, 10}));
}

}  // namespace
}  // namespace torchport::rules
