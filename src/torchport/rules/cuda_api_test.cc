// TP100 on a CUDA tensor type the target does not have: a type test says what it is.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

std::vector<Finding> unsupported(const std::string& src, const std::string& target) {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = target;
  std::vector<Finding> out;
  for (Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings)
    if (f.op == Operation::Unsupported && f.code == "TP100") out.push_back(std::move(f));
  return out;
}

TEST(CudaApi, ATypeTestIsReportedAsOneNotAsAConstruction) {
  const std::string src =
      "import torch\n"
      "a = isinstance(x, torch.cuda.FloatTensor)\n"
      "b = isinstance(x, (torch.cuda.FloatTensor, torch.FloatTensor))\n"
      "c = torch.cuda.FloatTensor(2)\n"
      "d = isinstance(torch.cuda.FloatTensor(2), int)\n";
  for (const std::string target : {"cpu", "mps"}) {
    const std::vector<Finding> fs = unsupported(src, target);
    ASSERT_EQ(fs.size(), 4u) << target;
    EXPECT_NE(fs[0].message.find("in a type test: no tensor is one on " + target),
              std::string::npos)
        << fs[0].message;
    EXPECT_NE(fs[1].message.find("in a type test"), std::string::npos) << fs[1].message;
    // A construction, and a tensor built in isinstance's first argument, are not type tests.
    EXPECT_EQ(fs[2].message.find("type test"), std::string::npos) << fs[2].message;
    EXPECT_EQ(fs[3].message.find("type test"), std::string::npos) << fs[3].message;
  }
}

}  // namespace
}  // namespace torchport::rules
