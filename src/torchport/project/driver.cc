// project::run is the driver's list of phases, one call each (docs/architecture.md): prepare
// the run, select the files, process each file (parse, model, run the rules, resolve the
// conflicts and apply the fixes, the output pass, the self-check: process.h), the project-level
// rules, write the tree, write the reports, move the result into place. The driver builds no
// report row and edits no finding: the rules make the findings, apply.h turns them into rows.
#include <torchport/project/driver.h>
#include <torchport/project/output_tree.h>
#include <torchport/project/prepare.h>
#include <torchport/project/process.h>
#include <torchport/project/project_findings.h>
#include <torchport/project/reports.h>
#include <torchport/project/select.h>

namespace torchport::project {

namespace fs = std::filesystem;

namespace {

/// The result of a run that ended at `plan` (and, once made, with `reports`): refused when
/// `error` is set, else its exit code.
RunResult result(const Plan& plan, Reports reports, std::string error, const Options& opts) {
  RunResult res;
  res.report = std::move(reports.report);
  res.diff = std::move(reports.diff);
  res.result_dir = plan.result_dir;
  res.report_dir = plan.report_dir;
  const report::Report& rep = res.report;
  // Incomplete wins over findings: a gate must not pass on a tree it could not read.
  if (!error.empty())
    res.exit_code = kExitUsage;
  else if (rep.count(report::Outcome::Failure) > 0 || rep.count_not_migrated() > 0)
    res.exit_code = kExitIncomplete;
  else if (opts.analyze_only && (!rep.rows.empty() || !rep.cuda_ops.empty()))
    res.exit_code = kExitFindings;
  else
    res.exit_code = kExitOk;
  res.error = std::move(error);
  return res;
}

}  // namespace

std::string result_name(const fs::path& input, const std::string& target) {
  fs::path abs = fs::weakly_canonical(fs::absolute(input));
  std::string name = fs::is_directory(abs) ? abs.filename().string() : abs.stem().string();
  if (name.empty()) name = "project";
  return name + "_" + target;
}

RunResult run(const Options& opts, const catalogue::Catalogue& builtin, std::ostream* progress) {
  Plan plan = prepare(opts, builtin);
  if (!plan.refusal.empty()) return result(plan, {}, plan.refusal, opts);
  Selected selected = select_files(plan, opts);
  Processed processed = process_files(plan, selected, opts);
  ProjectFindings project = run_project_rules(plan, selected, std::move(processed), opts);
  Written written = write_tree(plan, selected, std::move(project), opts);
  Reports reports = build_reports(plan, selected, std::move(written), opts, progress);
  std::string error = write_reports(plan, reports, max_jobs(opts) > 1);
  if (error.empty()) error = move_into_place(plan);
  return result(plan, std::move(reports), std::move(error), opts);
}

}  // namespace torchport::project
