// Phase 11 of the driver, write the tree: migrate builds the result in a scratch directory
// (every project file, rewritten or copied, links recreated, empty directories kept, then the
// generated files), --inplace backs up and replaces each changed file, analyze writes nothing.
// Once the reports are in it, the scratch directory moves into place in one rename.
#pragma once

#include <torchport/project/project_findings.h>

#include <string>

namespace torchport::project {

/// Output of write_tree: the works, with a Failure where a file could not be written, and one
/// more work per generated file (after the project's files).
struct Written {
  std::vector<FileWork> works;
};

/// Input: the processed files and the generated ones.
Written write_tree(const Plan& plan, const Selected& selected, ProjectFindings project,
                   const Options& opts);

/// After the reports (phase 12): the result directory replaces any earlier one. Returns "" or
/// why not (the scratch directory is removed).
std::string move_into_place(const Plan& plan);

}  // namespace torchport::project
