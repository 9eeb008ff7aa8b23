#include <gtest/gtest.h>
#include <torchport/rules/engine.h>

namespace torchport::rules {
namespace {

TEST(CheckOther, CustomCudaOpsAreListedAndUnsupported) {
  const std::string src =
      "#include <torch/extension.h>\n"
      "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
      "  m.def(\"fused_gelu\", &fused_gelu, \"fused gelu\");\n"
      "  m.def( \"rms_norm\", &rms_norm);\n"
      "}\n"
      "TORCH_LIBRARY(myops, m) {\n"
      "  m.def(\"myops::scale(Tensor x, float s) -> Tensor\");\n"
      "}\n";
  FileResult r = check_other("csrc/ops.cu", src, Options{"npu", "", false});
  EXPECT_EQ(r.cuda_apis, (std::vector<std::string>{"fused_gelu", "rms_norm", "scale"}));
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0].op, Operation::Unsupported);
  EXPECT_EQ(r.findings[0].message, "User-defined CUDA Operator.");
  EXPECT_EQ(src.substr(r.findings[1].begin, r.findings[1].end - r.findings[1].begin), "rms_norm");
  // A C++ file without bindings defines no operator.
  EXPECT_TRUE(check_other("a.cc", "int f() { return m.def(\"x\"); }", Options{"npu", "", false})
                  .cuda_apis.empty());
}

TEST(CheckOther, RequirementsFlagCudaOnlyPackages) {
  const std::string req = "torch==2.6.0\nflash-attn>=2.5\n# apex in a comment\nnumpy\nxformers\n";
  FileResult r = check_other("requirements.txt", req, Options{"xpu", "", false});
  std::vector<std::string> apis;
  for (const Finding& f : r.findings) apis.push_back(f.api);
  EXPECT_EQ(apis, (std::vector<std::string>{"flash-attn", "xformers"}));
}

TEST(CheckOther, ShellLaunchersGetTheTargetsVariable) {
  const std::string sh = "export CUDA_VISIBLE_DEVICES=0,1\nnvidia-smi\npython train.py\n";
  FileResult r = check_other("scripts/run.sh", sh, Options{"npu", "", false});
  ASSERT_EQ(r.findings.size(), 2u);
  ASSERT_TRUE(r.findings[0].fix.has_value());
  EXPECT_EQ(r.findings[0].fix->edits[0].replacement, "ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(r.findings[1].api, "nvidia-smi");
  EXPECT_EQ(r.findings[1].op, Operation::Unsupported);
  FileResult cpu = check_other("run.sh", sh, Options{"cpu", "", false});
  EXPECT_FALSE(cpu.findings[0].fix.has_value());  // no variable on the CPU: reported
  EXPECT_TRUE(check_other("notes.md", sh, Options{"npu", "", false}).findings.empty());
}

TEST(Registry, CodesAreUniqueAndSorted) {
  auto reg = registry();
  ASSERT_FALSE(reg.empty());
  for (std::size_t i = 1; i < reg.size(); ++i) EXPECT_LT(reg[i - 1].code, reg[i].code);
}

}  // namespace
}  // namespace torchport::rules
