// `torchport dev storage-paths FILE...`: the local data, checkpoint and output paths that each
// file names, where an activating import goes, and its torch.multiprocessing.spawn calls, as
// one JSON document. `torchport migrate --object-storage / --modelarts` (Python) reads it to
// pre-fill the path-mapping config (rules/storage_paths.h says what is found).
//
//   {"files": [{"path": P, "ok": true, "insert_line": N, "has_main_guard": B,
//               "spawn_lines": [..], "paths": [{"role": "input"|"output", "value": V,
//               "kind": K, "context": C, "line": L, "col": C}]},
//              {"path": P, "ok": false, "error": "path:line:col: message"}]}
//
// Exit status 0; 2 when a file cannot be read or decoded (it still gets its row).
#include <torchport/cli/cli.h>
#include <torchport/rules/storage_paths.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace torchport::cli {
namespace {

int run_storage_paths(const std::vector<std::string>& files) {
  nlohmann::json out = {{"files", nlohmann::json::array()}};
  int rc = 0;
  for (const std::string& path : files) {
    nlohmann::json row = {{"path", path}};
    text::DecodeResult decoded = text::decode_file(path);
    if (!decoded.source) {
      row["ok"] = false;
      row["error"] = path + ":1:1: " + decoded.error->message;
      out["files"].push_back(std::move(row));
      rc = 2;
      continue;
    }
    const syntax::Tree tree = syntax::parse(std::move(*decoded.source));
    if (!tree.ok()) {
      row["ok"] = false;
      row["error"] = tree.format(tree.diagnostics().front());
      out["files"].push_back(std::move(row));
      continue;
    }
    const rules::StorageScan scan = rules::scan_storage_paths(tree);
    row["ok"] = true;
    row["insert_line"] = scan.insert_line;
    row["has_main_guard"] = scan.has_main_guard;
    row["spawn_lines"] = scan.spawn_lines;
    nlohmann::json paths = nlohmann::json::array();
    for (const rules::StoragePath& p : scan.paths) {
      paths.push_back({{"role", p.role == rules::StoragePath::Role::Input ? "input" : "output"},
                       {"value", p.value},
                       {"kind", p.kind},
                       {"context", p.context},
                       {"line", p.line},
                       {"col", p.column}});
    }
    row["paths"] = std::move(paths);
    out["files"].push_back(std::move(row));
  }
  const std::string text = out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return rc;
}

}  // namespace

void setup_dev_storage(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand("storage-paths",
                                     "local data/checkpoint/output paths a script names, as JSON");
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("FILE", *files, "Python files")->required();
  cmd->callback([files, &exit_code] { exit_code = run_storage_paths(*files); });
}

}  // namespace torchport::cli
