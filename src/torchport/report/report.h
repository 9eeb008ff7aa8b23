// The reports of a run: change_list.csv, unsupported_api.csv, unknown_api.csv, cuda_op_list.csv
// (Ascend GPU2Ascend's exact columns), report.json (everything, each string stored once), the log
// and the terminal table.
//
// Writers are pure functions from a Report to text; the driver (project/) writes the files.
#pragma once

#include <torchport/rules/engine.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace torchport::report {

/// One finding, located by the driver.
struct Row {
  std::string file;  ///< relative to the input root, '/' separators
  std::uint32_t start_line = 0;
  std::uint32_t end_line = 0;
  std::uint32_t column = 0;  ///< 1-based column of the start (for path:line:col)
  rules::Operation op = rules::Operation::Modify;
  std::string code;      ///< rule code
  std::string api;       ///< qualified API
  std::string message;   ///< what was done / why not
  bool applied = false;  ///< its fix is in the output
  /// "safe", "unsafe" or "display-only" for a finding with a fix; "" without one.
  std::string applicability;
  std::string changes;  ///< the finding's label of what its fix changes (rules::Finding)
  /// In a notebook: the 1-based cell (cells[cell - 1] of the .ipynb), and the lines and column
  /// are the cell's; 0 for any other file.
  std::uint32_t cell = 0;
};

/// Every finding of a run, by file then position: each file's rows stay the vector they were
/// made in, and the run's list takes those vectors whole. (Moving 49,477 rows of torch's tree
/// into one vector wrote 11 MB of fresh memory: 2,800 page faults, 1.2 % of `analyze`'s CPU.)
/// Read it as one sequence: range-for, size(), operator[].
class Rows {
 public:
  template <bool Const>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Row;
    using difference_type = std::ptrdiff_t;
    using Chunks = std::conditional_t<Const, const std::vector<std::vector<Row>>,
                                      std::vector<std::vector<Row>>>;
    using reference = std::conditional_t<Const, const Row&, Row&>;
    using pointer = std::conditional_t<Const, const Row*, Row*>;

    Iterator() = default;
    Iterator(Chunks* chunks, std::size_t chunk) : chunks_(chunks), chunk_(chunk) { settle(); }
    reference operator*() const { return (*chunks_)[chunk_][row_]; }
    pointer operator->() const { return &**this; }
    Iterator& operator++() {
      ++row_;
      settle();
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const Iterator& o) const { return chunk_ == o.chunk_ && row_ == o.row_; }

   private:
    /// On to the next row that exists: past the end of a chunk, and past empty chunks.
    void settle() {
      while (chunk_ < chunks_->size() && row_ == (*chunks_)[chunk_].size()) {
        ++chunk_;
        row_ = 0;
      }
    }
    Chunks* chunks_ = nullptr;
    std::size_t chunk_ = 0;
    std::size_t row_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  Rows() = default;
  Rows(std::initializer_list<Row> rows) { *this = rows; }
  Rows& operator=(std::initializer_list<Row> rows) {
    chunks_.assign(1, std::vector<Row>(rows));
    size_ = rows.size();
    return *this;
  }

  /// Takes a file's rows whole (their vector's buffer, not a copy of each row).
  void append(std::vector<Row>&& rows) {
    size_ += rows.size();
    if (!rows.empty()) chunks_.push_back(std::move(rows));
  }
  void push_back(Row row) {
    if (chunks_.empty()) chunks_.emplace_back();
    chunks_.back().push_back(std::move(row));
    ++size_;
  }
  /// Room for `files` more files' rows (not for the rows themselves: those come with them).
  void reserve_files(std::size_t files) { chunks_.reserve(chunks_.size() + files); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// The i-th row of the whole sequence (a walk over the files: for tests and the odd lookup).
  const Row& operator[](std::size_t i) const { return const_cast<Rows&>(*this)[i]; }
  Row& operator[](std::size_t i) {
    for (std::vector<Row>& c : chunks_) {
      if (i < c.size()) return c[i];
      i -= c.size();
    }
    throw std::out_of_range("report::Rows: no row " + std::to_string(i));
  }

  iterator begin() { return {&chunks_, 0}; }
  iterator end() { return {&chunks_, chunks_.size()}; }
  const_iterator begin() const { return {&chunks_, 0}; }
  const_iterator end() const { return {&chunks_, chunks_.size()}; }

 private:
  std::vector<std::vector<Row>> chunks_;  ///< no empty chunk
  std::size_t size_ = 0;
};

/// How a file ended (LibCST's codemod runner): every file is one of these, with a reason.
enum class Outcome : std::uint8_t { Success, Failure, Skip };
std::string_view to_string(Outcome o);

struct FileEntry {
  std::string file;  ///< relative path
  Outcome outcome = Outcome::Success;
  std::string reason;  ///< for Failure/Skip: "path:line:col: message" or why it was skipped
  bool python = false;
  bool changed = false;
  std::uint32_t findings = 0;
  std::string min_torch;
  /// A file torchport should have rewritten (Python, or scanned) but did not: too large, does
  /// not decode or parse, cannot be read, a rewrite failed, a link to a file outside the input.
  /// Its reason says why; a run with one is incomplete.
  bool not_migrated = false;
};

struct CudaOp {
  std::string file;
  std::string api;
};

/// One advice row (rules::Advice, located). A project-level row (a setting, no site) has an
/// empty file and lines 0: the CSVs write NA there.
struct AdviceRow {
  std::string file;
  std::uint32_t start_line = 0;
  std::uint32_t end_line = 0;
  rules::Advice::Kind kind = rules::Advice::Kind::Performance;
  std::string api;
  std::string api_type;
  std::string tip;
  std::string affinity;
  std::uint32_t cell = 0;  ///< in a notebook: the 1-based cell of the lines (Row::cell)
};

struct Report {
  std::string command;  ///< "migrate" or "analyze"
  std::string target;
  std::string torch_version;
  std::string input;
  std::string output;  ///< result directory ("" for analyze without -o)
  std::vector<FileEntry> files;
  Rows rows;  ///< all findings, by file then position
  std::vector<CudaOp> cuda_ops;
  std::vector<AdviceRow> advice;  ///< the target's vendor advice (npu only), by file
  bool has_advice = false;        ///< the target has advice lists: the advice CSVs are written
  std::string min_torch;          ///< the highest minimum torch version any output needs

