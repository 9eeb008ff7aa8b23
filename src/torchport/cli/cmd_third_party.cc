// `torchport analyze --third-party`: the installed libraries a project calls, and which of
// their functions reach a CUDA-only or unsupported API (src/torchport/callgraph).
#include <torchport/callgraph/callgraph.h>
#include <torchport/cli/third_party.h>
#include <torchport/project/driver.h>
#include <torchport/project/files.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace torchport::cli {

namespace fs = std::filesystem;

void add_third_party_options(CLI::App& app, ThirdPartyArgs& a) {
  auto* group = app.add_option_group("third-party", "third-party analysis (docs/third-party.md)");
  CLI::Option* flag =
      group->add_flag("--third-party", a.enabled,
                      "analyse the installed libraries the project calls instead: which of their "
                      "functions reach a CUDA-only or unsupported API, with the chain of calls "
                      "(Ascend's -m third_party)");
  group
      ->add_option("--env", a.env,
                   "with --third-party: library search paths (site-packages), ':'-separated or "
                   "repeated (default: the active environment)")
      ->allow_extra_args(false)
      ->needs(flag);
  group
      ->add_option("--api", a.results,
                   "with --third-party: a full_unsupported_results.csv from an earlier run; the "
                   "library APIs it lists are not analysed again (repeatable)")
      ->allow_extra_args(false)
      ->needs(flag);
}

namespace {

std::vector<std::string> split_paths(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& g : given) {
    std::size_t b = 0;
    while (b <= g.size()) {
      std::size_t e = g.find(':', b);
      if (e == std::string::npos) e = g.size();
      if (e > b) out.push_back(g.substr(b, e - b));
      b = e + 1;
    }
  }
  return out;
}

/// $VIRTUAL_ENV/lib/python*/site-packages, when the core runs without the Python front end.
std::vector<std::string> virtualenv_paths() {
  std::vector<std::string> out;
  const char* venv = std::getenv("VIRTUAL_ENV");
  if (!venv || !*venv) return out;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(fs::path(venv) / "lib", ec))
    if (d.path().filename().string().starts_with("python") &&
        fs::is_directory(d.path() / "site-packages", ec))
      out.push_back((d.path() / "site-packages").string());
  return out;
}

}  // namespace

int run_third_party(const ThirdPartyArgs& a, const std::string& who, const std::string& input,
                    const std::string& target, const std::string& torch_version,
                    const std::string& outdir, const std::string& format, bool include_excluded) {
  const catalogue::Catalogue& cat = catalogue::Catalogue::builtin();
  if (!cat.target(target)) {
    std::cerr << who << ": error: unknown target '" << target << "' (see `torchport targets`)\n";
    return project::kExitUsage;
  }
  if (format != "text" && format != "json") {
    std::cerr << who << ": error: --third-party prints text or json, not " << format
              << " (the CSV files go to -o DIR)\n";
    return project::kExitUsage;
  }
  callgraph::Options o;
  o.target = target;
  o.torch_version = torch_version;
  o.env = split_paths(a.env);
  if (o.env.empty()) o.env = virtualenv_paths();
  o.results = a.results;
  o.default_excludes = !include_excluded;
  std::error_code ec;
  if (!outdir.empty() && fs::exists(input, ec) && fs::is_directory(input, ec) &&
      project::is_within(fs::absolute(outdir, ec), fs::absolute(input, ec))) {
    std::cerr << who << ": error: the output directory " << outdir << " is inside the input "
              << input << "\n";
    return project::kExitUsage;
  }
  callgraph::Result r = callgraph::analyze(input, o, cat);
  if (!r.error.empty()) {
    std::cerr << who << ": error: " << r.error << "\n";
    return project::kExitUsage;
  }
  for (const std::string& w : r.warnings) std::cerr << "warning: " << w << "\n";
  if (!outdir.empty()) {
    fs::create_directories(outdir, ec);
    if (ec) {
      std::cerr << who << ": error: cannot create " << outdir << ": " << ec.message() << "\n";
      return project::kExitUsage;
    }
    auto files = callgraph::ascend_csvs(r);
    files.emplace_back("third_party.json", callgraph::result_json(r, o));
    files.emplace_back("third_party.txt", callgraph::result_text(r));
    for (const auto& [name, content] : files) {
      std::string err;
      if (!project::write_atomic(fs::path(outdir) / name, content, err)) {
        std::cerr << who << ": error: " << err << "\n";
        return project::kExitUsage;
      }
    }
  }
  if (format == "json")
    std::cout << callgraph::result_json(r, o);
  else
    std::cout << callgraph::result_text(r);
  return r.findings.empty() ? 0 : 1;
}

}  // namespace torchport::cli
