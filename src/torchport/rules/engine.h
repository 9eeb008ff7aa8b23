// The rule engine: the interface between the rules and the driver.
//
// check() runs every registered rule family over one parsed Python file and returns the
// findings (each with an optional fix) plus what the reports need. The driver (project/)
// turns byte ranges into lines, applies the safe fixes and writes the reports; the rules never
// touch files. check_other() does the same for the non-Python files of a project
// (requirements.txt, pyproject.toml, shell launchers, .cpp/.cu sources with custom ops).
#pragma once

#include <torchport/fix/edit.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

struct Finding {
  std::string code;  ///< rule code, e.g. "TP101"
  Operation op = Operation::Modify;
  std::string api;          ///< qualified API, e.g. "torch.cuda.max_memory_allocated"
  std::string message;      ///< what was done, or why it could not be done
  std::uint32_t begin = 0;  ///< byte range in the decoded text (lines derived by the driver)
  std::uint32_t end = 0;
  std::optional<fix::Fix> fix;  ///< absent for Unsupported/Unknown and for display-only notes
};

struct Options {
  std::string target;           ///< npu|mlu|musa|xpu|mps|hpu|cpu|accelerator
  std::string torch_version;    ///< "X.Y"; empty = the catalogue's default for the target
  bool specify_device = false;  ///< Ascend's -s: device index from the DEVICE_ID env variable
};

struct FileResult {
  std::vector<Finding> findings;       ///< in source order
  std::vector<std::string> cuda_apis;  ///< custom CUDA ops (cuda_op_list.csv "Api" column)
  std::string min_torch_version;       ///< minimum torch the output needs ("" = no constraint)
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

/// One registered rule family, for `explain`, docs/rules.md and the reports.
struct RuleInfo {
  std::string_view code;     ///< first code of the family, e.g. "TP100"
  std::string_view name;     ///< kebab-case, e.g. "cuda-module-api"
  std::string_view summary;  ///< one line
};

/// The single registry, in code order.
std::span<const RuleInfo> registry();

}  // namespace torchport::rules
