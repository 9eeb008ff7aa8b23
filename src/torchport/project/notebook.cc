#include <torchport/notebook/notebook.h>
#include <torchport/project/apply.h>
#include <torchport/project/diff.h>
#include <torchport/project/notebook.h>
#include <torchport/project/output_pass.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace torchport::project {

namespace {

using report::Outcome;

/// Why a notebook whose module does not parse fails: the first cell that does not parse on its
/// own, located in it (`nb.ipynb:cell3:2:5: ...`); else the module's error, located in its cell.
std::string parse_failure(const ProjectFile& f, const notebook::Notebook& nb,
                          const syntax::Tree& module) {
  for (const notebook::CodeCell& c : nb.cells) {
    if (!c.in_module()) continue;
    const syntax::Tree t = syntax::parse(report::file_label(f.rel, c.number), c.masked.text);
    if (!t.ok())
      return t.diagnostics().empty() ? report::file_label(f.rel, c.number) + ": syntax error"
                                     : t.format(t.diagnostics().front());
  }
  if (module.diagnostics().empty()) return f.rel + ": syntax error";
  const text::Diagnostic& d = module.diagnostics().front();
  const text::LineCol lc = module.lines().locate(d.offset);
  const notebook::CellLine at = notebook::locate(nb, lc.line);
  if (!at.cell) return module.format(d);
  return report::file_label(f.rel, at.cell->number) + ":" + std::to_string(at.line) + ":" +
         std::to_string(lc.column + 1) + ": " + d.message;
}

/// The module's lines of the rows and advice, as cells and lines in them. An insertion that went
/// to the end of the cell before the line its row names (notebook::MovedInsertion) is located
/// where it went.
void locate_in_cells(const notebook::Notebook& nb, const std::string& rel,
                     const std::vector<notebook::MovedInsertion>& moved, FileWork& w) {
  auto cell_line = [&](std::uint32_t& cell, std::uint32_t& start, std::uint32_t& end) {
    const notebook::CellLine a = notebook::locate(nb, start);
    if (!a.cell) return;
    const notebook::CellLine b = notebook::locate(nb, end);
    cell = a.cell->number;
    end = b.cell == a.cell ? b.line : a.line;
    start = a.line;
  };
  for (report::Row& r : w.rows) {
    auto m = std::find_if(moved.begin(), moved.end(), [&](const notebook::MovedInsertion& x) {
      return r.op == rules::Operation::Insert && x.module_line == r.start_line;
    });
    if (m != moved.end()) {
      r.cell = m->cell;
      r.end_line = m->line + (r.end_line - r.start_line);
      r.start_line = m->line;
      continue;
    }
    cell_line(r.cell, r.start_line, r.end_line);
  }
  for (report::AdviceRow& a : w.advice)
    if (a.start_line > 0) cell_line(a.cell, a.start_line, a.end_line);
  // --specify-device's "file:line:col" of a torch.distributed use.
  if (w.distributed_at.starts_with(rel + ":")) {
    const std::string_view rest = std::string_view(w.distributed_at).substr(rel.size() + 1);
    std::uint32_t line = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), line);
    const notebook::CellLine a = notebook::locate(nb, line);
    if (ec == std::errc() && a.cell)
      w.distributed_at = report::file_label(rel, a.cell->number) + ":" + std::to_string(a.line) +
                         std::string(end, rest.data() + rest.size());
  }
}

/// "python", "python3", "Python" (or no language in the metadata): a notebook to migrate.
bool python_kernel(const std::string& language) {
  std::string lower;
  for (char c : language) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.empty() || lower.starts_with("python");
}

