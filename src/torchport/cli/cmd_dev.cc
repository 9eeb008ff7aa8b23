// `torchport dev ...`: developer tools for the front end.
#include <CLI/CLI.hpp>
#include <torchport/cli/cli.h>

namespace torchport::cli {

void setup_dev(CLI::App& app, int& exit_code) {
  app.require_subcommand(1);
  (void)exit_code;
}

}  // namespace torchport::cli
