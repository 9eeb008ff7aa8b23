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
    // --help and --version are "errors" with exit code 0 in CLI11.
    if (e.get_exit_code() == 0) return app.exit(e);
    // A usage error: one line naming the problem, pointing to --help, and exit status 2 (as
    // argparse, ruff and clang do), never CLI11's own codes.
    std::string who = "torchport";
    for (const CLI::App* sub : app.get_subcommands()) who += " " + sub->get_name();
    if (who == "torchport" && argc > 1 && argv[1][0] != '-') who += std::string(" ") + argv[1];
    std::string what = e.what();
    if (e.get_name() == "RequiredError" && what.find("subcommand") != std::string::npos)
      what = "a command is required";
    std::fprintf(stderr, "%s: error: %s (see `%s --help`)\n", who.c_str(), what.c_str(),
                 who.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torchport: internal error: %s (please report it)\n", e.what());
    return 4;
  }
  return exit_code;
}

}  // namespace torchport::cli
