// Maps byte offsets to (line, column) as CPython reports them: lines from 1, columns in UTF-8
// bytes from 0. LF, CRLF and a lone CR each end a line.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace torchport::text {

struct LineCol {
  std::uint32_t line;    ///< 1-based
  std::uint32_t column;  ///< 0-based, in bytes
};

class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  /// From the line starts already found (the lexer's, syntax::LexResult::line_starts): 0, then
  /// one past each line break, ascending, as LineIndex(text) finds them.
  explicit LineIndex(std::vector<std::uint32_t> starts) : starts_(std::move(starts)) {}
  LineCol locate(std::uint32_t offset) const;
  std::uint32_t line_start(std::uint32_t line) const;  ///< offset of the first byte of `line`
  std::uint32_t line_count() const { return static_cast<std::uint32_t>(starts_.size()); }

 private:
  std::vector<std::uint32_t> starts_;
};

}  // namespace torchport::text
