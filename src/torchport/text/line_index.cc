// Line starts of a text: LF, CRLF and a lone CR each end a line.
#include <torchport/text/line_index.h>

#include <algorithm>
#include <bit>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace torchport::text {

LineIndex::LineIndex(std::string_view text) {
  starts_.reserve(text.size() / 32 + 1);
  starts_.push_back(0);
  const char* const base = text.data();
  const std::size_t n = text.size();
  std::size_t i = 0;
#if defined(__SSE2__)
  // Sixteen bytes at a time while there is no '\r' (most files have none): one compare gives a
  // bit per '\n', and each set bit is a line start. A block with a '\r' in it, and the tail
  // shorter than a block, go to the byte loop below, which knows CRLF and lone CR.
  const __m128i lf = _mm_set1_epi8('\n');
  const __m128i cr = _mm_set1_epi8('\r');
  for (; n - i >= 16; i += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(block, cr)) != 0) break;
    auto lfs = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, lf)));
    while (lfs != 0) {
      starts_.push_back(static_cast<std::uint32_t>(i + std::countr_zero(lfs) + 1));
      lfs &= lfs - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    const char c = base[i];
    if (c == '\n') {
      starts_.push_back(static_cast<std::uint32_t>(i + 1));
    } else if (c == '\r') {
      if (i + 1 < n && base[i + 1] == '\n') ++i;
      starts_.push_back(static_cast<std::uint32_t>(i + 1));
    }
  }
}

LineCol LineIndex::locate(std::uint32_t offset) const {
  // The last line start <= offset.
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  const auto line = static_cast<std::uint32_t>(it - starts_.begin());  // >= 1: starts_[0] == 0
  return LineCol{line, offset - starts_[line - 1]};
}

std::uint32_t LineIndex::line_start(std::uint32_t line) const {
  if (line == 0) return 0;
  if (line > starts_.size()) return starts_.back();
  return starts_[line - 1];
}

}  // namespace torchport::text
