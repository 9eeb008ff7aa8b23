// TP900: where --target accelerator puts the device variable it needs (issue 19 §2): in the
// narrowest scope that covers every use.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

const std::string kVar =
    "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "
    "torch.device(\"cpu\")\n";

/// The accelerator output of `src`, and its TP900 messages in `messages`.
std::string migrate(const std::string& src, std::vector<std::string>* messages = nullptr) {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = "accelerator";
  FileResult r = check(tree, catalogue::Catalogue::builtin(), o);
  std::vector<fix::Fix> fixes;
  for (const Finding& f : r.findings) {
    if (f.fix) fixes.push_back(*f.fix);
    if (messages && f.code == "TP900") messages->push_back(f.message);
  }
  fix::ApplyResult ar = fix::apply_fixes(src, fixes);
  for (fix::FixOutcome oc : ar.outcomes) EXPECT_EQ(oc, fix::FixOutcome::Applied);
  EXPECT_TRUE(syntax::parse("out.py", ar.text).ok()) << ar.text;
  return ar.text;
}

TEST(DeviceVariable, OneFunctionUsesItSoItIsLocalAfterTheDocstring) {
  std::vector<std::string> messages;
  const std::string out = migrate(
      "import torch\n"
      "\n"
      "def build(model):\n"
      "    \"\"\"Puts the model on the GPU.\"\"\"\n"
      "    # first the weights\n"
      "    return model.cuda()\n",
      &messages);
  EXPECT_EQ(out,
            "import torch\n"
            "\n"
            "def build(model):\n"
            "    \"\"\"Puts the model on the GPU.\"\"\"\n"
            "    # first the weights\n"
            "    " +
                kVar + "    return model.to(device)\n");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0], "insert the device variable at the start of build() (torch >= 2.6)");
}

TEST(DeviceVariable, AMethodAndTheNestedFunctionsOfOneFunctionShareOneLocal) {
  // Uses in a nested function and in a class body inside the function read the closure.
  const std::string out = migrate(
      "import torch\n"
      "class Trainer:\n"
      "    def fit(self, xs):\n"
      "        def move(x):\n"
      "            return x.cuda()\n"
      "        class Batch:\n"
      "            zero = torch.zeros(1).cuda()\n"
      "        return [move(x) for x in xs], Batch\n");
  EXPECT_EQ(out,
            "import torch\n"
            "class Trainer:\n"
            "    def fit(self, xs):\n"
            "        " +
                kVar +
                "        def move(x):\n"
                "            return x.to(device)\n"
                "        class Batch:\n"
                "            zero = torch.zeros(1).to(device)\n"
                "        return [move(x) for x in xs], Batch\n");
}

TEST(DeviceVariable, TwoFunctionsShareOneModuleLevelVariable) {
  const std::string out = migrate(
      "import torch\n"
      "def a(x):\n"
      "    return x.cuda()\n"
      "def b(x):\n"
      "    return x.cuda()\n");
  EXPECT_EQ(out, "import torch\n" + kVar +
                     "def a(x):\n"
                     "    return x.to(device)\n"
                     "def b(x):\n"
                     "    return x.to(device)\n");
}

TEST(DeviceVariable, ModuleLevelWhenTheFunctionHasNoLineOfItsOwn) {
  // A one-line def and a module-level lambda: no body line to put the definition on.
  EXPECT_EQ(migrate("import torch\n"
                    "def a(x): return x.cuda()\n"),
            "import torch\n" + kVar + "def a(x): return x.to(device)\n");
  EXPECT_EQ(migrate("import torch\n"
                    "move = lambda x: x.cuda()\n"),
            "import torch\n" + kVar + "move = lambda x: x.to(device)\n");
}

TEST(DeviceVariable, ADefaultValueRunsAtModuleLevel) {
  // The default of a parameter is evaluated where the def runs, not in the function.
  EXPECT_EQ(migrate("import torch\n"
                    "def a(x, y=torch.zeros(1).cuda()):\n"
                    "    return x\n"),
            "import torch\n" + kVar +
                "def a(x, y=torch.zeros(1).to(device)):\n"
                "    return x\n");
}

TEST(DeviceVariable, TheFunctionsFirstStatementMayItselfBeRewritten) {
  // The definition comes before the rewritten first statement, at its indentation.
  EXPECT_EQ(migrate("import torch\n"
                    "def a(rank):\n"
                    "\ttorch.cuda.set_device(rank)\n"
                    "\treturn torch.zeros(1).cuda(rank)\n"),
            "import torch\n"
            "def a(rank):\n"
            "\t" +
                kVar +
                "\tif torch.accelerator.is_available():\n"
                "\t\ttorch.accelerator.set_device_index(rank)\n"
                "\treturn torch.zeros(1).to(torch.device(device.type, rank))\n");
}

}  // namespace
}  // namespace torchport::rules