  std::size_t count(rules::Operation op) const;
  std::size_t count(Outcome o) const;
  std::size_t count_not_migrated() const;
  /// report.json's "summary" counts, in its order (files ... unknown, cuda_ops): one list for
  /// report.json and the page.
  std::vector<std::pair<std::string_view, std::uint64_t>> summary_counts() const;
};

/// The file column of a row: `file`, or `file:cellN` in a notebook (Ascend's CSVs keep their
/// columns; the cell goes with the file).
std::string file_label(const std::string& file, std::uint32_t cell);

/// A CSV cell: quoted when it holds a comma, quote or line break (RFC 4180); a cell starting
/// with = + - @ % (other than a lone "-") gets a leading ' so spreadsheets do not run it.
std::string csv_cell(std::string_view cell);

/// `File,Start Line,End Line,Operation Type,Message`: every INSERT/MODIFY/DELETE/UNSUPPORTED row.
std::string change_list_csv(const Report& r);
/// `File,Start Line,End Line,OP,Tips`: the UNSUPPORTED rows.
std::string unsupported_api_csv(const Report& r);
/// `File,Start Line,End Line,OP,Tips`: the UNKNOWN rows.
std::string unknown_api_csv(const Report& r);
/// `File,Api`: custom CUDA operators found in C++/CUDA sources.
std::string cuda_op_list_csv(const Report& r);
/// `File,Outcome,Reason`: every file that was not migrated (FileEntry::not_migrated).
std::string not_migrated_csv(const Report& r);
/// Ascend's advice reports. `File,Start Line,End Line,OP,Tips` (precision, performance) and
/// `File,Start Line,End Line,Api Type,Api Call Name,Affinity Api Name` (affinity); project-level
/// rows have NA for file and lines.
std::string api_precision_advice_csv(const Report& r);
std::string api_performance_advice_csv(const Report& r);
std::string affinity_api_call_csv(const Report& r);
/// Everything, machine-readable, in report.json's format 2 (docs/report-json.md): the summary,
/// then the tables files, findings, cuda_ops and advice as rows of numbers, where a string is
/// its index in "strings" (each distinct string stored once; "" is 0). Python reads it only
/// through torchport.report_json, which expands the rows into one object per finding.
std::string report_json(const Report& r);
/// report_json() with its strings escaped by nlohmann::json (slower; the same text). report_json()
/// falls back to it for a string that is not valid UTF-8, whose bad bytes become U+FFFD.
std::string report_json_reference(const Report& r);
/// One log line per row: `file: line a ~ b   Operation Type: MODIFY   Message: ...`.
std::string log_line(const Row& row);
/// The terminal summary: a `files | statistics` table of the report files plus file outcomes.
/// Without `files_written` (analyze without -o) the table names what was found, not CSV files
/// that do not exist: `findings | count`.
std::string summary_table(const Report& r, bool files_written = true);
/// Text findings for `analyze --format text`: `path:line:col: CODE [OP] api: message`.
std::string findings_text(const Report& r);
/// The same, written to `out` as it is made, 64 KB at a time (tens of megabytes on a large tree:
/// never held whole).
void write_findings_text(const Report& r, std::ostream& out);

/// The larger of two "X.Y[.Z]" versions ("" is the smallest).
std::string max_version(const std::string& a, const std::string& b);

}  // namespace torchport::report
