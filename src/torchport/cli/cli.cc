#include <torchport/cli/cli.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <string>
#include <string_view>

namespace torchport::cli {
namespace {

constexpr std::array kCommands = {
    Command{"dev", "developer tools: tokens, parse, dump-spans", setup_dev},
    Command{"analyze", "find CUDA-specific code and what will not work on a target", setup_analyze},
    Command{"migrate", "rewrite a project tree for a target, with reports", setup_migrate},
    Command{"explain", "what torchport does with one CUDA API", setup_explain},
    Command{"targets", "the targets and what each needs", setup_targets},
};

}  // namespace

int run(int argc, char** argv) {
  if (argc > 1 && argv[1][0] != '-') {
    std::string_view name = argv[1];
    bool known = false;
    for (const Command& c : kCommands) known = known || c.name == name;
    if (!known) {
      std::fprintf(stderr, "torchport: error: unknown command '%s' (see `torchport --help`)\n",
                   argv[1]);
      return 2;
    }
  }
  CLI::App app{"torchport: move CUDA PyTorch code to any accelerator", "torchport"};
  app.set_version_flag("-V,--version", std::string("torchport ") + TORCHPORT_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.description));
    c.setup(*sub, exit_code);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}

}  // namespace torchport::cli
