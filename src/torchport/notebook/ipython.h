// IPython syntax in a notebook's code cell, masked so that the cell parses as Python and no rule
// touches it, line for line (IPython's own input transformers decide the same things):
//   - a cell magic (`%%name` on the cell's first non-blank line): `%%time`, `%%timeit`,
//     `%%capture`, `%%prun`, `%%debug` and `%%memit` run their body as Python, so only the
//     magic's line is masked; any other (`%%bash`, `%%sh`, `%%writefile`, `%%html`, ...) holds
//     something that is not the kernel's Python, and the whole cell is masked (Foreign);
//   - a logical line that starts with an IPython escape: `%` (line magic), `!` / `!!` (shell),
//     `?` / `??` (help), `/` `,` `;` (explicit auto-call);
//   - an assignment from one: `files = !ls`, `t = %timeit -o f()`;
//   - automagic: a line magic's name without its `%` (`pip install diffusers`, `cd data`), when
//     what follows it cannot continue a Python statement (IPython's prefilter decides so);
//   - a help request at the end of a line: `obj?`, `obj.method??`;
//   - the lines a masked line continues onto with a trailing backslash.
// A masked line becomes a comment (`#` and its text) or, when indented (the body of a block),
// `pass` with its indentation, so that the block still parses. Unmasked lines keep their bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::notebook {

enum class CellKind : std::uint8_t {
  Python,   ///< the kernel runs it as Python (after its IPython lines)
  Foreign,  ///< a cell magic that runs its body as something else: not Python, never edited
};

struct MaskedCell {
  CellKind kind = CellKind::Python;
  std::string magic;  ///< the cell magic's name ("bash", "time"), "" when there is none
  /// The source with every masked line replaced; the same lines, with the same line breaks.
  std::string text;
  std::vector<bool> masked;  ///< per line of the source (0-based): masked
};

/// The source's lines: [begin, end) byte ranges, each ending after its line break (LF, CRLF or a
/// lone CR, as text::LineIndex counts them); the last one may have none. An empty source has
/// none.
struct LineSpan {
  std::uint32_t begin = 0;
  std::uint32_t content_end = 0;  ///< before the line break
  std::uint32_t end = 0;
};
std::vector<LineSpan> split_lines(std::string_view text);

/// Masks one code cell's source (see the file comment).
MaskedCell mask_cell(std::string_view source);

}  // namespace torchport::notebook
