// What the driver's phases hand on for one file of the project: its report entry, its located
// rows and what it contributes to the project-level reports, and its new bytes. Each phase
// (docs/architecture.md lists them) fills in its part; the reports are made from these.
#pragma once

#include <torchport/report/report.h>

#include <string>
#include <vector>

namespace torchport::project {

struct FileWork {
  report::FileEntry entry;
  std::vector<report::Row> rows;
  std::vector<std::string> cuda_ops;
  std::vector<report::AdviceRow> advice;
  std::string output;  ///< the new bytes when entry.changed
  std::string diff;
  std::string distributed_at;    ///< --specify-device: "file:line:col" of a torch.distributed use
  bool imports_package = false;  ///< the output imports the target's vendor package
};

/// A Failure that leaves the file as it is: `reason` says why.
inline void fail(FileWork& w, std::string reason) {
  w.entry.outcome = report::Outcome::Failure;
  w.entry.not_migrated = true;
  w.entry.reason = std::move(reason);
}

}  // namespace torchport::project
