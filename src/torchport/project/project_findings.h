// Phase 10 of the driver, the project-level rules: once every file is processed, the rules that
// need the whole project run (rules/project_rules.h): the requirements follow what the migrated
// Python files need (TP902), and --distributed's launchers are generated (TP410). Their
// findings are applied as every other finding is (apply.h).
#pragma once

#include <torchport/project/process.h>

#include <string>
#include <vector>

namespace torchport::project {

/// A file torchport writes into the result that the project does not have (a launcher).
struct GeneratedFile {
  std::string name;  ///< relative to the result root
  std::string text;
  std::vector<rules::Finding> findings;  ///< on `text`; they describe the file itself
};

/// Output of run_project_rules.
struct ProjectFindings {
  std::vector<FileWork> works;  ///< Processed::works, the requirement files' with TP902 applied
  std::vector<GeneratedFile> generated;
};

/// Input: the plan, the selection and the processed files.
ProjectFindings run_project_rules(const Plan& plan, const Selected& selected, Processed processed,
                                  const Options& opts);

}  // namespace torchport::project
