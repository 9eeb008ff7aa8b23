// `torchport analyze --third-party` (cmd_third_party.cc): its options and its run.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace torchport::cli {

struct ThirdPartyArgs {
  bool enabled = false;
  std::vector<std::string> env;      ///< --env
  std::vector<std::string> results;  ///< --api
};

void add_third_party_options(CLI::App& app, ThirdPartyArgs& a);

/// Runs the analysis and prints it; returns the exit status (0 nothing reached, 1 findings,
/// 2 usage error).
int run_third_party(const ThirdPartyArgs& a, const std::string& who, const std::string& input,
                    const std::string& target, const std::string& torch_version,
                    const std::string& outdir, const std::string& format, bool include_excluded);

}  // namespace torchport::cli
