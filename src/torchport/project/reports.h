// Phase 12 of the driver, write the reports: the report (report.h) and the log are made from
// the works, in file order (deterministic whatever --jobs is), and every report file is written
// (into the scratch tree for migrate, so that the result moves into place with them).
#pragma once

#include <torchport/project/prepare.h>
#include <torchport/project/work.h>

#include <iosfwd>
#include <string>
#include <vector>

namespace torchport::project {

/// Output of build_reports.
struct Reports {
  report::Report report;
  std::string log;   ///< torchport.log
  std::string diff;  ///< every file's diff, in file order (Options::diff)
};

/// Input: the works (moved into the report), the default-excluded directories (for the log).
/// A file that is not migrated is also a warning on `progress`, if given.
Reports build_reports(const Plan& plan, std::vector<FileWork>& works,
                      const std::vector<std::string>& excluded, const Options& opts,
                      std::ostream* progress);

/// Writes every report file where the plan says. Returns "" or an error (the scratch tree is
/// then removed). With `parallel`, report.json (the largest) is rendered and written on a
/// second thread while the others are.
std::string write_reports(const Plan& plan, const Reports& reports, bool parallel);

}  // namespace torchport::project
