// The command table of the `torchport` executable.
#pragma once

#include <string_view>

namespace CLI {
class App;
}

namespace torchport::cli {

/// One subcommand: `setup` declares its options on `app` and sets its callback, which stores
/// the process exit code in `exit_code`.
struct Command {
  std::string_view name;
  std::string_view description;
  void (*setup)(CLI::App& app, int& exit_code);
};

int run(int argc, char** argv);

// Each command family lives in its own file (cmd_<family>.cc).
void setup_dev(CLI::App& app, int& exit_code);
void setup_migrate(CLI::App& app, int& exit_code);  // cmd_migrate.cc
void setup_analyze(CLI::App& app, int& exit_code);  // cmd_migrate.cc
void setup_explain(CLI::App& app, int& exit_code);  // cmd_explain.cc
void setup_targets(CLI::App& app, int& exit_code);  // cmd_explain.cc

}  // namespace torchport::cli
