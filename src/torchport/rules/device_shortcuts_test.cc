// The shortcuts of the device family (TP301/TP302 read only the Name tokens, and nothing when
// the text never says "cuda") still find the `.cuda()` / `.is_cuda` sites.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/codes_test_util.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <string>
#include <vector>

namespace torchport::rules {
namespace {

using testing::codes;

TEST(DeviceShortcuts, TheOnlyCudaInTheTextIsTheMethodOrTheAttribute) {
  // No "cuda" string, no torch.cuda reference: the method's and the attribute's names are the
  // only place the text says it.
  const auto method = codes("import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.cuda()\n");
  EXPECT_NE(std::find(method.begin(), method.end(), "TP301"), method.end());
  const auto attribute = codes("import torch\ndef f(x):\n    return x.is_cuda\n");
  EXPECT_NE(std::find(attribute.begin(), attribute.end(), "TP302"), attribute.end());
}

TEST(DeviceShortcuts, AMethodCallOnAnImportsLineIsFoundAndTheImportedNameIsNot) {
  // `import os; x = t.cuda()` is one logical line that starts with `import`: the tree, not the
  // line's first token, tells the method call from a dotted module name.
  for (const std::string src : {"import torch\nimport os; y = torch.zeros(2).cuda()\n",
                                "import torch\nfrom os import path; y = torch.zeros(2).cuda()\n",
                                "import torch\nimport os; ok = torch.zeros(2).is_cuda\n"}) {
    const auto c = codes(src);
    EXPECT_EQ(std::count(c.begin(), c.end(), "TP301") + std::count(c.begin(), c.end(), "TP302"), 1)
        << src;
  }
  for (const std::string src :
       {"import torch\nimport apex.cuda\n", "import torch\nfrom apex.cuda import x\n",
        "import torch\nimport a.cuda as b; y = 1\n"}) {
    const auto c = codes(src);
    EXPECT_EQ(std::count(c.begin(), c.end(), "TP301"), 0) << src;
  }
}

TEST(DeviceShortcuts, AnAttributeRuleFollowsTheTreeOnAnImportsLine) {
  // The custom attribute rules (ReplaceAttributeRule) asked the line's first token too.
  std::string error;
  auto cat = catalogue::Catalogue::builtin().with_rules(
      "t.json",
      R"({"rules": {"ReplaceAttributeRule": [{"old_name": "is_foo", "new_name": "is_bar"}]}})",
      "npu", &error);
  ASSERT_TRUE(cat.has_value()) << error;
  const syntax::Tree tree =
      syntax::parse("t.py", "import os; ok = t.is_foo\nimport a.is_foo\nfrom b.is_foo import c\n");
  ASSERT_TRUE(tree.ok());
  Options o;
  o.target = "npu";
  std::vector<std::uint32_t> at;
  for (const Finding& f : check(tree, *cat, o).findings)
    if (f.code == "TP803") at.push_back(f.begin);
  EXPECT_EQ(at, std::vector<std::uint32_t>{18}) << "only `t.is_foo`, at byte 18";
}

TEST(DeviceShortcuts, AnFStringThatStartsWithCudaIsFoundFromTheModelsFStringMiddles) {
  // TP300 rewrites an f-string device whose literal text starts with "cuda" (the model's
  // FStringMiddle tokens, not a search of the text): not "cuda" after a replacement field, in a
  // format spec, in a t-string, a comment or a plain string that spells an f-string.
  const std::string src =
      "import torch\n"
      "i = 0\n"
      "x = 1\n"
      "a = torch.zeros(2).to(f\"cuda:{i}\")\n"
      "b = torch.zeros(2).to(f\"{x}cuda\")\n"
      "c = torch.zeros(2).to(f\"{x:cuda}\")\n"
      "e = torch.zeros(2).to(rf\"cuda:{i}\")\n"
      "g = torch.zeros(2).to(f\"\"\"cuda:{i}\"\"\")\n"
      "h = torch.zeros(2).to(t\"cuda:{i}\")\n"
      "k = torch.device(f\"cuda\")\n"
      "# torch.device(f\"cuda:{i}\")\n"
      "s = torch.device(\"f'cuda:{i}'\")\n"
      "m = torch.zeros(2).to(F\"cuda{i}\")\n";
  const syntax::Tree tree = syntax::parse("t.py", src);
  ASSERT_TRUE(tree.ok());
  Options o;
  o.target = "npu";
  std::vector<std::uint32_t> lines;
  for (const Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings) {
    if (f.code != "TP300" || !f.api.starts_with("f\"")) continue;  // f"cuda:..."
    lines.push_back(
        static_cast<std::uint32_t>(std::count(src.begin(), src.begin() + f.begin, '\n') + 1));
  }
  EXPECT_EQ(lines, (std::vector<std::uint32_t>{4, 7, 8, 10, 13}));
}

TEST(DeviceShortcuts, AnAssignmentToADeviceIsFoundInAnyStatementOfALine) {
  // A device string assigned to an attribute named like a device, or to a name bound to a
  // device, is migrated wherever its statement starts on the line (the lines' first tokens
  // decided before: these three were UNKNOWN rows, left as they were); an attribute not named
  // like a device is not. No value here reaches a device position (that is TP304's).
  const std::string src =
      "import torch\n"
      "class M:\n"
      "    def __init__(self):\n"
      "        z = 0; self.device = \"cuda:0\"\n"
      "        w = 1; cfg.train_device = \"cuda\"\n"
      "        self.name = \"cuda\"\n"
      "x = 1; a = device = \"cuda\" if x else \"cpu\"\n"
      "print(device)\n";
  const std::string want =
      "import torch\n"
      "import torch_npu\n"
      "class M:\n"
      "    def __init__(self):\n"
      "        z = 0; self.device = \"npu:0\"\n"
      "        w = 1; cfg.train_device = \"npu\"\n"
      "        self.name = \"cuda\"\n"
      "x = 1; a = device = \"npu\" if x else \"cpu\"\n"
      "print(device)\n";
  EXPECT_EQ(testing::migrated(src, "npu"), want);
}

}  // namespace
}  // namespace torchport::rules
