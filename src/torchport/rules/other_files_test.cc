#include <gtest/gtest.h>
#include <torchport/fix/apply.h>
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

TEST(CheckOther, TheDriverSkipsReadingOnlyFilesNoRuleReads) {
  // A header with a binding in it: no rule reads headers, so it defines nothing, and the driver
  // need not read it (other_file_read); the same text in a .cpp does.
  const std::string bound = "PYBIND11_MODULE(ext, m) { m.def(\"fused\", &fused); }\n";
  const Options opts{"npu", "", false};
  for (const char* name : {"include/ATen/ATen.h", "x.hpp", "kernel.c"}) {
    EXPECT_FALSE(other_file_read(name)) << name;
    EXPECT_TRUE(check_other(name, bound, opts).findings.empty()) << name;
  }
  EXPECT_EQ(check_other("csrc/ext.cpp", bound, opts).findings.size(), 1u);
  for (const char* name : {"csrc/ext.cpp", "k.cu", "k.cuh", "requirements-dev.txt",
                           "pyproject.toml", "setup.cfg", "environment.yml", "run.sh", "a.bash"})
    EXPECT_TRUE(other_file_read(name)) << name;
  // The requirement rules read requirements*.txt and pyproject.toml only.
  const std::string req = "torch>=2.0\n";
  EXPECT_TRUE(requirement_file("sub/requirements.txt"));
  EXPECT_TRUE(requirement_file("pyproject.toml"));
  EXPECT_EQ(raise_torch_requirement("sub/requirements.txt", req, "2.6").size(), 1u);
  for (const char* name : {"setup.cfg", "environment.yml", "notes.txt", "run.sh"}) {
    EXPECT_FALSE(requirement_file(name)) << name;
    EXPECT_TRUE(raise_torch_requirement(name, req, "2.6").empty()) << name;
  }
  // The name is what follows the last '/' or '\\'.
  for (const char* name : {"a\\b/requirements.txt", "a/b\\pyproject.toml", "/requirements-x.txt"})
    EXPECT_TRUE(requirement_file(name)) << name;
  for (const char* name : {"requirements.txt/x", "pyproject.toml\\", "requirements/notes.txt",
                           "requirements.txt\\a.toml", "pyproject.toml/"})
    EXPECT_FALSE(requirement_file(name)) << name;
}

TEST(CheckOther, RequirementsFlagCudaOnlyPackages) {
  const std::string req = "torch==2.6.0\nflash-attn>=2.5\n# apex in a comment\nnumpy\nxformers\n";
  FileResult r = check_other("requirements.txt", req, Options{"xpu", "", false});
  std::vector<std::string> apis;
  for (const Finding& f : r.findings) apis.push_back(f.api);
  EXPECT_EQ(apis, (std::vector<std::string>{"flash-attn", "xformers"}));
}

std::vector<std::string> apis(const FileResult& r) {
  std::vector<std::string> out;
  for (const Finding& f : r.findings) out.push_back(f.api);
  return out;
}

TEST(CheckOther, RequirementMessagesNameTheTargetsAlternative) {
  const std::string req = "flash-attn==2.5.8\n";
  FileResult npu = check_other("requirements.txt", req, Options{"npu", "", false});
  ASSERT_EQ(npu.findings.size(), 1u);
  EXPECT_NE(npu.findings[0].message.find("torch_npu.npu_fusion_attention"), std::string::npos)
      << npu.findings[0].message;
  FileResult xpu = check_other("requirements.txt", req, Options{"xpu", "", false});
  ASSERT_EQ(xpu.findings.size(), 1u);
  EXPECT_NE(xpu.findings[0].message.find("scaled_dot_product_attention"), std::string::npos);
}

