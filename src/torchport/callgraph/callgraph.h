// Third-party analysis (`torchport analyze --third-party`): which installed libraries a project
// calls, and which of their functions reach a CUDA-only or unsupported torch API on a target.
//
// How it works:
//   1. Every Python file of the project is parsed; each call (and each catalogued reference)
//      whose qualified name (imports, aliases, `x = Class(...)` instances) starts with a
//      top-level module found in the environment's search paths, and not in the project, is an
//      entry point.
//   2. A qualified name is resolved the way `import` finds it: the longest dotted prefix that is
//      a module file (`a/b.py`, `a/b/__init__.py`) in the first search path holding it, then
//      module-level definitions, re-exports through imports (relative ones included) and class
//      methods along the base classes. Only modules reached this way are parsed (lazily, once),
//      and a parsed module keeps only its definitions and resolved calls, not its tree.
//   3. torch itself is the framework: a call into `torch.*` is a leaf, judged by the catalogue
//      (CUDA-specific APIs: migration needed; CUDA-only packages such as flash_attn: cuda_op)
//      and by the vendor's per-version support lists (unsupported, unknown), as rule TP950
//      judges the project's own calls.
//   4. What each library function reaches is computed once (strongly connected components of
//      the call graph share their result), with one shortest-found chain of calls per leaf.
//
// Not followed (documented in docs/third-party.md): calls through values whose type is not
// known statically (parameters, return values), getattr, module-level code run at import.
#pragma once

#include <torchport/catalogue/catalogue.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torchport::callgraph {

/// Ascend's third-party report categories (the CSV each leaf goes to).
enum class Category : std::uint8_t {
  MigrationNeeded,  ///< CUDA-specific torch API with a catalogue entry: migration_needed_op.csv
  FrameworkUnsupported,  ///< unsupported on the target per the vendor list:
                         ///< framework_unsupported_op.csv
  Unknown,               ///< the vendor list does not judge it or gives limits: unknown_op.csv
  CudaOp,                ///< a CUDA-only package (catalogue kind "package"): cuda_op.csv
};
std::string_view to_string(Category c);

/// A torch (or CUDA-only package) API that a library function reaches.
struct Leaf {
  std::string api;
  Category category = Category::Unknown;
  std::string note;  ///< "torch_npu.npu.empty_cache", "unsupported on npu", the vendor's tip...
};

/// One step of a chain: a function and the line where it calls the next step (or the leaf).
struct Hop {
  std::string function;  ///< qualified name: "accelerate.utils.memory.clear_device_cache"
  std::string file;      ///< the library file
  std::uint32_t line = 0;
};

/// A library function that reaches at least one leaf (a row of full_unsupported_results.csv).
struct LibraryApi {
  std::string name;                ///< qualified name of its definition
  std::vector<std::string> names;  ///< other names the project or the library used for it
  std::string file;
  std::uint32_t line = 0;  ///< of its `def`
  struct Reach {
    std::size_t leaf = 0;  ///< index into Result::leaves
    std::string file;      ///< where the leaf is called
    std::uint32_t line = 0;
  };
  std::vector<Reach> reaches;
  bool from_results = false;  ///< known from a --api results file, not analysed
};

/// One call in the project that reaches a leaf.
struct Finding {
  std::string file;  ///< relative to the project root
  std::uint32_t line = 0, column = 0;
  std::string api;  ///< the 3rd-party API as the project names it (qualified)
  std::size_t leaf = 0;
  std::vector<Hop> chain;  ///< from the library API to the call of the leaf
};

struct Options {
  std::string target;
  std::string torch_version;
  std::vector<std::string> env;      ///< search paths (site-packages directories), in order
  std::vector<std::string> results;  ///< full_unsupported_results.csv files read back (--api)
  bool default_excludes = true;      ///< skip .git, build, virtualenvs... in the project
};

struct Stats {
  std::size_t project_files = 0;
  std::size_t modules_parsed = 0;
  std::size_t functions = 0;  ///< library functions and methods whose calls were followed
  std::size_t bytes_parsed = 0;
};

struct Result {
  std::vector<Leaf> leaves;
  std::vector<LibraryApi> apis;        ///< sorted by name
  std::vector<Finding> findings;       ///< sorted by file, line, column, leaf api
  std::vector<std::string> libraries;  ///< top-level third-party modules the project imports
  std::vector<std::string> warnings;   ///< files that do not parse, unreadable paths...
  Stats stats;
  std::string error;  ///< a usage error (nothing analysed)
};

/// Runs the analysis of the project at `input` (a directory or one file).
Result analyze(const std::string& input, const Options& opts, const catalogue::Catalogue& cat);

/// Ascend's five CSV files (framework_unsupported_op.csv, unknown_op.csv,
/// migration_needed_op.csv, cuda_op.csv, full_unsupported_results.csv): file name and content.
std::vector<std::pair<std::string, std::string>> ascend_csvs(const Result& r);

/// The project's findings with their chains, as JSON (third_party.json).
std::string result_json(const Result& r, const Options& opts);

/// The findings as text: `file:line:col: API reaches LEAF (category): note` and the chain.
std::string result_text(const Result& r);

/// One row read back from a full_unsupported_results.csv.
struct KnownApi {
  std::string file;
  std::vector<std::string> names;  ///< the 3rd-party API cell, one name a line
  struct Reached {
    std::string file;
    std::uint32_t line = 0;
    std::string api;
  };
  std::vector<Reached> reached;
};
/// Parses a full_unsupported_results.csv (Ascend's or ours: `File,3rd-party API,Message`, the
/// message one `file_path:F, start_line:N, api_name:API` a line). nullopt and `error`
/// (`path:line: reason`) on a malformed file.
std::optional<std::vector<KnownApi>> read_results(const std::string& path, const std::string& text,
                                                  std::string* error);

}  // namespace torchport::callgraph
