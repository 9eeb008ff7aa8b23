// Device values across the project's own modules: what another module of the project says
// about a name that reaches a device position here.
//
//   - `from pkg.config import GPU_ID` / `from pkg import config; config.GPU_ID` /
//     `import pkg.config as cfg; cfg.GPU_ID`: the module-level value of GPU_ID in pkg/config.py
//     (relative imports resolved against the importing module);
//   - `args.gpu`, where the parser is built in another module (an `opts.py`): the project's
//     argparse options of that dest (add_argument, and configargparse's `group.add`).
//
// A module is read and parsed only when a query asks for it, once per run, from any worker
// thread; the option files once, on the first option query (only the files whose text has an
// option call). Nothing of another module's tree is kept: a name's value is its sources, with
// no literal nodes (those are rewritten, or not, in their own file).
//
// What another module's value may say, so that a rule here never counts on a rewrite that does
// not happen there:
//   - an integer index, None, "cpu" and any other string are values as they are;
//   - "nccl" only as the default of an option whose name says backend, and "cuda" only as the
//     default of an add_argument option whose name says device: the rules rewrite those in
//     their own file (TP400, TP300);
//   - anything else ("cuda" in a module-level variable, a formatted string, a call) is Unknown.
#pragma once

#include <torchport/flow/device_values.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::flow {

/// Whether `text` may define an argparse option: it has `add_argument`, or `.add(` whose first
/// argument is a string starting with '-' (configargparse's group.add). Only such files are
/// parsed by the option scan.
bool may_define_options(std::string_view text);

class ProjectValues {
 public:
  /// `root`: the project's directory; `python_files`: its Python modules, relative to `root`
  /// with '/' separators (notebooks and other files are not importable); `sizes`, when given,
  /// the size of each as the walk measured it (0: not measured), which the option scan does not
  /// ask again.
  ProjectValues(std::filesystem::path root, std::vector<std::string> python_files,
                std::vector<std::size_t> sizes = {});
  ~ProjectValues();
  ProjectValues(const ProjectValues&) = delete;
  ProjectValues& operator=(const ProjectValues&) = delete;

  /// The value of the module-level name `name` of the project module `module` ("pkg.config"),
  /// or nullopt when `module` is not one of the project's (or is ambiguous) or `name` is not
  /// bound there by a plain assignment.
  /// `importer` is the importing module's dotted name: `import utils` in pkg/train.py finds
  /// pkg/utils.py when there is no top-level utils.py (the script's directory is on sys.path).
  /// A module is found by its full dotted name, then beside the importer, then (a dotted name
  /// only) by a unique suffix (a project under src/).
  std::optional<Value> module_name(std::string_view module, std::string_view name,
                                   std::string_view importer = {}) const;
  /// The value of the argparse options of dest `dest` defined anywhere in the project, or
  /// nullopt when no module defines one.
  std::optional<Value> option(std::string_view dest) const;

  /// The dotted module name of a project file: "pkg/config.py" -> "pkg.config",
  /// "pkg/__init__.py" -> "pkg"; "" for a name that cannot be imported.
  static std::string module_of(std::string_view rel);
  /// The absolute name of `from <dots><module> import ...` in module `current` (whose file is
  /// a package's `__init__.py` when `is_package`): "" when the dots go above the top.
  static std::string resolve_relative(std::string_view current, bool is_package,
                                      std::uint32_t level, std::string_view module);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchport::flow
