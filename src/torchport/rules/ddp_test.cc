// TP410-TP417 (--distributed): the names the rewrite adds are plain ones, unless the script
// already uses one.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <string>
#include <vector>

namespace torchport::rules {
namespace {

std::string distribute(const std::string& src) {
  syntax::Tree tree = syntax::parse("train.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = "cpu";
  o.distributed = true;
  FileResult r = check(tree, catalogue::Catalogue::builtin(), o);
  std::vector<fix::Fix> fixes;
  for (const Finding& f : r.findings)
    if (f.fix) fixes.push_back(*f.fix);
  fix::ApplyResult ar = fix::apply_fixes(src, fixes);
  EXPECT_TRUE(syntax::parse("out.py", ar.text).ok()) << ar.text;
  return ar.text;
}

// --distributed on a module that train.py imports, for cpu.
FileResult check_imported(const syntax::Tree& tree) {
  Options o;
  o.target = "cpu";
  o.distributed = true;
  o.distributed_companion = true;
  o.distributed_main = "train.py";
  return check(tree, catalogue::Catalogue::builtin(), o);
}

const std::string kScript =
    "import torch\n"
    "from torch.utils.data import DataLoader, TensorDataset\n"
    "data = TensorDataset(torch.ones(8, 2))\n"
    "loader = DataLoader(data, batch_size=4)\n"
    "model = torch.nn.Linear(2, 1)\n"
    "for epoch in range(2):\n"
    "    for (x,) in loader:\n"
    "        print(model(x).sum())\n";

TEST(DistributedNames, PlainNamesWhenTheScriptHasNone) {
  const std::string out = distribute(kScript);
  for (const char* name :
       {"import torch.distributed as dist\n", "local_rank = int(", "model = wrap_ddp(model)",
        "sampler=shard_sampler(data", "batch_size=per_rank_batch(4)", "rank0_only(print)(",
        "def is_rank0():", "cleanup_distributed()"}) {
    EXPECT_NE(out.find(name), std::string::npos) << name << "\n" << out;
  }
  EXPECT_EQ(out.find("_tp_"), std::string::npos) << out;
  EXPECT_EQ(out.find("_Tp"), std::string::npos) << out;
}

TEST(DistributedNames, ANameTheScriptUsesKeepsItsPrefixedSpelling) {
  // The script has its own local_rank and is_rank0: the rewrite's are _tp_local_rank and
  // _tp_rank0; the other helpers keep their plain names.
  const std::string out = distribute(kScript +
                                     "local_rank = 3\n"
                                     "def is_rank0():\n"
                                     "    return local_rank == 0\n");
  EXPECT_NE(out.find("_tp_local_rank = int("), std::string::npos) << out;
  EXPECT_NE(out.find("def _tp_rank0():"), std::string::npos) << out;
  EXPECT_NE(out.find("return fn if _tp_rank0() else"), std::string::npos) << out;
  EXPECT_NE(out.find("local_rank = 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("model = wrap_ddp(model)"), std::string::npos) << out;
}

TEST(DistributedImports, CandidatePathsOfEachImportForm) {
  syntax::Tree tree = syntax::parse("src/pkg/train.py",
                                    "import utils\n"
                                    "import a.b as ab\n"
                                    "from data import build\n"
                                    "from .engine import step\n"
                                    "from .. import common\n"
                                    "from models import net\n"
                                    "from torch.utils.data import DataLoader\n");
  ASSERT_TRUE(tree.ok());
  const std::vector<std::string> got = imported_module_paths(tree, "src/pkg/train.py", "src/pkg");
  auto has = [&](const std::string& p) {
    return std::find(got.begin(), got.end(), p) != got.end();
  };
  // absolute: from the entry script's directory (sys.path[0]) and from the project root
  EXPECT_TRUE(has("src/pkg/utils.py"));
  EXPECT_TRUE(has("utils.py"));
  EXPECT_TRUE(has("src/pkg/a/__init__.py"));
  EXPECT_TRUE(has("src/pkg/a/b.py"));
  EXPECT_TRUE(has("src/pkg/data.py"));
  EXPECT_TRUE(has("src/pkg/models/net.py"));  // `from models import net`: net may be a module
  // relative: from the importing file's own package
  EXPECT_TRUE(has("src/pkg/engine.py"));
  EXPECT_TRUE(has("src/common.py"));
  EXPECT_TRUE(has("src/common/__init__.py"));
  EXPECT_FALSE(has("engine.py"));
  // torch is looked for in the project too; the driver keeps only paths that exist
  EXPECT_TRUE(has("torch/utils/data.py"));
}

TEST(DistributedImports, ImportedModuleGetsOnlyTheHelpersItCalls) {
  const std::string src =
      "import torch\n"
      "\n"
      "def save(model, path):\n"
      "    torch.save(model.state_dict(), path)\n";
  syntax::Tree tree = syntax::parse("utils.py", src);
  ASSERT_TRUE(tree.ok());
  FileResult r = check_imported(tree);
  std::vector<fix::Fix> fixes;
  for (const Finding& f : r.findings)
    if (f.fix) fixes.push_back(*f.fix);
  const std::string out = fix::apply_fixes(src, fixes).text;
  EXPECT_TRUE(syntax::parse("out.py", out).ok()) << out;
  EXPECT_NE(out.find("if is_rank0(): torch.save(unwrap_ddp(model).state_dict(), path)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("return int(os.environ.get(\"RANK\", \"0\")) == 0"), std::string::npos);
  EXPECT_NE(out.find("torchrun starts for train.py"), std::string::npos);
  // nothing of the entry script's set-up: no process group, no clean-up, no unused helper
  for (const char* absent : {"init_process_group", "cleanup_distributed", "shard_sampler",
                             "per_rank_batch", "rank0_only", "def wrap_ddp", "MASTER_PORT"})
    EXPECT_EQ(out.find(absent), std::string::npos) << absent << "\n" << out;
}

TEST(DistributedImports, ImportedModuleWithNothingToDistributeIsUnchanged) {
  const std::string src = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n";
  syntax::Tree tree = syntax::parse("net.py", src);
  FileResult r = check_imported(tree);
  for (const Finding& f : r.findings) EXPECT_FALSE(f.code.starts_with("TP41")) << f.code;
}

TEST(DistributedImports, FunctionsThatBuildATrainingLoader) {
  syntax::Tree tree = syntax::parse("pkg/data.py",
                                    "from torch.utils.data import DataLoader\n"
                                    "def build(ds):\n"
                                    "    train_loader = DataLoader(ds, batch_size=4)\n"
                                    "    val_loader = DataLoader(ds, batch_size=4)\n"
                                    "    return train_loader, val_loader\n"
                                    "def make_eval_loader(ds):\n"
                                    "    return DataLoader(ds)\n"
                                    "def make(ds):\n"
                                    "    def inner():\n"
                                    "        return DataLoader(ds)\n"
                                    "    return inner()\n"
                                    "def sampled(ds, s):\n"
                                    "    return DataLoader(ds, sampler=s)\n"
                                    "class Data:\n"
                                    "    def loader(self):\n"
                                    "        return DataLoader(self.ds)\n");
  ASSERT_TRUE(tree.ok());
  const semantic::Model model(tree);
  // an evaluation loader alone does not count, nor one with its own sampler (not sharded); a
  // nested function counts as its outer one; a method is not a module-level function
  EXPECT_EQ(loader_functions(tree, model, "pkg.data"),
            (std::vector<std::string>{"pkg.data.build", "pkg.data.make"}));
}

TEST(DistributedImports, ModelBoundAtImportTimeIsNotWrappedThere) {
  // DDP needs the process group, which the entry script sets up after its imports.
  const std::string src = "import torch\nmodel = torch.nn.Linear(2, 1)\n";
  syntax::Tree tree = syntax::parse("shared.py", src);
  FileResult r = check_imported(tree);
  bool flagged = false;
  for (const Finding& f : r.findings) {
    if (f.code != "TP411") continue;
    EXPECT_EQ(f.op, Operation::Unsupported);
    EXPECT_FALSE(f.fix.has_value());
    EXPECT_NE(f.message.find("before train.py sets up the process group"), std::string::npos);
    flagged = true;
  }
  EXPECT_TRUE(flagged);
}

}  // namespace
}  // namespace torchport::rules
