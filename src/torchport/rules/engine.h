// The rule engine: the interface between the rules and the driver.
//
// check() runs every registered rule family over one parsed Python file and returns the
// findings (each with an optional fix) plus what the reports need. The driver (project/)
// turns byte ranges into lines, applies the safe fixes and writes the reports; the rules never
// touch files. check_other() does the same for the non-Python files of a project
// (requirements.txt, pyproject.toml, shell launchers, .cpp/.cu sources with custom ops).
#pragma once

#include <torchport/fix/edit.h>
#include <torchport/flow/device_values.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace torchport::syntax {
class Tree;
}
namespace torchport::catalogue {
class Catalogue;
}
namespace torchport::semantic {
class Model;
}

namespace torchport::rules {

/// The "Operation Type" column of change_list.csv (Insert/Modify/Delete/Unsupported) plus
/// Unknown, which goes to unknown_api.csv. Unsupported findings go to unsupported_api.csv too.
enum class Operation : std::uint8_t { Insert, Modify, Delete, Unsupported, Unknown };

/// "INSERT", "MODIFY", "DELETE", "UNSUPPORTED", "UNKNOWN".
std::string_view to_string(Operation op);

/// Code a finding's fix takes over: a statement it replaces whole, or code it moves elsewhere.
/// The findings made before it whose range lies in [begin, end] go with it (resolve.cc), and
/// their edits inside that range are applied to the taken code; with `into`, the code so
/// rewritten is spliced into the replacement of the fix's edit `into->first` at byte
/// `into->second` (TP403 moves `torch.cuda.device_count()`, renamed by TP100, onto a line of its
/// own).
struct Take {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::optional<std::pair<std::size_t, std::size_t>> into;
};

struct Finding {
  std::string code;  ///< rule code, e.g. "TP101"
  Operation op = Operation::Modify;
  std::string api;          ///< qualified API, e.g. "torch.cuda.max_memory_allocated"
  std::string message;      ///< what was done, or why it could not be done
  std::uint32_t begin = 0;  ///< byte range in the decoded text (lines derived by the driver)
  std::uint32_t end = 0;
  std::optional<fix::Fix> fix;  ///< absent for Unsupported/Unknown and for display-only notes
  /// Non-empty when the fix changes numerics or behaviour: the label the reports show, e.g.
  /// "changes behaviour: a value replaced by a constant" or "numerics: autocast dtype ...".
  /// Behaviour-changing fixes are Applicability::Unsafe (--no-unsafe-fixes leaves them out).
  std::string changes;
  /// A byte range of code this finding's fix removes (an argument it drops): the findings made
  /// before it about code inside that range go with it. Declared here and resolved in one place
  /// (check(), after each family: resolve.h), never by the rule.
  std::optional<std::pair<std::uint32_t, std::uint32_t>> drops;
  /// Code this finding's fix takes over (Take): resolved with `drops`, never by the rule.
  std::vector<Take> takes;
  /// After this fix, an argument an earlier finding inserts in [first, second] (TP300's
  /// `, map_location=...`) is the first of its call: its leading comma goes (resolve.cc).
  std::optional<std::pair<std::uint32_t, std::uint32_t>> opens_arguments;
};

/// Custom CUDA operator name -> the project file that defines it (from check_other's cuda_apis).
using CustomOps = std::map<std::string, std::string, std::less<>>;

struct Options {
  std::string target;           ///< a target of the catalogue (data/targets.json)
  std::string torch_version;    ///< "X.Y"; empty = the catalogue's default for the target
  bool specify_device = false;  ///< Ascend's -s: device index from the target's device_id_env
  /// Project-level information (Need::Project): the custom CUDA operators of the project's
  /// C++/CUDA sources. nullptr when the caller has no project (a single file, `explain`):
  /// families that need it do not run.
  const CustomOps* custom_ops = nullptr;
  /// --distributed, on the entry script (--main) and the project modules it imports: the
  /// TP410-TP417 rewrite (ddp.cc).
  bool distributed = false;
  /// With `distributed`: this file is a module the entry script imports (directly or through
  /// another), not the entry script: it gets the rewrite of what it holds (loaders, the model,
  /// side effects) and helpers that read the rank from the environment, but no process-group
  /// set-up and no clean-up: those stay in the entry script, `distributed_main`.
  bool distributed_companion = false;
  std::string distributed_main = {};
  /// With `distributed`: the functions of the imported project modules that build a training
  /// DataLoader ("data.build_loaders"): a loader they return gets its set_epoch where the
  /// caller loops over epochs.
  std::set<std::string, std::less<>> distributed_loader_functions = {};
  std::string model_var = "model";  ///< --model-var: the variable holding the model
  bool keep_batch = false;          ///< --per-rank-batch keep (default split)
  /// TP310 (idiom.cc): the device flags of the command line ported to the target's idiom
  /// (false: --keep-device-flags).
  bool port_idiom = true;
  /// Where the statements that go at the top of the module (TP900's imports and variables, an
  /// InsertGlobalRule's) may go first: 0 for a file; in a notebook, after the IPython lines
  /// (`%pip install`) before its first Python code (notebook::Notebook::top).
  std::uint32_t top_of_module = 0;
  /// The module is a notebook's code cells, run in order: what a rewritten line needs (the
  /// target import, the device variable) goes before it even when it comes before the first
  /// torch import (in a .py file it goes after that import).
  bool notebook = false;
  /// In a notebook: its IPython lines in Python cells (a `!` shell line, `%env`, other magics),
  /// masked in the module. Each has the module offsets of its masked text and its own source
  /// line, for the rules that report what it runs or sets (nvidia-smi, CUDA_VISIBLE_DEVICES):
  /// torchport does not edit IPython lines.
  struct IPythonLine {
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
    std::string text;
  };
  std::vector<IPythonLine> ipython_lines = {};
  /// Where the module sits in its project, for the device values that come from another of
  /// its modules (flow/project_values.h); empty for a single file.
  flow::ModuleContext module = {};
};

/// One row of the vendor's advice reports (Ascend's api_precision_advice.csv,
/// api_performance_advice.csv, affinity_api_call.csv). Advice changes nothing and is no
/// finding: it is written to its own reports and report.json's "advice" array.
struct Advice {
  enum class Kind : std::uint8_t { Precision, Performance, Affinity };
  Kind kind = Kind::Performance;
  std::string api;       ///< "OP" / "Api Call Name": the qualified API, a method or a def name
  std::string api_type;  ///< affinity: "torch" (a call), "function" or "class" (a definition)
  std::string tip;       ///< "Tips"
  std::string affinity;  ///< affinity: "Affinity Api Name"
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

/// "precision", "performance", "affinity".
std::string_view to_string(Advice::Kind k);

struct FileResult {
  std::vector<Finding> findings;       ///< in source order
  std::vector<Advice> advice;          ///< the target's vendor advice, in source order
  std::vector<std::string> cuda_apis;  ///< custom CUDA ops (cuda_op_list.csv "Api" column)
  std::string min_torch_version;       ///< minimum torch the output needs ("" = no constraint)
  /// --specify-device: byte offset of the file's first use of torch.distributed (the driver
  /// warns that pinning every process to one device can break a distributed script).
  std::optional<std::uint32_t> distributed_at;
};

/// Runs every rule family over one parsed Python file.
FileResult check(const syntax::Tree& tree, const catalogue::Catalogue& cat, const Options& opts);
/// The same with the file's semantic model already built (from `tree`'s text and tokens), for
/// a caller that needs the model too.
FileResult check(const syntax::Tree& tree, const semantic::Model& model,
                 const catalogue::Catalogue& cat, const Options& opts);

/// Scans a non-Python file of the project (requirements*.txt, pyproject.toml, setup.cfg,
/// *.sh, *.cpp/*.cc/*.cu/*.cuh). Findings carry byte ranges into `text`; fixes are only
/// produced where the rewrite is safe (e.g. CUDA_VISIBLE_DEVICES in a shell launcher).
/// Files of any other kind return an empty result.
FileResult check_other(std::string_view path, std::string_view text, const Options& opts);
/// False for a file that check_other() returns an empty result for whatever its text (C/C++
/// headers, *.c: the scanned kinds no rule reads): the driver need not read it.
bool other_file_read(std::string_view path);
/// True for the files raise_torch_requirement, move_torch_companions and add_vendor_requirement
/// read (requirements*.txt, pyproject.toml); they find nothing in any other.
bool requirement_file(std::string_view path);
/// TP902 for a requirements*.txt or pyproject.toml whose migrated Python files need torch >=
/// `min_torch` (torch.accelerator: data/targets.json): raises the lower bound of its torch
/// requirement (`torch` -> `torch>=2.6`, `torch>=2.0` -> `torch>=2.6`); an exact pin or an upper
/// bound below it is reported, not changed. No findings for other files.
std::vector<Finding> raise_torch_requirement(std::string_view path, std::string_view text,
                                             std::string_view min_torch);
/// TP902 with a raised torch floor `min_torch`: a companion of torch (torchvision, torchaudio,
/// torchtext: data/catalogue/companions) pinned (`==`, `~=`) to a release built for an older
/// torch moves to its release for the floor (the newest release built for the floor's minor,
/// else the first one built for a newer torch); where the companion has no such release, or an
/// upper bound excludes it, a row says so and nothing changes.
std::vector<Finding> move_torch_companions(std::string_view path, std::string_view text,
                                           std::string_view min_torch,
                                           const catalogue::Catalogue& cat);
/// TP902 for a requirements*.txt or pyproject.toml of a project whose migrated Python files
/// import the target's vendor package: adds `requirement` (data/targets.json, e.g. "torch_npu")
/// after the torch requirement of a requirements*.txt (at the end of requirements.txt when it
/// names no torch; other requirements files without torch are left alone) and to the [project]
/// `dependencies` array of pyproject.toml. Nothing when the file names the distribution already
/// (PEP 503 names). `why` says which files import it. One Insert finding, or none.
std::vector<Finding> add_vendor_requirement(std::string_view path, std::string_view text,
                                            std::string_view requirement, std::string_view why);

/// TP310 (idiom.cc): the command line's device flags ported as one unit. It runs on the output
/// of check()'s fixes (the driver's second pass): its edits are renames and whole-statement
/// deletions of that text.
std::vector<Finding> port_device_idiom(const syntax::Tree& tree, const semantic::Model& model,
                                       const catalogue::Catalogue& cat, const Options& opts);
/// True when `tree` defines a CUDA flag (`add_argument("--cuda", ...)`, accepted or refused):
/// without one port_device_idiom finds nothing, and the driver builds no second semantic model.
bool defines_cuda_flag(const syntax::Tree& tree);

/// --distributed: why the entry script (`tree`) cannot be made a DDP one, as
/// `path:line:col: reason` (it already uses torch.distributed, no DataLoader, the model variable
/// never bound), or "" when it can (ddp.cc). `imported` are the
/// project modules it imports (directly or through one another): a DataLoader or the model's
/// binding may be there.
std::string distributed_refusal(
    const syntax::Tree& tree, const semantic::Model& model, std::string_view model_var,
    const std::vector<std::pair<const syntax::Tree*, const semantic::Model*>>& imported = {});
/// The project modules a file imports: for each import statement, the candidate paths relative
/// to the project root ("pkg/mod.py", "pkg/mod/__init__.py"), searched from `file`'s own
/// directory for relative imports and from `script_dir` (the entry script's directory, Python's
/// sys.path[0]) and the root for absolute ones. The caller keeps those that exist.
/// --distributed: the module-level functions of `tree` (the project module `module`, dotted)
/// that build a training DataLoader: "data.build_loaders".
std::vector<std::string> loader_functions(const syntax::Tree& tree, const semantic::Model& model,
                                          std::string_view module);
std::vector<std::string> imported_module_paths(const syntax::Tree& tree, std::string_view file,
                                               std::string_view script_dir);

class Context;  // rules/context.h: the state of one check() run

/// What a rule family needs besides the file's tokens. check() provides it, or skips the
/// family when the caller cannot (no project information): nothing depends on call order.
enum Need : std::uint8_t {
  NeedModel = 1 << 0,         ///< the semantic model (imports, aliases, references)
  NeedCatalogue = 1 << 1,     ///< the catalogue's API mappings and the target's facts
  NeedTree = 1 << 2,          ///< the syntax tree's nodes (calls, arguments)
  NeedProject = 1 << 3,       ///< project-level information: Options::custom_ops
  NeedSupportLists = 1 << 4,  ///< the vendor's per-torch-version API lists for the target
  /// The findings (and insertion flags) of every family without this need: it runs after them.
  NeedFindings = 1 << 5,
  /// Runs once a file's lone incidental changes are settled (resolve.h: settle_incidental).
  NeedSettled = 1 << 6,
};

/// What a family reads: a parsed Python file (check()) or another project file (check_other()).
enum class Input : std::uint8_t {
  PythonFile,    ///< a Python file: check() runs the family
  OtherFile,     ///< requirements, setup.py, shell launchers: check_other()
  PythonOutput,  ///< the Python file check()'s fixes produced: the driver's second pass
};

/// One rule family: one file src/torchport/rules/<name>.cc with its doc comment.
struct FamilyInfo {
  std::string_view name;  ///< "cuda_api"
  Input input = Input::PythonFile;
  std::uint8_t needs = 0;  ///< Need bits
  /// Families whose claims (Context::handled, their findings) this one respects: they run
  /// first. Every other order between families is free.
  std::array<std::string_view, 4> after{};
  void (*run)(Context&) = nullptr;  ///< Python-file families; check_other() runs the others
};

/// What a code's findings are about. Other families read this declaration, never the code:
/// cuda_leftover marks the lines that still use CUDA from the findings about CUDA, and a file
/// whose only CUDA changes are incidental stays byte-identical unless it has other findings
/// that are not about the torch version (resolve.cc).
enum class Subject : std::uint8_t {
  Cuda,          ///< CUDA code (the default)
  TargetLimit,   ///< a limit of the target that is not about CUDA (float64 on a device without it)
  TorchVersion,  ///< behaviour that changed between two torch versions
};

/// One registered code, for `explain`, docs/rules.md and the reports.
struct RuleInfo {
  std::string_view code;     ///< e.g. "TP100"
  std::string_view name;     ///< kebab-case, e.g. "cuda-module-api"
  std::string_view summary;  ///< one line
  std::string_view family;   ///< the FamilyInfo::name that emits it
  Subject subject = Subject::Cuda;
  /// Its rewrites (Operation::Modify) rename an API inside the expression they are about and
  /// leave it an expression of the same role, so that a later rule may build around them
  /// (device_value wraps an index whose `torch.cuda.current_device` TP100 renamed).
  bool renames_in_place = false;
};

/// The single registry of codes, in code order. Every code a run can emit is here.
std::span<const RuleInfo> registry();
/// The rule families, in the order check() runs them: a stable topological order of their
/// `after` lists, families that need the findings last.
std::span<const FamilyInfo* const> families();
/// The registry row of `code`, or nullptr.
const RuleInfo* find_rule(std::string_view code);
/// What `f`'s code declares it is about (Subject::Cuda for a code not in the registry).
Subject subject_of(const Finding& f);
/// True when `f` is a rewrite whose code declares renames_in_place.
bool renames_in_place(const Finding& f);

}  // namespace torchport::rules
