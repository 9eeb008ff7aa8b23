// Phase 1 of the driver, prepare the run: checks the options, loads the custom rules on top of
// the catalogue, resolves --distributed's entry script and decides where the output tree, the
// backups and the reports go. A run that is refused here writes nothing.
#pragma once

#include <torchport/catalogue/catalogue.h>
#include <torchport/project/driver.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace torchport::project {

/// The name of the reports' directory inside a result (or a backup) directory.
inline constexpr const char* kReportDirName = "torchport-report";

/// --distributed: the entry script and the project modules it imports (directly or through one
/// another), all relative to INPUT.
struct DistributedFiles {
  std::string main;
  std::set<std::string> imported;
  std::set<std::string, std::less<>> loader_functions;  ///< rules::loader_functions of `imported`
};

/// Input: the options and the built-in catalogue. Output: where everything goes.
struct Plan {
  std::string refusal;  ///< why the run is refused ("" = it goes ahead); nothing was written
  std::filesystem::path input;  ///< absolute, resolved
  bool input_is_dir = false;
  DistributedFiles dist;
  std::filesystem::path tmp_dir;     ///< migrate: the tree is built here, then renamed into place
  std::filesystem::path backup_dir;  ///< --inplace: the originals of the changed files
  std::filesystem::path result_dir;  ///< migrate: the output tree
  std::filesystem::path report_dir;  ///< where the reports go ("" = none)
  std::vector<std::filesystem::path> exclude;  ///< directories that are not part of the project

  /// The catalogue of the run: the built-in one, with the --rules files on top.
  const catalogue::Catalogue& catalogue() const { return custom ? *custom : *builtin; }
  const catalogue::Target& target() const;

  const catalogue::Catalogue* builtin = nullptr;
  std::optional<catalogue::Catalogue> custom;
  std::string target_name;
};

Plan prepare(const Options& opts, const catalogue::Catalogue& builtin);

/// --distributed: resolves --main (relative to INPUT) into `dist.main`, finds the project
/// modules it imports, and checks that the script can be converted (rules::distributed_refusal).
/// Returns "" or why not (distributed_entry.cc).
std::string distributed_entry(const Options& opts, const std::filesystem::path& input,
                              bool input_is_dir, DistributedFiles& dist);

}  // namespace torchport::project
