// The report page (report/page.h), written with the CSVs: the texts of the files with findings or
// changes are read from the input (from the backup for --inplace) and from the result being
// built, the project's other targets from their report.json in the same OUTDIR.
#pragma once

#include <torchport/project/prepare.h>
#include <torchport/report/report.h>

#include <filesystem>
#include <string>

namespace torchport::project {

/// Writes index.html and files/N.js into `dir` (the report directory being written: in the
/// scratch tree for migrate), replacing an earlier files/. Returns "" or an error.
std::string write_page(const Plan& plan, const report::Report& rep,
                       const std::filesystem::path& dir);

}  // namespace torchport::project
