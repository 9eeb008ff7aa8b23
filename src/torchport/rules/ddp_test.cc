// TP410-TP417 (--distributed): the names the rewrite adds are plain ones, unless the script
// already uses one.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

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

}  // namespace
}  // namespace torchport::rules
