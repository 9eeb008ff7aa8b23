// Line starts of a text: LF, CRLF and a lone CR each end a line.
#include <torchport/text/line_index.h>

#include <algorithm>
#include <cstring>

namespace torchport::text {

LineIndex::LineIndex(std::string_view text) {
  starts_.reserve(text.size() / 32 + 1);
  starts_.push_back(0);
  const std::size_t n = text.size();
  if (std::memchr(text.data(), '\r', n) == nullptr) {
    // Only LF endings: find them with memchr.
    const char* const base = text.data();
    const char* p = base;
    const char* const end = base + n;
    while (p < end) {
      const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
      if (nl == nullptr) break;
      p = static_cast<const char*>(nl) + 1;
      starts_.push_back(static_cast<std::uint32_t>(p - base));
    }
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '\n') {
      starts_.push_back(static_cast<std::uint32_t>(i + 1));
    } else if (c == '\r') {
      if (i + 1 < n && text[i + 1] == '\n') ++i;
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
