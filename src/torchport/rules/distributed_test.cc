// The distributed family skips files that cannot have its findings (no "nccl" string, no
// init_process_group / new_group, no torch.cuda.device_count): these pin that the files that
// can are still seen, however the call is spelled.
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

int count(const std::vector<std::string>& seen, std::string_view code) {
  return static_cast<int>(std::count(seen.begin(), seen.end(), code));
}

TEST(Distributed, AnAliasedNewGroupWithAnUnknownBackendIsReported) {
  // The call's own name has no "_group": the import it comes from does.
  const auto seen = codes(
      "from torch.distributed import new_group as ng\n"
      "g = ng([0, 1], backend=pick())\n");
  EXPECT_EQ(count(seen, "TP400"), 1);
}

TEST(Distributed, AnAliasedDeviceCountAsTheSpawnCountIsRewritten) {
  const auto seen = codes(
      "import torch.multiprocessing as mp\n"
      "from torch.cuda import device_count as dc\n"
      "def main():\n"
      "    mp.spawn(run, nprocs=dc())\n");
  EXPECT_EQ(count(seen, "TP403"), 1);
}

}  // namespace
}  // namespace torchport::rules
