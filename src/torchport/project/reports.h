// Phase 12 of the driver, write the reports: the report (report.h) and the log are made from
// the works, in file order (deterministic whatever --jobs is), and every report file is written
// (into the scratch tree for migrate, so that the result moves into place with them).
#pragma once

#include <torchport/project/output_tree.h>

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

/// Input: the written works (moved into the report) and the selection (its default-excluded
/// directories go to the log). A file that is not migrated is also a warning on `progress`.
Reports build_reports(const Plan& plan, const Selected& selected, Written written,
                      const Options& opts, std::ostream* progress);

/// Writes every report file where the plan says. Returns "" or an error (the scratch tree is
/// then removed). With `parallel`, report.json (the largest) is rendered and written on a
/// second thread while the others are.
std::string write_reports(const Plan& plan, const Reports& reports, bool parallel);

}  // namespace torchport::project
