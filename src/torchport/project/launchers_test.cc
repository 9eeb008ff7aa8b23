#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/project/launchers.h>

namespace torchport::project {
namespace {

const catalogue::Target& target(const char* name) {
  const catalogue::Target* t = catalogue::Catalogue::builtin().target(name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

TEST(Launchers, EveryTargetGetsTorchrunWithItsDeviceCount) {
  for (const catalogue::Target& t : catalogue::Catalogue::builtin().targets()) {
    SCOPED_TRACE(t.name);
    std::vector<Launcher> ls = distributed_launchers(t, "src/train.py");
    ASSERT_FALSE(ls.empty());
    EXPECT_EQ(ls[0].name, "run_distributed.sh");
    for (const Launcher& l : ls) {
      EXPECT_TRUE(l.text.starts_with("#!/usr/bin/env bash\n"));
      for (const char* key : {"@TARGET@", "@MODULE@", "@COUNT@", "@BACKEND@", "@ARGS@", "@MAIN@"})
        EXPECT_EQ(l.text.find(key), std::string::npos) << key << " is left";
      EXPECT_NE(l.text.find("'src/train.py' \"$@\""), std::string::npos);
      EXPECT_NE(l.text.find("--nnodes) NNODES=\"$2\""), std::string::npos);
    }
    EXPECT_NE(ls[0].text.find("-m torch.distributed.run"), std::string::npos);
    const std::string module = t.runtime_device() ? "torch.accelerator" : t.module;
    EXPECT_NE(ls[0].text.find("print(max(1, " + module + ".device_count()))"), std::string::npos);
  }
}

TEST(Launchers, NpuAlsoGetsTheAscendLoop) {
  std::vector<Launcher> ls = distributed_launchers(target("npu"), "train.py");
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[1].name, "run_distributed_npu.sh");
  EXPECT_NE(ls[1].text.find("export DEVICE_ID=\"$i\" LOCAL_RANK=\"$i\""), std::string::npos);
  EXPECT_NE(ls[1].text.find("import torch_npu; print(max(1, torch_npu.npu.device_count()))"),
            std::string::npos);
  EXPECT_NE(ls[0].text.find("collective backend\n# hccl."), std::string::npos);
  EXPECT_EQ(distributed_launchers(target("cpu"), "train.py").size(), 1u);
}

TEST(Launchers, QuotesTheScriptForTheShell) {
  std::vector<Launcher> ls = distributed_launchers(target("cpu"), "it's here/train.py");
  EXPECT_NE(ls[0].text.find("'it'\\''s here/train.py' \"$@\""), std::string::npos);
}

}  // namespace
}  // namespace torchport::project
