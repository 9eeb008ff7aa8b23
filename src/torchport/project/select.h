// Phase 2 of the driver, select the files: the project's files (files.h), and for each one
// whether it is read at all (--exclude, links, other kinds, --max-file-size, an earlier crash).
#pragma once

#include <torchport/project/files.h>
#include <torchport/project/prepare.h>
#include <torchport/project/work.h>
#include <torchport/text/file.h>

#include <optional>
#include <string>
#include <vector>

namespace torchport::project {

/// Output of select_files.
struct Selected {
  std::vector<ProjectFile> files;     ///< sorted by relative path
  std::vector<std::string> excluded;  ///< directories excluded by default (for the log)
  /// The target's vendor package when the project has requirements that could name it (the
  /// rules then note which Python files import it: TP902), else "".
  std::string package;
};

/// Input: the plan. Output: the project's files.
Selected select_files(const Plan& plan, const Options& opts);

/// Output of admit_file: the file's bytes, or (no bytes) its final entry: skipped, or failed
/// before it was read.
struct Admitted {
  FileWork work;  ///< the entry (file, python) the next phases fill in
  std::optional<std::string> bytes;
};

/// Input: one file of the selection.
/// `root`, when given, is the input directory held open: the file is read by its relative path.
Admitted admit_file(const ProjectFile& f, const Options& opts,
                    const text::OpenDirectory* root = nullptr);

}  // namespace torchport::project
