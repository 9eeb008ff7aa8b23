// The rule codes of project_rules.h: the output pass, TP902's requirements that follow the
// migrated code, TP410's launcher finding and the project-level advice.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/project_rules.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

const catalogue::Catalogue& cat() { return catalogue::Catalogue::builtin(); }

const std::string kFlags =
    "import argparse\n"
    "import torch\n"
    "p = argparse.ArgumentParser()\n"
    "p.add_argument('--no-cuda', action='store_true', default=False)\n"
    "args = p.parse_args()\n"
    "use_cuda = not args.no_cuda and torch.cuda.is_available()\n";

TEST(OutputPass, RunsTheOutputFamiliesAsTheIdiomRuleDoes) {
  syntax::Tree tree = syntax::parse("t.py", kFlags);
  ASSERT_TRUE(tree.ok());
  const semantic::Model model(tree);
  Options o;
  o.target = "npu";
  EXPECT_TRUE(output_pass_needed(tree, o));
  std::vector<Finding> direct = port_device_idiom(tree, model, cat(), o);
  std::vector<Finding> pass = check_output(tree, model, cat(), o).findings;
  ASSERT_FALSE(direct.empty());
  ASSERT_EQ(pass.size(), direct.size());
  for (std::size_t i = 0; i < pass.size(); ++i) {
    EXPECT_EQ(pass[i].code, "TP310");
    EXPECT_EQ(pass[i].message, direct[i].message);
    EXPECT_EQ(pass[i].begin, direct[i].begin);
  }
  // --keep-device-flags, or a script without a CUDA flag: nothing to look for.
  o.port_idiom = false;
  EXPECT_FALSE(output_pass_needed(tree, o));
  o.port_idiom = true;
  EXPECT_FALSE(output_pass_needed(syntax::parse("u.py", "import torch\n"), o));
}

// The companions' pairs in data/catalogue/companions/torch.json, from their wheels: torchvision
// 0.20.0 is built for torch 2.5.0, 0.24.0/0.24.1 for 2.9.0/2.9.1, 0.28.0 for 2.13.0; torchaudio
// 2.9.1 for 2.9.1; the last torchtext there is 0.17.2, for torch 2.2.2.
TEST(FollowRequirements, CompanionsPinnedBelowTheRaisedFloorMoveWithIt) {
  const std::string text =
      "torch>=2.0\n"
      "torchvision==0.20.0\n"
      "torchaudio==2.5.1 ; python_version >= \"3.8\"\n"
      "torchtext==0.17.2\n"
      "torchvision<0.21\n"
      "numpy==1.26.4\n";
  std::vector<Finding> f = move_torch_companions("requirements.txt", text, "2.9", cat());
  ASSERT_EQ(f.size(), 4u);
  std::vector<fix::Fix> fixes;
  int reported = 0;
  for (const Finding& x : f) {
    EXPECT_EQ(x.code, "TP902");
    if (x.fix) fixes.push_back(*x.fix);
    if (x.op == Operation::Unsupported) ++reported;
  }
  EXPECT_EQ(reported, 2);
  EXPECT_EQ(fix::apply_fixes(text, fixes).text,
            "torch>=2.0\n"
            "torchvision==0.24.1\n"
            "torchaudio==2.9.1 ; python_version >= \"3.8\"\n"
            "torchtext==0.17.2\n"
            "torchvision<0.21\n"
            "numpy==1.26.4\n");
  EXPECT_NE(f[0].message.find("is built for torch 2.5.0"), std::string::npos) << f[0].message;
  EXPECT_NE(f[2].message.find("no torchtext release is built for it"), std::string::npos)
      << f[2].message;
  EXPECT_NE(f[3].message.find("the upper bound torchvision<0.21 excludes torchvision 0.24.1"),
            std::string::npos)
      << f[3].message;
  // pyproject.toml's quoted requirements; a pin older than the table moves too.
  const std::string toml = "dependencies = [\"torchvision==0.14.1\", \"torch\"]\n";
  std::vector<Finding> g = move_torch_companions("pyproject.toml", toml, "2.13", cat());
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(fix::apply_fixes(toml, {*g[0].fix}).text,
            "dependencies = [\"torchvision==0.28.0\", \"torch\"]\n");
  // A release built for the floor or later, another file, or no floor: nothing.
  EXPECT_TRUE(
      move_torch_companions("requirements.txt", "torchvision==0.25.0\n", "2.9", cat()).empty());
  EXPECT_TRUE(move_torch_companions("setup.py", "torchvision==0.20.0\n", "2.9", cat()).empty());
  EXPECT_TRUE(
      move_torch_companions("requirements.txt", "torchvision==0.20.0\n", "", cat()).empty());
}

