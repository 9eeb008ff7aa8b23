// Indentation: the Whitespace token at the start of a line and the INDENT/DEDENT tokens, computed
// as CPython does (tabs to the next multiple of 8, form feed resets the column, and a second
// column with tab size 1 to detect inconsistent tabs and spaces).
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lexer_impl.h"

namespace torchport::syntax::detail {

namespace {
constexpr std::uint32_t kTabSize = 8;
constexpr std::uint32_t kAltTabSize = 1;
constexpr std::size_t kMaxIndent = 100;
}  // namespace

void Lexer::lex_line_start() {
  const std::uint32_t start = pos_;
  std::uint32_t col = 0;
  std::uint32_t altcol = 0;
  std::uint32_t p = pos_;
  for (;;) {
    // A run of spaces (most indentation is nothing else), counted at once: sixteen at a time
    // (the first byte that is not a space ends it), then one at a time in the last fifteen
    // bytes of the text.
    const std::uint32_t spaces = p;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' ');
    for (;;) {
      if (size_ - p < 16) {
        while (p < size_ && text_[p] == ' ') ++p;
        break;
      }
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text_.data() + p));
      const auto others =
          static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(b, space))) ^ 0xFFFFu;
      if (others != 0) {
        p += static_cast<std::uint32_t>(std::countr_zero(others));
        break;
      }
      p += 16;
    }
#else
    while (size_ - p >= 8 && std::memcmp(text_.data() + p, "        ", 8) == 0) p += 8;
    while (p < size_ && text_[p] == ' ') ++p;
#endif
    col += p - spaces;
    altcol += p - spaces;
    if (p >= size_) break;
    const char c = text_[p];
    if (c == '\t') {
      col = (col / kTabSize + 1) * kTabSize;
      altcol = (altcol / kAltTabSize + 1) * kAltTabSize;
    } else if (c == '\f') {
      col = altcol = 0;
    } else {
      break;
    }
    ++p;
  }
  if (p > start) emit(TokenKind::Whitespace, start, p);
  if (p >= size_) return;
  const char c = text_[p];
  if (c == '#' || c == '\n' || c == '\r') return;  // blank or comment-only: no indentation
  indent_pending_ = true;
  pending_col_ = col;
  pending_altcol_ = altcol;
}

void Lexer::apply_indentation(std::uint32_t at) {
  indent_pending_ = false;
  const std::uint32_t col = pending_col_;
  const std::uint32_t altcol = pending_altcol_;
  if (col == indents_.back()) {
    if (altcol != altindents_.back())
      error(at, "inconsistent use of tabs and spaces in indentation");
  } else if (col > indents_.back()) {
    if (altcol <= altindents_.back())
      error(at, "inconsistent use of tabs and spaces in indentation");
    if (indents_.size() == kMaxIndent) error(at, "too many levels of indentation");
    indents_.push_back(col);
    altindents_.push_back(altcol);
    emit(TokenKind::Indent, at, at);
  } else {
    while (indents_.size() > 1 && col < indents_.back()) {
      indents_.pop_back();
      altindents_.pop_back();
      emit(TokenKind::Dedent, at, at);
    }
    if (col != indents_.back()) {
      error(at, "unindent does not match any outer indentation level");
    } else if (altcol != altindents_.back()) {
      error(at, "inconsistent use of tabs and spaces in indentation");
    }
  }
}

}  // namespace torchport::syntax::detail
