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

}  // namespace
}  // namespace torchport::rules