TEST(CheckOther, RequirementsFlagCudaWheelsBuildsAndIndexes) {
  const std::string req =
      "--extra-index-url https://download.pytorch.org/whl/cu121\n"
      "torch==2.3.1+cu121\n"
      "cupy-cuda12x>=13\n"
      "nvidia-cudnn-cu12==8.9.2.26\n"
      "nvidia-ml-py\n"
      "Flash_Attn\n"
      "numpy>=1.26  # cupy in a comment\n"
      "tritonclient\n";
  FileResult r = check_other("requirements-gpu.txt", req, Options{"npu", "", false});
  EXPECT_EQ(apis(r), (std::vector<std::string>{"https://download.pytorch.org/whl/cu121",
                                               "torch+cu121", "cupy-cuda12x", "nvidia-cudnn-cu12",
                                               "nvidia-ml-py", "Flash_Attn"}));
  for (const Finding& f : r.findings) EXPECT_EQ(f.op, Operation::Unsupported) << f.api;
  EXPECT_NE(r.findings[1].message.find("torch_npu"), std::string::npos) << r.findings[1].message;
  EXPECT_EQ(req.substr(r.findings[2].begin, r.findings[2].end - r.findings[2].begin),
            "cupy-cuda12x");
}

TEST(CheckOther, PyprojectDependenciesAreScanned) {
  const std::string toml =
      "[project]\n"
      "name = \"demo\"\n"
      "description = \"triton kernels for demo\"\n"
      "dependencies = [\"torch>=2.6\", \"xformers>=0.0.28\", 'apex']\n"
      "[tool.poetry.dependencies]\n"
      "bitsandbytes = \"^0.43\"\n";
  FileResult r = check_other("pyproject.toml", toml, Options{"mlu", "", false});
  EXPECT_EQ(apis(r), (std::vector<std::string>{"xformers", "apex", "bitsandbytes"}));
}

TEST(CheckOther, EnvironmentYmlPackageListsAreScanned) {
  const std::string yml =
      "name: cuda-env\n"
      "channels:\n"
      "  - pytorch\n"
      "  - nvidia\n"
      "dependencies:\n"
      "  - python=3.11\n"
      "  - pytorch-cuda=12.1\n"
      "  - cudatoolkit=11.8\n"
      "  - pip:\n"
      "    - flash-attn==2.5.8\n"
      "    - einops\n";
  FileResult r = check_other("environment.yml", yml, Options{"npu", "", false});
  EXPECT_EQ(apis(r), (std::vector<std::string>{"pytorch-cuda", "cudatoolkit", "flash-attn"}));
}

TEST(CheckOther, TritonOnXpuIsReportedAsUnknownNotUnsupported) {
  FileResult r = check_other("requirements.txt", "triton==3.0.0\n", Options{"xpu", "", false});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].op, Operation::Unknown);  // partial: Intel's Triton build
  EXPECT_NE(r.findings[0].message.find("Intel"), std::string::npos);
}

TEST(CheckOther, ShellVisibleDevicesOnAcceleratorIsReported) {
  const std::string sh = "CUDA_VISIBLE_DEVICES=0 python train.py\n";
  FileResult r = check_other("run.sh", sh, Options{"accelerator", "", false});
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].op, Operation::Unsupported);
  EXPECT_FALSE(r.findings[0].fix.has_value());
  EXPECT_NE(r.findings[0].message.find("stays"), std::string::npos) << r.findings[0].message;
  FileResult hpu = check_other("run.sh", sh, Options{"hpu", "", false});
  ASSERT_TRUE(hpu.findings[0].fix.has_value());
  EXPECT_EQ(hpu.findings[0].fix->edits[0].replacement, "HABANA_VISIBLE_MODULES");
  EXPECT_NE(hpu.findings[0].message.find("module ids"), std::string::npos);
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

// The text of `path` after add_vendor_requirement's fix ("" when it finds nothing to add).
std::string with_vendor(std::string_view path, std::string_view text,
                        std::string_view requirement = "torch_npu") {
  std::vector<Finding> found = add_vendor_requirement(path, text, requirement, "train.py");
  if (found.empty()) return "";
  EXPECT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].code, "TP902");
  EXPECT_EQ(found[0].op, Operation::Insert);
  EXPECT_EQ(found[0].changes, "visible change: a new requirement");
  return fix::apply_fixes(text, {*found[0].fix}).text;
}

