#include <torchport/project/apply.h>

#include <algorithm>
#include <optional>

namespace torchport::project {

using report::Row;

namespace {

std::string applicability_name(fix::Applicability a) {
  return a == fix::Applicability::Safe     ? "safe"
         : a == fix::Applicability::Unsafe ? "unsafe"
                                           : "display-only";
}

/// The row of finding `f`, without its fix's outcome. Its strings are moved into the row (the
/// findings are spent once they are rows: 49,477 rows on torch's tree, each with three or four
/// strings that would otherwise be copied).
Row located_row(const std::string& rel, std::string_view text, rules::Finding& f,
                const text::LineIndex& lines, const Locate& where) {
  std::uint32_t b, e;
  if (where.earlier) {
    b = fix::to_original(f.begin, *where.earlier);
    e = fix::to_original(std::max(f.begin, f.end), *where.earlier, true);
  } else {
    auto clamp = [&](std::uint32_t o) {
      return std::min<std::uint32_t>(o, static_cast<std::uint32_t>(text.size()));
    };
    b = clamp(f.begin);
    e = clamp(std::max(f.begin, f.end));
  }
  text::LineCol start = lines.locate(b);
  text::LineCol end = lines.locate(e > b ? e - 1 : b);
  Row row;
  row.file = rel;
  row.start_line = start.line;
  row.end_line = end.line;
  row.column = start.column + 1;
  row.op = f.op;
  row.code = std::move(f.code);
  row.api = std::move(f.api);
  row.message = std::move(f.message);
  row.changes = std::move(f.changes);
  row.applied = where.generated;
  if (f.fix) row.applicability = applicability_name(f.fix->applicability);
  return row;
}

/// What became of a fix of applicability `a`, in its finding's row (whose message is the
/// finding's).
void fix_outcome(Row& row, fix::Applicability a, fix::FixOutcome o) {
  row.applied = o == fix::FixOutcome::Applied || o == fix::FixOutcome::Duplicate;
  if (o == fix::FixOutcome::NotApplicable)
    row.message =
        "not applied (" +
        std::string(a == fix::Applicability::Unsafe ? "unsafe fix, left out by --no-unsafe-fixes"
                                                    : "display-only fix") +
        "): " + row.message;
  if (o == fix::FixOutcome::Overlap || o == fix::FixOutcome::Invalid) {
    // Never drop a change silently: it stays in place and is reported as not done.
    row.op = rules::Operation::Unsupported;
    row.message = std::string("not applied (") +
                  (o == fix::FixOutcome::Overlap ? "overlaps another change" : "invalid edit") +
                  "): " + row.message;
  }
}

}  // namespace

Applied apply_findings(const std::string& rel, std::string_view text,
                       std::vector<rules::Finding>& findings, const Options& opts, FileWork& w,
                       const Locate& where) {
  std::optional<text::LineIndex> own;
  const text::LineIndex* lines = where.lines;
  if (!lines && !findings.empty()) lines = &own.emplace(text);
  std::vector<fix::Fix> fixes;
  std::vector<std::size_t> fix_of(findings.size(), SIZE_MAX);
  if (!opts.analyze_only) {
    fixes.reserve(findings.size());
    for (std::size_t i = 0; i < findings.size(); ++i) {
      if (!findings[i].fix) continue;
      fix_of[i] = fixes.size();
      fixes.push_back(std::move(*findings[i].fix));
    }
  }
  // Without a fix (analyze, or a file with nothing to rewrite) the text stays as it is: no copy
  // of it is made, and none is compared with it later.
  fix::ApplyResult ar;
  if (!fixes.empty()) ar = fix::apply_fixes(text, fixes, opts.fixes);
  w.rows.reserve(w.rows.size() + findings.size());  // no doubling: a row per finding
  for (std::size_t i = 0; i < findings.size(); ++i) {
    Row row = located_row(rel, text, findings[i], *lines, where);
    if (fix_of[i] != SIZE_MAX)
      fix_outcome(row, fixes[fix_of[i]].applicability, ar.outcomes[fix_of[i]]);
    w.rows.push_back(std::move(row));
  }
  if (ar.edits.empty() || ar.text == text) return {std::nullopt, std::move(ar.edits)};
  return {std::move(ar.text), std::move(ar.edits)};
}

Fixed apply_fixes(const ProjectFile& f, Checked checked, const Options& opts, FileWork& w) {
  Fixed out;
  out.file = std::move(checked.file);
  Applied a =
      apply_findings(f.rel, out.file.text, checked.findings, opts, w, {.lines = &*out.file.lines});
  out.after = std::move(a.text);
  out.applied = std::move(a.edits);
  return out;
}

}  // namespace torchport::project
