// The rules that need more than one file's first pass, behind the same interface as the others
// (findings with their fixes; the driver locates and applies them):
//   - the output pass: families that read the output of check()'s fixes (TP310, idiom.cc);
//   - requirements that follow the migrated code (TP902, other_files.cc's requirement edits);
//   - the launchers --distributed generates (TP410);
//   - the target's project-level advice (settings with no site in the code).
#pragma once

#include <torchport/rules/engine.h>

#include <string>
#include <string_view>
#include <vector>

namespace torchport::catalogue {
struct Target;
struct AdviceTable;
}  // namespace torchport::catalogue

namespace torchport::rules {

/// True when the output pass can find something in the output of `original`'s fixes: no rule
/// of the first pass writes a CUDA flag, so an original without one (or --keep-device-flags)
/// has none to port, and no second tree or model is built.
bool output_pass_needed(const syntax::Tree& original, const Options& opts);

/// Runs the families whose input is the output of check()'s fixes (Input::PythonOutput) over
/// that output, parsed (`tree`, `model`). Findings carry ranges into the output's text.
FileResult check_output(const syntax::Tree& tree, const semantic::Model& model,
                        const catalogue::Catalogue& cat, const Options& opts);

/// What the project's requirements must follow (TP902), from every migrated Python file.
struct ProjectRequirements {
  std::string min_torch;  ///< the torch the migrated Python files need ("" = no constraint)
  /// The migrated Python files that import the target's vendor package, in file order.
  std::vector<std::string> importers;
};

/// TP902 for one requirements*.txt or pyproject.toml (`text` as migrated so far): raises its
/// torch requirement to `req.min_torch` (raise_torch_requirement) and, when a migrated file
/// imports the target's vendor package, adds the target's distribution (add_vendor_requirement);
/// where data/targets.json names no distribution, the place is reported, not changed.
/// With `cat`, a companion pinned below the raised floor moves with it (move_torch_companions).
std::vector<Finding> follow_requirements(std::string_view path, std::string_view text,
                                         const catalogue::Target& target,
                                         const ProjectRequirements& req,
                                         const catalogue::Catalogue* cat = nullptr);

/// TP410 for a launcher --distributed generates (`name`, whose whole `text` torchport wrote):
/// an Insert finding over the file, without a fix (the file is the change).
Finding launcher_finding(std::string_view name, std::string_view text, std::string_view main,
                         std::string_view target);

/// The target's project-level advice: settings with no site in the code (no range).
std::vector<Advice> project_advice(const catalogue::AdviceTable& table);

}  // namespace torchport::rules