TEST(FollowRequirements, TheTorchBoundAndTheVendorPackage) {
  ProjectRequirements req{"2.6", {"a.py", "b.py", "c.py", "d.py", "e.py"}};
  std::vector<Finding> f =
      follow_requirements("requirements.txt", "torch\nnumpy\n", *cat().target("npu"), req);
  ASSERT_EQ(f.size(), 2u);
  for (const Finding& x : f) EXPECT_EQ(x.code, "TP902");
  EXPECT_NE(f[1].message.find("imports torch_npu: a.py, b.py, c.py and 2 more"), std::string::npos)
      << f[1].message;
  std::vector<fix::Fix> fixes = {*f[0].fix, *f[1].fix};
  EXPECT_EQ(fix::apply_fixes("torch\nnumpy\n", fixes).text, "torch>=2.6\ntorch_npu\nnumpy\n");
  // Nothing needed, nothing imported: no finding.
  EXPECT_TRUE(follow_requirements("requirements.txt", "torch\n", *cat().target("npu"), {}).empty());
}

TEST(FollowRequirements, WithoutADistributionInTheDataThePlaceIsReported) {
  const catalogue::Target& hpu = *cat().target("hpu");
  ASSERT_TRUE(hpu.requirement.empty());
  std::vector<Finding> f =
      follow_requirements("requirements.txt", "torch\n", hpu, {"", {"train.py"}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].op, Operation::Unsupported);
  EXPECT_FALSE(f[0].fix);
  EXPECT_TRUE(f[0].changes.empty());
  EXPECT_NE(f[0].message.find("the migrated code imports " + hpu.package + ": train.py"),
            std::string::npos)
      << f[0].message;
  EXPECT_NE(f[0].message.find("add the requirement by hand"), std::string::npos);
}

TEST(LauncherFinding, CoversTheWholeGeneratedFile) {
  const std::string text = "#!/bin/sh\ntorchrun train.py\n";
  Finding f = launcher_finding("run_distributed.sh", text, "train.py", "npu");
  EXPECT_EQ(f.code, "TP410");
  EXPECT_EQ(f.op, Operation::Insert);
  EXPECT_EQ(f.api, "run_distributed.sh");
  EXPECT_EQ(f.begin, 0u);
  EXPECT_EQ(f.end, text.size());
  EXPECT_FALSE(f.fix);
  EXPECT_EQ(f.message,
            "launcher: starts train.py on every npu device of the node (run_distributed.sh "
            "--nproc N overrides the count)");
}

TEST(ProjectAdvice, OneRowPerSettingWithoutARange) {
  catalogue::AdviceTable t;
  t.project = {{"ENV_A", "set it"}, {"ENV_B", "unset it"}};
  std::vector<Advice> a = project_advice(t);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].api, "ENV_A");
  EXPECT_EQ(a[0].tip, "project-level (no file or line): set it");
  EXPECT_EQ(a[1].kind, Advice::Kind::Performance);
  EXPECT_EQ(a[1].begin, 0u);
}

}  // namespace
}  // namespace torchport::rules
