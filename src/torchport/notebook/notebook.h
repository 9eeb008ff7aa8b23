// A Jupyter notebook (nbformat 4) as a Python source: its code cells, in order, form one virtual
// module, as the kernel sees them (a name bound in cell 2 is known in cell 7). IPython syntax is
// masked line for line (ipython.h), cells whose magic runs something other than Python are left
// out, and every line of the module maps back to a cell and a line in it.
//
// Edits of the module map back into the cells and are spliced into the original file as JSON
// string bytes: only the bytes of each change are new. The layout of the JSON (indentation, key
// order, a source as one string or as a list of lines, the trailing newline or its absence,
// non-ASCII as raw UTF-8 or \uXXXX escapes) is kept, and so are the outputs, execution counts
// and metadata unless clear_outputs asks for them to go.
#pragma once

#include <torchport/notebook/ipython.h>
#include <torchport/notebook/json_scan.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::notebook {

struct Span {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
};

struct CodeCell {
  std::uint32_t number = 0;  ///< 1-based position among all the notebook's cells (cells[number-1])
  bool list = false;         ///< the source is a list of strings (else one string)
  Span source;               ///< the raw bytes of the source value
  std::vector<Span> tokens;  ///< the raw bytes of each of its string tokens
  std::string text;          ///< the decoded source
  MaskedCell masked;
  std::optional<Span> outputs;          ///< the raw bytes of the outputs value
  std::optional<Span> execution_count;  ///< the raw bytes of the execution_count value
  // Where the cell is in the module (Python cells only).
  std::uint32_t module_begin = 0;
  std::uint32_t first_line = 0;  ///< 1-based line of the module where the cell begins
  bool added_newline = false;    ///< the module has a line break after it the cell lacks
  bool in_module() const { return masked.kind == CellKind::Python && !masked.text.empty(); }
};

struct Notebook {
  std::vector<CodeCell> cells;   ///< the code cells, in order
  std::uint32_t cell_count = 0;  ///< all cells (markdown and raw included)
  StringStyle style;             ///< how the file writes strings (for new text)
  std::string language;          ///< the kernel's language ("" when the metadata does not say)
  std::string module;            ///< the virtual module
  /// Where "the top of the module" is for insertions: the first line of Python code of the first
  /// cell that has any, after the `%pip` / `!pip` lines and other IPython lines before it.
  std::uint32_t top = 0;
};

/// Why a file is not a notebook torchport can read: the line and column (1-based, of the file's
/// bytes) and a message.
struct ReadError {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::string message;
};

/// Reads the notebook in `bytes`. nullopt, with `error`, when it is not JSON or not nbformat 4.
std::optional<Notebook> read(std::string_view bytes, ReadError& error);

/// A cell and a line in it (1-based), for a line of the module.
struct CellLine {
  const CodeCell* cell = nullptr;
  std::uint32_t line = 0;
};
/// The cell and line of the module's 1-based `line` (cell nullptr when out of range).
CellLine locate(const Notebook& nb, std::uint32_t line);

/// An edit of the module: [begin, end) replaced.
struct ModuleEdit {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::string replacement;
};

/// What changed in one cell: its source before and after, and the edits on `before`.
struct CellChange {
  const CodeCell* cell = nullptr;
  std::string before;
  std::string after;
  std::vector<ModuleEdit> edits;  ///< offsets of `before`
};

/// An insertion at the start of a cell's first line in the module that went to the end of the
/// cell before it (rewrite()): the module line its rows name, and where it is in the notebook.
struct MovedInsertion {
  std::uint32_t module_line = 0;
  std::uint32_t cell = 0;  ///< CodeCell::number
  std::uint32_t line = 0;  ///< its first line in that cell
};

struct Rewritten {
  std::string bytes;                ///< the new notebook
  std::vector<CellChange> changes;  ///< the cells whose source changed, in order
  std::vector<MovedInsertion> moved;
  std::string error;  ///< why the edits cannot be mapped ("" = done)
};

/// The notebook `bytes` (read as `nb`) with the module's `edits` (sorted, not overlapping)
/// mapped into its cells, and with clear_outputs, every code cell's outputs and execution count
/// cleared. An edit that touches a masked line or the line break between two cells cannot be
/// mapped: `error` says so, and `bytes` is empty.
Rewritten rewrite(const Notebook& nb, std::string_view bytes, const std::vector<ModuleEdit>& edits,
                  bool clear_outputs);

}  // namespace torchport::notebook
