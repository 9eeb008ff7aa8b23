#include <gtest/gtest.h>
#include <torchport/cli/cli.h>

#include <string>
#include <vector>

namespace torchport::cli {
namespace {

int run_args(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return run(static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, UnknownSubcommandIsAnError) { EXPECT_NE(run_args({"torchport", "no-such-command"}), 0); }

TEST(Cli, MissingSubcommandIsAnError) { EXPECT_NE(run_args({"torchport"}), 0); }

}  // namespace
}  // namespace torchport::cli
