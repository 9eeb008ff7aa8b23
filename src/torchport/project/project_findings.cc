#include <torchport/project/apply.h>
#include <torchport/project/diff.h>
#include <torchport/project/launchers.h>
#include <torchport/project/project_findings.h>
#include <torchport/rules/project_rules.h>

namespace torchport::project {

using report::Outcome;

namespace {

/// What the project's requirements must follow, from the processed files: the torch the
/// migrated Python files need, and which of them import the target's vendor package.
rules::ProjectRequirements requirements_of(const Selected& selected,
                                           const std::vector<FileWork>& works) {
  rules::ProjectRequirements req;
  for (std::size_t i = 0; i < selected.files.size(); ++i) {
    const FileWork& w = works[i];
    req.min_torch = report::max_version(req.min_torch, w.entry.min_torch);
    if (w.imports_package && w.entry.outcome == Outcome::Success)
      req.importers.push_back(selected.files[i].rel);
  }
  return req;
}

/// TP902 on one requirements file: its findings applied to its text as migrated so far.
void follow_requirements(const ProjectFile& f, const catalogue::Target& target,
                         const catalogue::Catalogue& cat, const rules::ProjectRequirements& req,
                         const Options& opts, FileWork& w) {
  std::string current = w.output, error;
  if (!w.entry.changed && !read_file(f.path, current, error)) return;
  std::vector<rules::Finding> found = rules::follow_requirements(f.rel, current, target, req, &cat);
  if (found.empty()) return;
  Applied a = apply_findings(f.rel, current, found, opts, w);
  w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
  if (!a.text) return;
  if (opts.diff && !w.entry.changed) w.diff = unified_diff(f.rel, current, *a.text, a.edits);
  w.entry.changed = true;
  w.output = std::move(*a.text);
}

}  // namespace

ProjectFindings run_project_rules(const Plan& plan, const Selected& selected, Processed processed,
                                  const Options& opts) {
  ProjectFindings out;
  out.works = std::move(processed.works);
  // Requirements follow the output (TP902).
  const rules::ProjectRequirements req = requirements_of(selected, out.works);
  for (std::size_t i = 0; i < selected.files.size(); ++i) {
    if (req.min_torch.empty() && req.importers.empty()) break;
    const ProjectFile& f = selected.files[i];
    if (f.kind != FileKind::Scanned || out.works[i].entry.outcome != Outcome::Success ||
        !rules::requirement_file(f.rel))
      continue;
    follow_requirements(f, plan.target(), plan.catalogue(), req, opts, out.works[i]);
  }
  // --distributed: the launchers, in the result's root (TP410).

  if (opts.distributed && !plan.tmp_dir.empty())
    for (Launcher& l : distributed_launchers(plan.target(), plan.dist.main)) {
      rules::Finding f = rules::launcher_finding(l.name, l.text, plan.dist.main, opts.rules.target);
      out.generated.push_back({std::move(l.name), std::move(l.text), {}});
      out.generated.back().findings.push_back(std::move(f));
    }
  return out;
}

}  // namespace torchport::project
