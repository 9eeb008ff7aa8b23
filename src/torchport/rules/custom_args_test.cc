// TP800: Ascend's legacy ArgsModifyRule, read from a --rules file and applied to calls.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

struct Migrated {
  std::string out;
  FileResult result;
  std::vector<fix::FixOutcome> outcomes;  ///< of the findings with a fix, in finding order
};

/// Migrates `src` to `target` with the ArgsModifyRule list `rules` (JSON) loaded for `loaded_for`.
Migrated migrate(const std::string& rules, const std::string& src,
                 const std::string& target = "npu", const std::string& loaded_for = "npu") {
  std::string error;
  auto cat = catalogue::Catalogue::builtin().with_rules(
      "r.json", R"({"rules": {"ArgsModifyRule": )" + rules + "}}", loaded_for, &error);
  EXPECT_TRUE(cat.has_value()) << error;
  Migrated run;
  if (!cat) return run;
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = target;
  run.result = check(tree, *cat, o);
  std::vector<fix::Fix> fixes;
  for (const Finding& f : run.result.findings)
    if (f.fix) fixes.push_back(*f.fix);
  fix::ApplyResult ar = fix::apply_fixes(src, fixes);
  run.out = ar.text;
  run.outcomes = ar.outcomes;
  EXPECT_TRUE(syntax::parse("out.py", run.out).ok()) << run.out;
  return run;
}

/// "CODE OP api: message" of every finding but the insertions (TP900).
std::vector<std::string> findings(const Migrated& run) {
  std::vector<std::string> out;
  for (const Finding& f : run.result.findings)
    if (f.code != "TP900")
      out.push_back(f.code + " " + std::string(to_string(f.op)) + " " + f.api + ": " + f.message);
  return out;
}

TEST(CustomArgs, ReplacesAPositionalArgumentOfAMethodByItsLastName) {
  Migrated r = migrate(R"([{"func_name": "to", "arg_idx": 0, "arg_new": "f'npu:{DEVICE_ID}'"}])",
                       "import torch\n"
                       "x = torch.ones(2).to(dev, non_blocking=True)\n"
                       "y = x.to(\"cuda\")\n"
                       "def to(a, b):\n"
                       "    return a\n");
  EXPECT_EQ(r.out,
            "import torch\n"
            "import torch_npu\n"
            "import os\n"
            "DEVICE_ID = int(os.environ.get(\"DEVICE_ID\", \"0\"))\n"
            "x = torch.ones(2).to(f'npu:{DEVICE_ID}', non_blocking=True)\n"
            "y = x.to(f'npu:{DEVICE_ID}')\n"
            "def to(a, b):\n"
            "    return a\n");
  // The built-in rewrite of "cuda" (TP300) is superseded by the custom rule, not reported;
  // DEVICE_ID is defined since arg_new uses it.
  EXPECT_EQ(findings(r), (std::vector<std::string>{
                             "TP800 MODIFY to: change the arg at position 0 of function to to "
                             "f'npu:{DEVICE_ID}'",
                             "TP800 MODIFY to: change the arg at position 0 of function to to "
                             "f'npu:{DEVICE_ID}'",
                         }));
  for (fix::FixOutcome o : r.outcomes) EXPECT_EQ(o, fix::FixOutcome::Applied);
}

TEST(CustomArgs, ReplacesTheValueOfAKeywordArgumentThroughImportsAndAliases) {
  Migrated r =
      migrate(R"([{"func_name": "torch.zeros", "arg_keyword": "device", "arg_new": "'npu'"}])",
              "import torch as t\n"
              "from torch import zeros as z\n"
              "a = t.zeros(2, device=d)\n"
              "b = z(2, dtype=t.float16, device=d)\n"
              "c = t.ones(2, device=d)\n"
              "e = mylib.zeros(2, device=d)\n"
              "f = t.zeros(2, dev=d)\n",
              "cpu", "cpu");
  EXPECT_EQ(r.out,
            "import torch as t\n"
            "from torch import zeros as z\n"
            "a = t.zeros(2, device='npu')\n"
            "b = z(2, dtype=t.float16, device='npu')\n"
            "c = t.ones(2, device=d)\n"
            "e = mylib.zeros(2, device=d)\n"
            "f = t.zeros(2, dev=d)\n");
  EXPECT_EQ(findings(r),
            (std::vector<std::string>{
                "TP800 MODIFY torch.zeros: change the keyword arg device of function torch.zeros "
                "to 'npu'",
                "TP800 MODIFY torch.zeros: change the keyword arg device of function torch.zeros "
                "to 'npu'",
            }));
}

