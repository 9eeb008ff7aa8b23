#include <torchport/project/run_rules.h>
#include <torchport/project/selfcheck.h>
#include <torchport/rules/project_rules.h>

namespace torchport::project {

bool imports_module(const semantic::Model& model, std::string_view package) {
  if (package.empty()) return false;
  for (const semantic::Import& im : model.imports()) {
    if (im.module == package ||
        (im.module.size() > package.size() && im.module.starts_with(package) &&
         im.module[package.size()] == '.'))
      return true;
  }
  return false;
}

void drop_ignored(const std::string& rel, const Options& opts,
                  std::vector<rules::Finding>& findings, FileWork& w) {
  const Selection& sel = opts.selection;
  if (sel.ignore.empty() && sel.per_file_ignores.empty()) return;
  std::size_t before = findings.size();
  std::erase_if(findings, [&](const rules::Finding& f) { return sel.ignored(rel, f.code); });
  if (std::size_t n = before - findings.size())
    w.entry.reason = std::to_string(n) + " finding(s) ignored by the rule selection";
}

namespace {

/// The rules' options for file `rel`: the run's, with the project's information.
rules::Options file_options(const std::string& rel, const FileContext& ctx) {
  const DistributedFiles& dist = ctx.dist;
  rules::Options ropts = ctx.opts.rules;
  ropts.custom_ops = &ctx.ops;  // project information for TP903
  ropts.distributed = ctx.opts.distributed && (rel == dist.main || dist.imported.contains(rel));
  ropts.distributed_companion = ropts.distributed && rel != dist.main;
  ropts.distributed_main = dist.main;
  if (ropts.distributed) ropts.distributed_loader_functions = dist.loader_functions;
  ropts.module = {ctx.values, flow::ProjectValues::module_of(rel),
                  rel == "__init__.py" || rel.ends_with("/__init__.py")};
  return ropts;
}

/// The report facts of `fr` (besides the findings), located in `tree`, into `w`.
void report_facts(const std::string& rel, const syntax::Tree& tree, rules::FileResult& fr,
                  FileWork& w) {
  w.entry.min_torch = fr.min_torch_version;
  w.cuda_ops = std::move(fr.cuda_apis);
  if (fr.distributed_at) {
    text::LineCol at = tree.lines().locate(*fr.distributed_at);
    w.distributed_at = rel + ":" + std::to_string(at.line) + ":" + std::to_string(at.column + 1);
  }
  for (const rules::Advice& a : fr.advice) {
    text::LineCol start = tree.lines().locate(a.begin);
    text::LineCol end = tree.lines().locate(a.end > a.begin ? a.end - 1 : a.begin);
    w.advice.push_back({rel, start.line, end.line, a.kind, a.api, a.api_type, a.tip, a.affinity});
  }
}

}  // namespace

Checked run_rules(const ProjectFile& f, Modelled m, const FileContext& ctx, FileWork& w) {
  Checked out;
  PythonText& p = out.file;
  {
    // One semantic model serves the rules and the vendor-package question.
    p.ropts = file_options(f.rel, ctx);
    rules::FileResult fr = rules::check(*m.tree, *m.model, ctx.cat, p.ropts);
    drop_ignored(f.rel, ctx.opts, fr.findings, w);
    report_facts(f.rel, *m.tree, fr, w);
    p.imports_package = imports_module(*m.model, ctx.package);
    out.findings = std::move(fr.findings);
    m.model.reset();
  }
  const syntax::Tree& tree = *m.tree;
  p.output_pass = rules::output_pass_needed(tree, p.ropts);
  p.cuts = statement_cuts(tree);
  p.meta.path = tree.source().path;
  p.meta.encoding = tree.source().encoding;
  p.meta.bom = tree.source().bom;
  // The findings own their text: the tree goes before the report rows and the new text are
  // made (on a file with a finding on every line they are as large as the tree). Its text and
  // line index are kept, moved out of it rather than copied.
  syntax::Tree::Released kept = std::move(*m.tree).release();
  m.tree.reset();
  p.text = std::move(kept.text);
  p.lines.emplace(std::move(kept.lines));
  return out;
}

std::vector<rules::Finding> run_rules_other(const ProjectFile& f, std::string_view bytes,
                                            const Options& opts, FileWork& w) {
  rules::FileResult fr = rules::check_other(f.rel, bytes, opts.rules);
  drop_ignored(f.rel, opts, fr.findings, w);
  w.cuda_ops = fr.cuda_apis;
  return std::move(fr.findings);
}

}  // namespace torchport::project
