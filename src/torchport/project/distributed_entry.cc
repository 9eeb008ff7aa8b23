// --distributed's entry script: the file --main names, the project modules it imports, and
// whether it can be made a DDP one (part of the prepare phase: a refusal writes nothing).
#include <torchport/project/files.h>
#include <torchport/project/prepare.h>
#include <torchport/rules/engine.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

#include <algorithm>
#include <memory>

namespace torchport::project {

namespace fs = std::filesystem;

std::string distributed_entry(const Options& opts, const fs::path& input, bool input_is_dir,
                              DistributedFiles& dist) {
  std::string& main_rel = dist.main;
  if (opts.analyze_only || opts.inplace)
    return "--distributed writes a new tree: it goes with migrate -o OUTDIR, not with "
           "analyze or --inplace";
  fs::path main;
  std::error_code ec;
  if (!input_is_dir) {
    main = input;
    if (!opts.main.empty() && fs::weakly_canonical(fs::absolute(opts.main), ec) != input &&
        opts.main.filename() != input.filename())
      return "--main " + opts.main.string() + " is not the INPUT file " + input.string();
  } else {
    if (opts.main.empty())
      return "--distributed needs --main FILE: the training script to convert, relative to " +
             input.string();
    main = opts.main.is_absolute() ? opts.main : input / opts.main;
    if (!fs::exists(main, ec) && fs::exists(fs::absolute(opts.main), ec))
      main = fs::absolute(opts.main);
    main = fs::weakly_canonical(main, ec);
    if (!is_within(main, input))
      return "--main " + opts.main.string() + " is not a file of the input " + input.string();
  }
  if (!fs::is_regular_file(main, ec)) return "--main " + main.string() + ": no such file";
  main_rel = input_is_dir ? main.lexically_relative(input).generic_string()
                          : main.filename().generic_string();
  std::string bytes, error;
  if (!read_file(main, bytes, error)) return main.string() + ": cannot read: " + error;
  text::DecodeResult dec = text::decode(main_rel, bytes);
  if (!dec.source) return main_rel + ": cannot decode: nothing was converted";
  syntax::Tree tree = syntax::parse(std::move(*dec.source));
  if (!tree.ok())
    return (tree.diagnostics().empty() ? main_rel + ": syntax error"
                                       : tree.format(tree.diagnostics().front())) +
           ": nothing was converted";
  const semantic::Model model(tree);
  // The project modules the script imports, and the ones they import: breadth first, each file
  // once. A module that does not read or parse is left to the ordinary migration (its row says
  // why).
  std::vector<std::unique_ptr<syntax::Tree>> trees;
  std::vector<std::unique_ptr<semantic::Model>> models;
  std::vector<std::pair<const syntax::Tree*, const semantic::Model*>> imported;
  if (input_is_dir) {
    std::string script_dir = main_rel.rfind('/') == std::string::npos
                                 ? std::string()
                                 : main_rel.substr(0, main_rel.rfind('/'));
    std::vector<std::pair<const syntax::Tree*, std::string>> queue = {{&tree, main_rel}};
    std::set<std::string> seen = {main_rel};
    for (std::size_t q = 0; q < queue.size(); ++q) {
      for (const std::string& rel :
           rules::imported_module_paths(*queue[q].first, queue[q].second, script_dir)) {
        if (seen.contains(rel)) continue;
        const fs::path path = input / rel;
        if (!fs::is_regular_file(path, ec) || !is_within(fs::weakly_canonical(path, ec), input))
          continue;
        seen.insert(rel);
        if (opts.selection.excluded_by(rel) != std::string()) continue;
        std::string text, err;
        if (!read_file(path, text, err)) continue;
        text::DecodeResult d = text::decode(rel, text);
        if (!d.source) continue;
        auto t = std::make_unique<syntax::Tree>(syntax::parse(std::move(*d.source)));
        if (!t->ok()) continue;
        models.push_back(std::make_unique<semantic::Model>(*t));
        // Its dotted name as the script imports it: relative to the script's directory (or
        // the root), without .py and __init__.
        std::string dotted = rel.substr(0, rel.size() - 3);
        if (dotted.ends_with("/__init__")) dotted.resize(dotted.size() - 9);
        if (!script_dir.empty() && dotted.starts_with(script_dir + "/"))
          dotted = dotted.substr(script_dir.size() + 1);
        std::replace(dotted.begin(), dotted.end(), '/', '.');
        for (std::string& f : rules::loader_functions(*t, *models.back(), dotted))
          dist.loader_functions.insert(std::move(f));
        imported.emplace_back(t.get(), models.back().get());
        dist.imported.insert(rel);
        queue.emplace_back(t.get(), rel);
        trees.push_back(std::move(t));
      }
    }
  }
  std::string why = rules::distributed_refusal(tree, model, opts.rules.model_var, imported);
  if (!why.empty()) why += " (--distributed: nothing was written)";
  return why;
}

}  // namespace torchport::project
