// TP600 finds the displays of activities in the tree: an f-string's replacement field, a
// parenthesized expression and a subscript's brackets are not lists of activities, and an element
// in parentheses is still one.
#include <gtest/gtest.h>
#include <torchport/rules/codes_test_util.h>

#include <string>

namespace torchport::rules {
namespace {

using testing::migrated;

TEST(ProfilerActivity, OnlyAnElementOfADisplayIsRewritten) {
  // `f"{*x}"` and `(*x)` are not Python: before, the rule read `{` and `(` as displays.
  const std::string src =
      "from torch.profiler import ProfilerActivity as PA\n"
      "a = f\"{PA.CUDA}\"\n"
      "b = (PA.CUDA)\n"
      "c = x[PA.CUDA]\n"
      "d = [(PA.CPU), PA.CUDA]\n"
      "e = (PA.CUDA,)\n";
  EXPECT_EQ(migrated(src, "accelerator"),
            "from torch.profiler import ProfilerActivity as PA\n"
            "import torch\n"
            "a = f\"{PA.CUDA}\"\n"
            "b = (PA.CUDA)\n"
            "c = x[PA.CUDA]\n"
            "d = [(PA.CPU), *(torch.profiler.supported_activities() - {PA.CPU})]\n"
            "e = (*torch.profiler.supported_activities(),)\n");
  // cpu: CPU listed in parentheses is still listed, so CUDA is deleted, not made a second CPU
  // (the profiler raises on an activity listed twice).
  EXPECT_EQ(migrated(src, "cpu"),
            "from torch.profiler import ProfilerActivity as PA\n"
            "a = f\"{PA.CUDA}\"\n"
            "b = (PA.CUDA)\n"
            "c = x[PA.CUDA]\n"
            "d = [(PA.CPU)]\n"
            "e = (PA.CPU,)\n");
}

}  // namespace
}  // namespace torchport::rules
