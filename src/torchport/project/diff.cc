#include <torchport/project/diff.h>

#include <algorithm>
#include <cstdint>

namespace torchport::project {

namespace {

/// Line start offsets of `text` (a line ends after '\n', "\r\n" or a lone '\r').
std::vector<std::size_t> line_starts(std::string_view text) {
  std::vector<std::size_t> starts{0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
    if (text[i] == '\n' || text[i] == '\r') starts.push_back(i + 1);
  }
  if (starts.back() == text.size() && starts.size() > 1) starts.pop_back();
  return starts;
}

std::size_t line_of(const std::vector<std::size_t>& starts, std::size_t offset) {
  return static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), offset) -
                                  starts.begin()) -
         1;
}

std::string_view line_text(std::string_view text, const std::vector<std::size_t>& starts,
                           std::size_t i) {
  std::size_t b = starts[i], e = i + 1 < starts.size() ? starts[i + 1] : text.size();
  return text.substr(b, e - b);
}

void emit(std::string& out, char mark, std::string_view line) {
  // The line keeps its own ending (LF, CRLF or CR), so the diff applies to the file as it is.
  out += mark;
  out.append(line);
  if (line.empty() || (line.back() != '\n' && line.back() != '\r'))
    out += "\n\\ No newline at end of file\n";
  else if (line.back() == '\r')
    out += '\n';
}

struct Span {
  std::size_t ob, oe;  // old lines [ob, oe)
  std::size_t nb, ne;  // new lines [nb, ne)
};

}  // namespace

std::string unified_diff(std::string_view rel, std::string_view before, std::string_view after,
                         const std::vector<fix::AppliedEdit>& edits, unsigned context) {
  if (edits.empty() || before == after) return {};
  auto olines = line_starts(before), nlines = line_starts(after);
  if (before.empty()) olines.clear();
  if (after.empty()) nlines.clear();
  auto old_line_end = [&](std::size_t i) {
    return i + 1 < olines.size() ? olines[i + 1] : before.size();
  };
  auto new_line = [&](std::size_t offset) {
    return offset >= after.size() ? nlines.size() : line_of(nlines, offset);
  };
  // Each edit changes the whole old lines it touches; the same region of the new text is found
  // by shifting the region's ends by the size change of the edits before (and including) it.
  std::vector<Span> spans;
  std::int64_t delta = 0;
  for (const fix::AppliedEdit& a : edits) {
    const fix::Edit& e = a.edit;
    auto at_line_start = [&](std::size_t o) {
      return o == before.size() || std::binary_search(olines.begin(), olines.end(), o);
    };
    bool whole_lines =
        !olines.empty() && at_line_start(e.begin) && at_line_start(e.end) &&
        (e.replacement.empty() || e.replacement.back() == '\n' || e.replacement.back() == '\r');
    if (whole_lines) {
      // Whole lines inserted, deleted or replaced: no other line is touched.
      std::size_t ob = e.begin == before.size() ? olines.size() : line_of(olines, e.begin);
      std::size_t oe = e.end == before.size() ? olines.size() : line_of(olines, e.end);
      std::size_t nbeg = static_cast<std::size_t>(static_cast<std::int64_t>(e.begin) + delta);
      std::size_t nb = new_line(nbeg);
      std::size_t ne = new_line(nbeg + e.replacement.size());
      spans.push_back({ob, oe, nb, ne});
      delta += static_cast<std::int64_t>(e.replacement.size()) -
               static_cast<std::int64_t>(e.end - e.begin);
      continue;
    }
    std::size_t ob = olines.empty()
                         ? 0
                         : line_of(olines, std::min<std::size_t>(
                                               e.begin, before.size() ? before.size() - 1 : 0));
    std::size_t last =
        olines.empty() ? 0
                       : line_of(olines, e.end > e.begin
                                             ? e.end - 1
                                             : std::min<std::size_t>(
                                                   e.begin, before.size() ? before.size() - 1 : 0));
    std::size_t oe = olines.empty() ? 0 : last + 1;
    std::int64_t delta_after = delta + static_cast<std::int64_t>(e.replacement.size()) -
                               static_cast<std::int64_t>(e.end - e.begin);
    std::size_t region_begin = olines.empty() ? 0 : olines[ob];
    std::size_t region_end = olines.empty() ? 0 : old_line_end(last);
    std::size_t nbeg = static_cast<std::size_t>(static_cast<std::int64_t>(region_begin) + delta);
    std::size_t nend =
        static_cast<std::size_t>(static_cast<std::int64_t>(region_end) + delta_after);
    std::size_t nb = new_line(nbeg);
    std::size_t ne = nend > nbeg ? new_line(nend - 1) + 1 : nb;
    spans.push_back({ob, oe, nb, ne});
    delta = delta_after;
  }
  // Edits on the same lines become one span; spans whose contexts touch share a hunk.
  std::vector<Span> merged;
  for (const Span& sp : spans) {
    if (!merged.empty() && sp.ob < merged.back().oe) {
      merged.back().oe = std::max(merged.back().oe, sp.oe);
      merged.back().ne = std::max(merged.back().ne, sp.ne);
    } else {
      merged.push_back(sp);
    }
  }
  std::vector<std::vector<Span>> hunks;
  for (const Span& sp : merged) {
    if (!hunks.empty() && sp.ob <= hunks.back().back().oe + 2 * context)
      hunks.back().push_back(sp);
    else
      hunks.push_back({sp});
  }
  std::string out = "--- a/" + std::string(rel) + "\n+++ b/" + std::string(rel) + "\n";
  for (const std::vector<Span>& h : hunks) {
    const Span& first = h.front();
    const Span& last = h.back();
    std::size_t pre = std::min<std::size_t>({context, first.ob, first.nb});
    std::size_t post =
        std::min<std::size_t>({context, olines.size() - last.oe, nlines.size() - last.ne});
    std::size_t ostart = first.ob - pre, ocount = last.oe + post - ostart;
    std::size_t nstart = first.nb - pre, ncount = last.ne + post - nstart;
    // As GNU diff: an empty range is numbered by the line before it.
    out += "@@ -" + std::to_string(ocount ? ostart + 1 : ostart) + "," + std::to_string(ocount) +
           " +" + std::to_string(ncount ? nstart + 1 : nstart) + "," + std::to_string(ncount) +
           " @@\n";
    std::size_t at = ostart;  // next old line to print
    for (const Span& sp : h) {
      for (; at < sp.ob; ++at) emit(out, ' ', line_text(before, olines, at));
      for (std::size_t i = sp.ob; i < sp.oe; ++i) emit(out, '-', line_text(before, olines, i));
      for (std::size_t i = sp.nb; i < sp.ne; ++i) emit(out, '+', line_text(after, nlines, i));
      at = sp.oe;
    }
    for (std::size_t i = 0; i < post; ++i) emit(out, ' ', line_text(before, olines, at + i));
  }
  return out;
}

}  // namespace torchport::project
