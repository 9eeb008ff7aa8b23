#include <torchport/project/diff.h>
#include <torchport/project/selfcheck.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <string>

namespace torchport::project {

std::vector<std::uint32_t> statement_cuts(const syntax::Tree& tree) {
  std::vector<std::uint32_t> cuts;
  const std::string_view text = tree.text();
  std::uint32_t prev_end = 0;  // the end of the statement before
  for (const syntax::Node* st : tree.root().children()) {
    if (st->role() != syntax::Role::Body) continue;
    std::uint32_t b = tree.byte_range(*st).begin;
    for (const syntax::Node* d : st->children())
      if (d->role() == syntax::Role::Decorator) b = std::min(b, tree.byte_range(*d).begin);
    while (b > 0 && text[b - 1] != '\n' && text[b - 1] != '\r') --b;
    // A line that also holds the end of the statement before (`x = (1,\n2); y = 3`) is no cut.
    if (b >= prev_end && (cuts.empty() || cuts.back() < b)) cuts.push_back(b);
    prev_end = std::max(prev_end, tree.byte_range(*st).end);
  }
  return cuts;
}

bool edited_statements_parse(const std::string& rel, std::string_view original,
                             std::string_view after, const std::vector<std::uint32_t>& cuts,
                             const std::vector<fix::AppliedEdit>& edits) {
  if (cuts.empty() || edits.empty()) return false;
  // Region k is [bounds[k], bounds[k + 1]) of the original.
  std::vector<std::uint32_t> bounds;
  bounds.reserve(cuts.size() + 2);
  if (cuts.front() != 0) bounds.push_back(0);
  bounds.insert(bounds.end(), cuts.begin(), cuts.end());
  bounds.push_back(static_cast<std::uint32_t>(original.size()));
  const std::size_t regions = bounds.size() - 1;
  auto region_of = [&](std::uint32_t o) {  // the region holding offset o (o < size)
    return static_cast<std::size_t>(std::upper_bound(bounds.begin(), bounds.end(), o) -
                                    bounds.begin()) -
           1;
  };
  std::vector<char> dirty(regions, 0);
  for (const fix::AppliedEdit& a : edits) {
    const std::uint32_t b = a.edit.begin, e = a.edit.end;
    if (b >= original.size()) {
      dirty[regions - 1] = 1;  // appended at the end
      continue;
    }
    const std::size_t rb = region_of(b), re = e > b ? region_of(e - 1) : rb;
    for (std::size_t k = rb; k <= re && k < regions; ++k) dirty[k] = 1;
  }
  // Sweep the runs of dirty regions, mapping their bounds to `after`'s offsets: an edit that
  // begins before a bound (or an insertion before it) has shifted it.
  std::int64_t delta = 0;
  std::size_t next_edit = 0;
  auto out_offset = [&](std::uint32_t o) {
    while (next_edit < edits.size() && edits[next_edit].edit.begin < o) {
      const fix::Edit& ed = edits[next_edit].edit;
      delta += static_cast<std::int64_t>(ed.replacement.size()) -
               (static_cast<std::int64_t>(ed.end) - ed.begin);
      ++next_edit;
    }
    return static_cast<std::size_t>(static_cast<std::int64_t>(o) + delta);
  };
  for (std::size_t k = 0; k < regions;) {
    if (!dirty[k]) {
      ++k;
      continue;
    }
    std::size_t j = k;
    while (j < regions && dirty[j]) ++j;
    const std::size_t ob = out_offset(bounds[k]);
    const std::size_t oe = j == regions ? after.size() : out_offset(bounds[j]);
    if (ob > oe || oe > after.size()) return false;
    const std::string_view run = after.substr(ob, oe - ob);
    if (j < regions && (run.empty() || (run.back() != '\n' && run.back() != '\r'))) return false;
    if (!syntax::parse(rel, std::string(run)).ok()) return false;
    k = j;
  }
  return true;
}

namespace {

/// Why the output of `f` does not parse (the original is kept).
std::string does_not_parse(const ProjectFile& f, const syntax::Tree& check) {
  const bool too_deep =
      !check.diagnostics().empty() && check.diagnostics().front().message == syntax::kTooDeep;
  const std::string where = check.diagnostics().empty() ? std::string("syntax error")
                                                        : check.format(check.diagnostics().front());
  // A file near the depth limit whose rewrite adds a level is not a bug: say so.
  return too_deep ? f.rel + ": the rewritten file would nest deeper than " +
                        std::to_string(syntax::kMaxNesting) + " levels (" + where +
                        "); the original is kept"
                  : f.rel + ": internal error: the rewritten file does not parse (" + where +
                        "); the original is kept";
}

}  // namespace

void self_check(const ProjectFile& f, OutputPassed passed, const FileContext& ctx, FileWork& w) {
  const PythonText& p = passed.file;
  w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
  if (!passed.after || *passed.after == p.text) {
    w.imports_package = p.imports_package;
    return;
  }
  const std::string& after = *passed.after;
  // Without a tree of the output pass, the edited module-level statements are parsed on their
  // own first; the whole text is parsed when that proves nothing (or its model is needed).
  const bool proven = !passed.ran && ctx.package.empty() &&
                      edited_statements_parse(f.rel, p.text, after, p.cuts, passed.applied);
  std::optional<syntax::Tree> check;
  if (passed.tree)
    check.emplace(std::move(*passed.tree));
  else if (!proven)
    check.emplace(syntax::parse(f.rel, after));
  passed.tree.reset();
  if (check && !check->ok()) {
    w.entry.outcome = report::Outcome::Failure;
    w.entry.reason = does_not_parse(f, *check);
    for (report::Row& r : w.rows) r.applied = false;
    return;
  }
  w.entry.changed = true;
  if (!ctx.package.empty())
    w.imports_package = imports_module(semantic::Model(*check), ctx.package);
  w.output = text::encode(p.meta, after);
  if (ctx.opts.diff) w.diff = unified_diff(f.rel, p.text, after, passed.applied);
}

}  // namespace torchport::project
