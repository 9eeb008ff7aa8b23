// The project driver of `migrate` and `analyze`: discovers the files, runs the rules on each
// (in parallel), applies the safe fixes, re-parses every rewritten file, writes the output tree
// atomically and the reports. A rewrite never aborts the run: every file ends as Success,
// Failure or Skip with a reason, and files that cannot be handled are still copied.
// run() is the list of phases, one file each under project/ (docs/architecture.md).
#pragma once

#include <torchport/fix/edit.h>
#include <torchport/project/contain.h>
#include <torchport/project/selection.h>
#include <torchport/report/report.h>
#include <torchport/rules/engine.h>

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace torchport::catalogue {
class Catalogue;
}

namespace torchport::project {

/// The exit codes of `analyze` and `migrate` (docs/cli.md lists every command's).
inline constexpr int kExitOk = 0;          ///< done, nothing to report
inline constexpr int kExitFindings = 1;    ///< analyze: CUDA-specific code was found (the CI gate)
inline constexpr int kExitUsage = 2;       ///< usage error, or the run was refused: nothing written
inline constexpr int kExitIncomplete = 3;  ///< a file was not migrated (each one is reported)
inline constexpr int kExitInternal = 4;    ///< an internal error (a bug in torchport)

struct Options {
  std::filesystem::path input;   ///< a directory or one file
  std::filesystem::path outdir;  ///< migrate: the parent of the result directory;
                                 ///< analyze / --inplace: where reports go ("" = none / default)
  rules::Options rules;
  bool analyze_only = false;
  bool inplace = false;
  std::filesystem::path backup;  ///< --inplace: originals go here ("" = <input>.torchport-backup)
  bool diff = false;             ///< collect a unified diff of every change
  bool clear_outputs = false;    ///< notebooks: the outputs and execution counts are cleared
  bool force = false;            ///< replace an existing result / backup directory
  unsigned jobs = 0;             ///< worker threads; 0 = one per hardware thread
  std::string command_line;      ///< for the log
  std::vector<std::filesystem::path> rule_files;  ///< --rules: custom rules on top of the catalogue
  Selection selection;                            ///< --exclude, --ignore, --per-file-ignores
  /// The highest applicability migrate applies: fix::kDefaultApplied (Unsafe: the fixes that
  /// change behaviour are applied, labelled), as on the command line; Safe with --no-unsafe-fixes.
  fix::Applicability fixes = fix::kDefaultApplied;
  /// A `\r`-rewritten "files done" line on stderr while the files are processed (the CLI sets
  /// it when stderr is a terminal and -q is not given).
  bool progress_line = false;
  /// torchport.log gets a line per file and per finding (--verbose); by default it keeps the
  /// warnings (files not migrated, run-wide warnings) and the summary: the findings are in the
  /// CSVs.
  bool verbose_log = false;
  bool default_excludes = true;  ///< skip .git, __pycache__, virtualenvs... (files.h)
  std::uintmax_t max_bytes = 0;  ///< files larger than this are not migrated (0 = no limit)
  /// --distributed: the entry script (--main) becomes a DDP one (rules/ddp.cc), the result is
  /// OUTDIR/<name>_<target>_multi/ with launchers (launchers.h). rules.model_var and
  /// rules.keep_batch are its options; rules.distributed is set per file by the driver.
  bool distributed = false;
  std::filesystem::path main;  ///< --main: the entry script (relative to INPUT, or absolute)
  /// Files that crashed an earlier attempt of this run (run_contained): each becomes a
  /// Failure row, copied unchanged, without being read.
  std::vector<CrashedFile> crashed;
};

struct RunResult {
  int exit_code = 0;  ///< kExitOk, kExitFindings (analyze), kExitUsage (refused), kExitIncomplete
  std::string error;  ///< why the run was refused (nothing was written)
  report::Report report;
  std::filesystem::path result_dir;  ///< migrate: the output tree
  std::filesystem::path report_dir;  ///< where the report files were written ("" = none)
  std::string diff;                  ///< unified diff of all changes (Options::diff)
};

/// Runs migrate (or analyze when opts.analyze_only). Progress lines go to `progress` if given.
RunResult run(const Options& opts, const catalogue::Catalogue& cat, std::ostream* progress);

/// Name of the result directory: "<input name>_<target>" (the stem for a single file).
std::string result_name(const std::filesystem::path& input, const std::string& target);

}  // namespace torchport::project