/// The notebook-level self-check and the output: the edits mapped into the cells, the new
/// notebook read again (its module must be `after`, and parse).
std::vector<notebook::MovedInsertion> write_notebook(const ProjectFile& f,
                                                     const notebook::Notebook& nb,
                                                     const std::string& bytes, OutputPassed passed,
                                                     const Options& opts, FileWork& w) {
  w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
  const std::string& after = passed.after ? *passed.after : passed.file.text;
  const bool edited = after != passed.file.text;
  if (!edited && !opts.clear_outputs) return {};
  std::vector<notebook::ModuleEdit> edits;
  if (edited)
    for (const fix::AppliedEdit& a : passed.applied)
      edits.push_back({a.edit.begin, a.edit.end, a.edit.replacement});
  notebook::Rewritten rw = notebook::rewrite(nb, bytes, edits, opts.clear_outputs);
  auto keep_original = [&](const std::string& why) {
    w.entry.outcome = Outcome::Failure;
    w.entry.reason = f.rel + ": internal error: " + why + "; the original is kept";
    for (report::Row& r : w.rows) r.applied = false;
    return std::vector<notebook::MovedInsertion>{};
  };
  if (!rw.error.empty()) return keep_original(rw.error);
  notebook::ReadError err;
  const std::optional<notebook::Notebook> again = notebook::read(rw.bytes, err);
  if (!again) return keep_original("the rewritten notebook cannot be read (" + err.message + ")");
  if (again->module != after)
    return keep_original("the rewritten notebook's cells are not the rewritten module");
  if (edited) {
    const syntax::Tree check =
        passed.tree ? std::move(*passed.tree) : syntax::parse(f.rel, again->module);
    if (!check.ok())
      return keep_original("the rewritten notebook does not parse (" +
                           (check.diagnostics().empty()
                                ? std::string("syntax error")
                                : check.format(check.diagnostics().front())) +
                           ")");
  }
  if (rw.bytes == bytes) return {};
  w.entry.changed = true;
  w.output = std::move(rw.bytes);
  if (!opts.diff) return rw.moved;
  for (const notebook::CellChange& ch : rw.changes) {
    std::vector<fix::AppliedEdit> cell_edits;
    for (const notebook::ModuleEdit& e : ch.edits)
      cell_edits.push_back({fix::Edit{e.begin, e.end, e.replacement}, 0});
    w.diff +=
        unified_diff(report::file_label(f.rel, ch.cell->number), ch.before, ch.after, cell_edits);
  }
  return rw.moved;
}

}  // namespace

FileWork process_notebook(const ProjectFile& f, FileWork w, std::string bytes,
                          const FileContext& ctx) {
  notebook::ReadError err;
  std::optional<notebook::Notebook> nb = notebook::read(bytes, err);
  if (!nb) {
    fail(w, f.rel + ":" + std::to_string(err.line) + ":" + std::to_string(err.column) + ": " +
                err.message + " (copied unchanged)");
    return w;
  }
  if (!python_kernel(nb->language)) {
    w.entry.outcome = Outcome::Success;
    w.entry.reason =
        "not a Python notebook (kernel language " + nb->language + "): copied unchanged";
    return w;
  }
  Parsed parsed{std::make_unique<syntax::Tree>(syntax::parse(f.rel, nb->module))};
  if (!parsed.tree->ok()) {
    fail(w, parse_failure(f, *nb, *parsed.tree) + " (copied unchanged)");
    return w;
  }
  w.entry.outcome = Outcome::Success;
  // The rules see the notebook's top: insertions go after its leading IPython lines.
  Options opts = ctx.opts;
  opts.rules.top_of_module = nb->top;
  opts.rules.notebook = true;
  for (const notebook::CodeCell& c : nb->cells) {
    if (!c.in_module()) continue;
    const std::vector<notebook::LineSpan> ml = notebook::split_lines(c.masked.text);
    const std::vector<notebook::LineSpan> sl = notebook::split_lines(c.text);
    for (std::size_t j = 0; j < ml.size() && j < sl.size() && j < c.masked.masked.size(); ++j) {
      if (!c.masked.masked[j]) continue;
      opts.rules.ipython_lines.push_back(
          {c.module_begin + ml[j].begin, c.module_begin + ml[j].content_end,
           c.text.substr(sl[j].begin, sl[j].content_end - sl[j].begin)});
    }
  }
  const FileContext nctx{ctx.cat, opts, ctx.ops, ctx.dist, ctx.package};
  Modelled modelled = build_model(std::move(parsed));
  Checked checked = run_rules(f, std::move(modelled), nctx, w);
  Fixed fixed = apply_fixes(f, std::move(checked), opts, w);
  OutputPassed passed = output_pass(f, std::move(fixed), nctx, w);
  w.imports_package = passed.file.imports_package;
  const std::vector<notebook::MovedInsertion> moved =
      write_notebook(f, *nb, bytes, std::move(passed), opts, w);
  locate_in_cells(*nb, f.rel, moved, w);
  return w;
}

}  // namespace torchport::project
