// The per-file phases of the driver, run on every selected file in parallel: admit (select.h),
// parse and model (parse.h), run the rules (run_rules.h), resolve the conflicts and apply the
// fixes (apply.h), the output pass (output_pass.h) and the self-check (selfcheck.h). C++/CUDA
// sources go first: the custom operators they define are project information for the rules
// of the Python files (TP903).
#pragma once

#include <torchport/project/run_rules.h>
#include <torchport/project/select.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace torchport::project {

/// Output of process_files: one FileWork per selected file, in the selection's order.
struct Processed {
  std::vector<FileWork> works;
};

/// Input: the plan and the selection.
Processed process_files(const Plan& plan, const Selected& selected, const Options& opts);

/// The per-file phases on one file. A defect in a rule does not abort the run: the file is a
/// Failure, copied unchanged.
FileWork process_file(const ProjectFile& f, const FileContext& ctx);

/// Runs `fn(i)` for every index of `todo` on up to `jobs` threads, largest files first (by
/// `files[i].size`; the results are kept by index, so the order of work shows in no output).
/// Even one job runs on a thread of its own: the stack every tree walk needs (syntax/limits.h).
void for_each_file(const std::vector<ProjectFile>& files, std::vector<std::size_t> todo,
                   unsigned jobs, const std::function<void(std::size_t)>& fn);

/// Worker threads for `opts` (Options::jobs, or one per hardware thread).
unsigned max_jobs(const Options& opts);

}  // namespace torchport::project