TEST(CustomArgs, MatchesAQualifiedNameOnlyThroughItsImport) {
  Migrated r = migrate(R"([{"func_name": "CC.DD.fn", "arg_idx": 1, "arg_new": "20"}])",
                       "import CC.DD as CD\n"
                       "from CC.DD import fn as g\n"
                       "CD.fn(1, 2)\n"
                       "g(1, 2)\n"
                       "other.fn(1, 2)\n"
                       "fn(1, 2)\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "import CC.DD as CD\n"
            "from CC.DD import fn as g\n"
            "CD.fn(1, 20)\n"
            "g(1, 20)\n"
            "other.fn(1, 2)\n"
            "fn(1, 2)\n");
}

TEST(CustomArgs, ADotlessNameAlsoMatchesTheLastComponentOfTheQualifiedName) {
  Migrated r = migrate(R"([{"func_name": "zeros", "arg_idx": 0, "arg_new": "3"}])",
                       "from torch import zeros as z\n"
                       "z(2)\n"
                       "np.zeros(2)\n"
                       "zeros(2)\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "from torch import zeros as z\n"
            "z(3)\n"
            "np.zeros(3)\n"
            "zeros(3)\n");
}

TEST(CustomArgs, DeletesArgumentsWithTheirCommas) {
  Migrated r = migrate(R"([{"func_name": "f", "arg_idx": 1, "arg_new": ""},
                      {"func_name": "g", "arg_keyword": "pin_memory", "arg_new": ""},
                      {"func_name": "h", "arg_idx": 0, "arg_new": ""},
                      {"func_name": "h", "arg_idx": 1, "arg_new": ""}])",
                       "f(a, b, c)\n"
                       "f(a, b)\n"
                       "f(a, b,)\n"
                       "f(a)\n"
                       "g(pin_memory=True)\n"
                       "g(x, pin_memory=True)\n"
                       "g(pin_memory=True, y=1)\n"
                       "h(a, b)\n"
                       "h(a, b, c)\n"
                       "h(a, b, c=1)\n"
                       "f(\n"
                       "    a,  # first\n"
                       "    b,  # second\n"
                       ")\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "f(a, c)\n"
            "f(a)\n"
            "f(a,)\n"
            "f(a)\n"
            "g()\n"
            "g(x)\n"
            "g(y=1)\n"
            "h()\n"
            "h(c)\n"
            "h(c=1)\n"
            "f(\n"
            "    a,  # second\n"
            ")\n");
  ASSERT_FALSE(r.result.findings.empty());
  EXPECT_EQ(r.result.findings[0].op, Operation::Delete);
  EXPECT_EQ(r.result.findings[0].message, "delete the arg at position 1 of function f");
  EXPECT_EQ(r.result.findings[4].message, "delete the keyword arg pin_memory of function g");
  for (fix::FixOutcome o : r.outcomes) EXPECT_EQ(o, fix::FixOutcome::Applied);
}

TEST(CustomArgs, AnArgumentAnotherRuleAppendsSurvivesDeletingAllTheOthers) {
  // TP300 appends map_location to torch.load calls without one.
  Migrated r = migrate(R"([{"func_name": "torch.load", "arg_idx": 0, "arg_new": ""}])",
                       "import torch\n"
                       "a = torch.load(p)\n"
                       "b = torch.load(p, weights_only=True)\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "import torch\n"
            "a = torch.load(map_location=\"cpu\")\n"
            "b = torch.load(weights_only=True, map_location=\"cpu\")\n");
}

TEST(CustomArgs, SkipsArgumentsThatMatchTheWhiteList) {
  Migrated r = migrate(R"([{"func_name": "to", "arg_idx": 0, "arg_new": "'npu'",
                       "white_list": ["cpu", "float", "^self\\."]}])",
                       "x.to(\"cpu\")\n"
                       "x.to(torch.float16)\n"
                       "x.to(self.device)\n"
                       "x.to(dev)\n"
                       "x.to(my.self.device)\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "x.to(\"cpu\")\n"
            "x.to(torch.float16)\n"
            "x.to(self.device)\n"
            "x.to('npu')\n"
            "x.to('npu')\n");
}