TEST(VendorRequirement, RequirementsTxtGetsItAfterTorch) {
  EXPECT_EQ(with_vendor("requirements.txt", "numpy\ntorch>=2.1 # the model\ntqdm\n"),
            "numpy\ntorch>=2.1 # the model\ntorch_npu\ntqdm\n");
  // CRLF kept; a last line without a line break gets one.
  EXPECT_EQ(with_vendor("requirements.txt", "torch\r\nnumpy\r\n"),
            "torch\r\ntorch_npu\r\nnumpy\r\n");
  EXPECT_EQ(with_vendor("sub/requirements-gpu.txt", "numpy\ntorch"), "numpy\ntorch\ntorch_npu\n");
  // requirements.txt without torch: at the end; another requirements file without torch: no.
  EXPECT_EQ(with_vendor("requirements.txt", "numpy\n"), "numpy\ntorch_npu\n");
  EXPECT_EQ(with_vendor("requirements.txt", ""), "torch_npu\n");
  EXPECT_EQ(with_vendor("requirements-docs.txt", "sphinx\n"), "");
  // Named already, in any PEP 503 spelling, or by a version: nothing to add.
  EXPECT_EQ(with_vendor("requirements.txt", "torch\nTorch-NPU==2.1.0.post3\n"), "");
  // Not a requirements file.
  EXPECT_EQ(with_vendor("setup.cfg", "torch\n"), "");
}

TEST(VendorRequirement, PyprojectDependencies) {
  // Multi-line, torch with and without a trailing comma.
  EXPECT_EQ(with_vendor("pyproject.toml",
                        "[project]\nname = \"p\"\ndependencies = [\n    \"torch>=2.1\",\n"
                        "    \"numpy\",\n]\n",
                        "torch_mlu"),
            "[project]\nname = \"p\"\ndependencies = [\n    \"torch>=2.1\",\n    \"torch_mlu\",\n"
            "    \"numpy\",\n]\n");
  EXPECT_EQ(with_vendor("pyproject.toml",
                        "[project]\ndependencies = [\n  'numpy',\n  'torch'  # any\n]\n"),
            "[project]\ndependencies = [\n  'numpy',\n  'torch',  # any\n  'torch_npu',\n]\n");
  // One line, and without torch (after the last item); an empty array.
  EXPECT_EQ(with_vendor("pyproject.toml", "[project]\ndependencies = [\"torch\", \"numpy\"]\n"),
            "[project]\ndependencies = [\"torch\", \"torch_npu\", \"numpy\"]\n");
  EXPECT_EQ(with_vendor("pyproject.toml", "[project]\ndependencies = [\"numpy\"]\n"),
            "[project]\ndependencies = [\"numpy\", \"torch_npu\"]\n");
  EXPECT_EQ(with_vendor("pyproject.toml", "[project]\ndependencies = []\n"),
            "[project]\ndependencies = [\"torch_npu\"]\n");
  // Only [project]: another table's dependencies, or none at all, get nothing.
  EXPECT_EQ(with_vendor("pyproject.toml", "[tool.poetry]\ndependencies = [\"torch\"]\n"), "");
  EXPECT_EQ(
      with_vendor("pyproject.toml", "[project]\nname = \"p\"\ndynamic = [\"dependencies\"]\n"), "");
  EXPECT_EQ(with_vendor("pyproject.toml", "[project]\ndependencies = [\"torch\", \"torch-npu\"]\n"),
            "");
}

TEST(VendorRequirement, TheMessageSaysWhyThereIsNoVersion) {
  std::vector<Finding> f = add_vendor_requirement("requirements.txt", "torch\n", "torch_npu",
                                                  "the migrated code imports torch_npu: a.py");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("imports torch_npu: a.py"), std::string::npos) << f[0].message;
  EXPECT_NE(f[0].message.find("without a version"), std::string::npos) << f[0].message;
  // A requirement with a version is written as the data says, and the note is not there.
  f = add_vendor_requirement("requirements.txt", "torch\n", "torch_npu>=2.1", "x");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].fix->edits[0].replacement, "torch_npu>=2.1\n");
  EXPECT_EQ(f[0].message.find("without a version"), std::string::npos) << f[0].message;
}

}  // namespace
}  // namespace torchport::rules
