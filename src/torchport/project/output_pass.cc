#include <torchport/project/output_pass.h>
#include <torchport/rules/project_rules.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <tuple>

namespace torchport::project {

OutputPassed output_pass(const ProjectFile& f, Fixed fixed, const FileContext& ctx, FileWork& w) {
  OutputPassed out;
  out.file = std::move(fixed.file);
  out.applied = std::move(fixed.applied);
  if (!out.file.output_pass) {
    out.after = std::move(fixed.after);
    return out;
  }
  out.ran = true;
  // The first pass's output: its own text, or the file's where it changed nothing.
  const std::string& first = fixed.after ? *fixed.after : out.file.text;
  syntax::Tree t2 = syntax::parse(f.rel, first);
  std::vector<rules::Finding> fs;
  if (t2.ok()) {
    const semantic::Model m2(t2);
    fs = rules::check_output(t2, m2, ctx.cat, out.file.ropts).findings;
    drop_ignored(f.rel, ctx.opts, fs, w);
  }
  if (fs.empty()) {  // unchanged (or the first pass's output does not parse: the self-check
                     // says so)
    out.after = std::move(fixed.after);
    out.tree.emplace(std::move(t2));
    return out;
  }
  const std::size_t first_rows = w.rows.size();
  Applied second = apply_findings(f.rel, first, fs, ctx.opts, w,
                                  {.lines = &*out.file.lines, .earlier = &out.applied});
  // The second pass's rows join the first's in source order (the report lists a file's rows as
  // they come in the file).
  std::inplace_merge(w.rows.begin(), w.rows.begin() + static_cast<std::ptrdiff_t>(first_rows),
                     w.rows.end(), [](const report::Row& a, const report::Row& b) {
                       return std::tie(a.start_line, a.column) < std::tie(b.start_line, b.column);
                     });
  if (second.text) {
    out.applied = fix::compose(out.applied, second.edits, *second.text);
    out.after = std::move(second.text);
  } else {
    out.tree.emplace(std::move(t2));  // every fix was left out: the text is the one parsed
    out.after = std::move(fixed.after);
  }
  return out;
}

}  // namespace torchport::project
