// TP100 on a CUDA tensor type the target does not have: a type test says what it is.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/codes_test_util.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

using testing::migrated;

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
    // A construction, and a tensor built in isinstance's first argument, are not type tests:
    // they are rewritten (LegacyConstructorsBecomeTheCpuClassOnTheDevice); the type tests are
    // reported.
    const std::vector<Finding> fs = unsupported(src, target);
    ASSERT_EQ(fs.size(), 2u) << target;
    EXPECT_NE(fs[0].message.find("in a type test: no tensor is one on " + target),
              std::string::npos)
        << fs[0].message;
    EXPECT_NE(fs[1].message.find("in a type test"), std::string::npos) << fs[1].message;
  }
}

TEST(CudaApi, LegacyConstructorsBecomeTheCpuClassOnTheDevice) {
  const std::string src =
      "import torch\n"
      "a = torch.cuda.ByteTensor(16)\n"
      "b = torch.cuda.FloatTensor([1.0, x])\n"
      "torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)\n";
  EXPECT_EQ(migrated(src, "cpu"),
            "import torch\n"
            "a = torch.ByteTensor(16)\n"
            "b = torch.FloatTensor([1.0, x])\n"
            "torch.set_default_tensor_type(torch.BFloat16Tensor)\n");
  // The target's device: the CPU class takes the same arguments (sizes or data) and dtype.
  // set_default_tensor_type has no class to name there: the CPU's of the same dtype (built on
  // the CPU, moved where the script moves them; labelled).
  EXPECT_EQ(migrated(src, "xpu"),
            "import torch\n"
            "a = torch.ByteTensor(16).to(\"xpu\")\n"
            "b = torch.FloatTensor([1.0, x]).to(\"xpu\")\n"
            "torch.set_default_tensor_type(torch.BFloat16Tensor)\n");
}

TEST(CudaApi, AValueInPlaceOfACallKeepsThePlace) {
  // Found by the migrate fuzzer: `0.real` is not Python (`0.` is a float), and `f"{{}}"` is an
  // escaped brace, not a dict.
  const std::string src =
      "import torch\n"
      "a = torch.cuda.max_memory_allocated().real\n"
      "b = (torch.cuda.max_memory_allocated()).real\n"
      "c = torch.cuda.max_memory_allocated() + 1\n"
      "d = 7 % torch.cuda.device_count()\n"
      "e = f\"{torch.cuda.memory_stats()}\"\n";
  EXPECT_EQ(migrated(src, "cpu"),
            "import torch\n"
            "a = (0).real\n"
            "b = (0).real\n"
            "c = 0 + 1\n"
            "d = 7 % 1\n"
            "e = f\"{({})}\"\n");
  EXPECT_EQ(migrated(src, "mps"),
            "import torch\n"
            "a = (0).real\n"
            "b = (0).real\n"
            "c = 0 + 1\n"
            "d = 7 % torch.mps.device_count()\n"
            "e = f\"{torch.cuda.memory_stats()}\"\n");
}

TEST(CudaApi, ASeedCallThatWouldRepeatTheLineBeforeIsDeleted) {
  const std::string src =
      "import torch\n"
      "def set_seed(seed):\n"
      "    torch.manual_seed(seed)\n"
      "    torch.cuda.manual_seed(seed)  # gpu\n"
      "    torch.cuda.manual_seed_all(seed)\n"
      "torch.manual_seed(1)\n"
      "torch.cuda.manual_seed(2)\n"
      "torch.manual_seed(3)\n"
      "torch.cuda.manual_seed(3); x = 1\n";
  for (const std::string target : {"cpu", "accelerator"}) {
    EXPECT_EQ(migrated(src, target),
              "import torch\n"
              "def set_seed(seed):\n"
              "    torch.manual_seed(seed)\n"
              "torch.manual_seed(1)\n"
              "torch.manual_seed(2)\n"
              "torch.manual_seed(3)\n"
              "torch.manual_seed(3); x = 1\n")
        << target;
  }
  // A target with its own seed call keeps every line.
  EXPECT_NE(migrated(src, "npu").find("torch_npu.npu.manual_seed_all(seed)"), std::string::npos);
}

TEST(CudaApi, ACallTheCodeAlreadyGuardsGetsNoGuardOfItsOwn) {
  const std::string src =
      "import torch\n"
      "a = torch.cuda.is_available() and torch.cuda.is_bf16_supported()\n"
      "b = torch.cuda.memory_reserved() if torch.cuda.is_available() else 0\n"
      "if x and torch.cuda.is_available():\n"
      "    torch.cuda.empty_cache()\n"
      "c = torch.cuda.max_memory_allocated()\n"
      "d = torch.cuda.is_available() or torch.cuda.max_memory_allocated()\n"
      "if not torch.cuda.is_available():\n"
      "    torch.cuda.empty_cache()\n"
      "if torch.cuda.is_available():\n"
      "    def f():\n"
      "        return torch.cuda.max_memory_allocated()\n";
  EXPECT_EQ(migrated(src, "accelerator"),
            "import torch\n"
            "a = torch.accelerator.is_available() and "
            "torch.get_device_module().is_bf16_supported()\n"
            "b = torch.accelerator.memory_reserved() if torch.accelerator.is_available() else 0\n"
            "if x and torch.accelerator.is_available():\n"
            "    torch.accelerator.empty_cache()\n"
            "c = (torch.accelerator.max_memory_allocated() if torch.accelerator.is_available() "
            "else 0)\n"
            "d = torch.accelerator.is_available() or (torch.accelerator.max_memory_allocated() if "
            "torch.accelerator.is_available() else 0)\n"
            "if not torch.accelerator.is_available():\n"
            "    if torch.accelerator.is_available():\n"
            "        torch.accelerator.empty_cache()\n"
            "if torch.accelerator.is_available():\n"
            "    def f():\n"
            "        return (torch.accelerator.max_memory_allocated() if "
            "torch.accelerator.is_available() else 0)\n");
}

}  // namespace
}  // namespace torchport::rules