TEST(CustomArgs, ReplaceDeviceIntStandsForTheOldArgument) {
  Migrated r = migrate(R"([{"func_name": "torch.empty", "arg_keyword": "device",
                       "arg_new": "f'npu:{replace_device_int}' if isinstance(replace_device_int, int) else replace_device_int"},
                      {"func_name": "add", "arg_idx": 0, "arg_new": "replace_device_int + 1"},
                      {"func_name": "same", "arg_idx": 0, "arg_new": "replace_device_int"}])",
                       "import torch\n"
                       "torch.empty(3, device=rank)\n"
                       "add(a or b)\n"
                       "add(a.b[0])\n"
                       "same(a or b)\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "import torch\n"
            "torch.empty(3, device=f'npu:{rank}' if isinstance(rank, int) else rank)\n"
            "add((a or b) + 1)\n"
            "add(a.b[0] + 1)\n"
            "same(a or b)\n");
  ASSERT_EQ(r.result.findings.size(), 3u);
  EXPECT_EQ(r.result.findings[0].message,
            "change the keyword arg device of function torch.empty to f'npu:{rank}' if "
            "isinstance(rank, int) else rank");
}

TEST(CustomArgs, KeepsOtherRulesEditsInsideAKeptArgument) {
  Migrated r = migrate(R"j([{"func_name": "to", "arg_idx": 0, "arg_new": "str(replace_device_int)"},
                      {"func_name": "set", "arg_idx": 0, "arg_new": "[replace_device_int, replace_device_int]"}])j",
                       "import torch\n"
                       "x.to(torch.cuda.current_device())\n"
                       "set(torch.cuda.current_device())\n",
                       "npu", "npu");
  EXPECT_EQ(r.out,
            "import torch\n"
            "import torch_npu\n"
            "x.to(str(torch_npu.npu.current_device()))\n"
            "set([torch_npu.npu.current_device(), torch_npu.npu.current_device()])\n");
  // Both the TP100 rewrites and the custom ones are applied (TP100's as part of TP800's fix).
  std::vector<std::string> codes;
  for (const Finding& f : r.result.findings) codes.push_back(f.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"TP900", "TP100", "TP800", "TP100", "TP800"}));
  for (fix::FixOutcome o : r.outcomes)
    EXPECT_TRUE(o == fix::FixOutcome::Applied || o == fix::FixOutcome::Duplicate);
}

TEST(CustomArgs, AnOuterRuleSeesTheEditsOfAnInnerOne) {
  Migrated r = migrate(R"([{"func_name": "g", "arg_idx": 0, "arg_new": "10"},
                      {"func_name": "f", "arg_idx": 0, "arg_new": ""},
                      {"func_name": "k", "arg_idx": 0, "arg_new": "[replace_device_int]"}])",
                       "f(g(1), 2)\n"
                       "k(g(1))\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "f(2)\n"
            "k([g(10)])\n");
  // The rewrite inside the deleted argument went with it.
  EXPECT_EQ(findings(r), (std::vector<std::string>{
                             "TP800 DELETE f: delete the arg at position 0 of function f",
                             "TP800 MODIFY k: change the arg at position 0 of function k to "
                             "[g(10)]",
                             "TP800 MODIFY g: change the arg at position 0 of function g to 10",
                         }));
}

TEST(CustomArgs, APositionAfterStarArgsIsReportedAndLeftInPlace) {
  Migrated r = migrate(R"([{"func_name": "f", "arg_idx": 1, "arg_new": "0"}])",
                       "f(a, b, *rest)\n"
                       "f(*rest, b)\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "f(a, 0, *rest)\n"
            "f(*rest, b)\n");
  EXPECT_EQ(findings(r).back(),
            "TP800 UNSUPPORTED f: cannot tell which argument is at position 1 of function f (a "
            "*args comes first): left in place");
}

TEST(CustomArgs, RulesApplyToTheTargetTheyWereLoadedFor) {
  Migrated r =
      migrate(R"([{"func_name": "f", "arg_idx": 0, "arg_new": "0"}])", "f(1)\n", "cpu", "npu");
  EXPECT_EQ(r.out, "f(1)\n");
  EXPECT_TRUE(r.result.findings.empty());
}

TEST(CustomArgs, TheFirstRuleForAnArgumentWinsAndNoOpsAreNotReported) {
  Migrated r = migrate(R"([{"func_name": "f", "arg_idx": 0, "arg_new": "'npu'"},
                      {"func_name": "f", "arg_idx": 0, "arg_new": "'mlu'"}])",
                       "f(1)\n"
                       "f('npu')\n",
                       "cpu", "cpu");
  EXPECT_EQ(r.out,
            "f('npu')\n"
            "f('npu')\n");
  EXPECT_EQ(r.result.findings.size(), 1u);
}

}  // namespace
}  // namespace torchport::rules
