// The report page, `torchport-report/index.html` and `files/N.js` (docs/migrate.md, "The report
// page"): written by the core with the CSVs, from the Report and the texts of the files.
//
// - index.html is the page (python/torchport/pages/migration.html, embedded at build time) with
//   its data in one <script type="application/json"> block: the summary, every file with its
//   counts and chunk, every finding (strings interned), the custom CUDA operators, the
//   third-party packages, the CSVs and the same project's other targets.
// - files/N.js holds file N's side-by-side rows: the changed and flagged lines with 3 lines of
//   context, `tpChunk(N,{"file":...,"diff":...,"rows":[...]});`. A row is a string (a line both
//   sides have), a number (that many shared lines left out), or ["~", old, new], ["-", old],
//   ["+", new]; the page counts the line numbers.
//
// The texts are shown as Python shows them: UTF-8 with each ill-formed subsequence as U+FFFD, split
// at the line breaks of str.splitlines; a notebook as its code cells under `# %% cell N` lines.
// The functions here are pure; project/page.cc reads the files and writes the page.
#pragma once

#include <torchport/report/report.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::report {

/// `bytes` decoded as UTF-8, each maximal ill-formed subsequence replaced by U+FFFD (as Python's
/// `bytes.decode("utf-8", "replace")`), split into lines as Python's `str.splitlines()` splits
/// them (\n, \r, \r\n, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029; no line after a final break).
std::vector<std::string> page_lines(std::string_view bytes);

/// A source file's lines for the page; nullopt for a binary file (a NUL in its first 8,192
/// bytes).
std::optional<std::vector<std::string>> source_lines(std::string_view bytes);

/// The lines of page_lines() as views into the text they come from, which this owns.
struct PageText {
  std::unique_ptr<std::string> text;
  std::vector<std::string_view> lines;
};
/// page_lines() of `bytes` without a string per line: the bytes themselves when they are valid
/// UTF-8.
PageText page_text(std::string bytes);
/// source_lines() as a PageText.
std::optional<PageText> source_text(std::string bytes);
/// `lines` (without line breaks) as a PageText.
PageText page_text_of_lines(const std::vector<std::string>& lines);

/// A notebook as the page shows it: each code cell's source under a `# %% cell N` line (N counts
/// every cell from 1, as the reports do), and the page line of each such cell's first line.
struct NotebookView {
  std::vector<std::string> lines;
  std::map<std::uint32_t, std::uint32_t> first;  ///< cell -> page line of its first line
};
/// nullopt when `bytes` is not a notebook (JSON with a "cells" list).
std::optional<NotebookView> notebook_view(std::string_view bytes);

/// One line of the side-by-side view: its 1-based number on each side (0: not on that side) and
/// '=' (the same on both), '~' (changed), '-' (only old), '+' (only new).
struct AlignedLine {
  std::uint32_t old_line = 0;
  std::uint32_t new_line = 0;
  char tag = '=';
};
/// Every line of `a` and `b`, aligned: the longest runs of equal lines (a shortest edit script,
/// Myers' O(ND) algorithm, after the common first and last lines), and between two runs the old
/// lines paired with the new ones in order ('~'), the rest '-' or '+'.
std::vector<AlignedLine> align_lines(const std::vector<std::string_view>& a,
                                     const std::vector<std::string_view>& b);

/// files/N.js for file `id`: the rows of `before` (and of `after` when the file was rewritten)
/// around the changed lines and the 1-based lines in `finding_lines`, with 3 lines of context.
std::string page_chunk_js(std::size_t id, std::string_view rel,
                          const std::vector<std::string_view>& before,
                          const std::vector<std::string_view>* after,
                          const std::vector<std::uint32_t>& finding_lines);

/// The same project migrated for another target into the same OUTDIR: a row of the page's
/// "Summary per target" table.
struct PageTarget {
  std::string target;
  std::string href;
  std::uint64_t changed = 0, changes = 0, unsupported = 0, unknown = 0, cuda_ops = 0;
  std::uint64_t third_party = 0;  ///< distinct APIs of TP002 findings
};

/// This run's row of that table.
PageTarget page_target(const Report& rep);
/// The row of another run's report.json (format 1 or 2); nullopt when it cannot be read or is
/// not of the project at `input`.
std::optional<PageTarget> page_target_of_json(std::string_view report_json, std::string_view input);

/// What index.html shows besides the report.
struct PageIndex {
  /// Per report file: the N of its files/N.js, or -1 without one.
  std::vector<std::int64_t> chunks;
  /// Per report file: for a readable notebook, the page line of each cell's first line.
  std::vector<const std::map<std::uint32_t, std::uint32_t>*> cells;
  std::vector<std::string> csvs;  ///< the CSV files of the report directory, sorted
  std::vector<PageTarget> targets;
};

/// The line of the page where line `line` of `row` is (a notebook's cells are one text there).
std::uint32_t page_line(const Row& row, std::uint32_t line,
                        const std::map<std::uint32_t, std::uint32_t>* cells);

/// index.html.
std::string page_index_html(const Report& rep, const PageIndex& index);

/// The page's template (with its `/*DATA*/` mark), embedded at build time.
std::string_view page_template();

}  // namespace torchport::report
