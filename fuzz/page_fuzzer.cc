// libFuzzer target for the report page's reading of the user's files (report/page.h): the bytes of
// a file before and after migrate, split at the first NUL-free "\x01\x02" mark (no mark: the same
// bytes on both sides, then the input against its lines reversed), go through what the core does
// with them when it writes the page:
//   - page_text / source_text / page_lines (UTF-8 repair, str.splitlines' breaks);
//   - notebook_view (the file read as a notebook's JSON);
//   - align_lines of the two sides, and page_chunk_js with a finding on every third line;
//   - page_target_of_json (the bytes read as another run's report.json).
// The invariants:
//   - page_text and page_lines agree line for line, and every line is valid UTF-8;
//   - align_lines lists every line of both sides once, in order, '=' only for equal lines;
//   - the chunk script starts with tpChunk(N, and ends with ");\n".
// Crashes, hangs, sanitizer reports and broken invariants are findings.
#include <torchport/report/page.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "page_fuzzer: %s\n", what);
  std::abort();
}

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

void check_alignment(const std::vector<std::string_view>& a,
                     const std::vector<std::string_view>& b) {
  using torchport::report::AlignedLine;
  const std::vector<AlignedLine> rows = torchport::report::align_lines(a, b);
  std::uint32_t next_old = 1, next_new = 1;
  for (const AlignedLine& r : rows) {
    if (r.old_line != 0) {
      if (r.old_line != next_old) fail("an old line out of order or left out");
      ++next_old;
    }
    if (r.new_line != 0) {
      if (r.new_line != next_new) fail("a new line out of order or left out");
      ++next_new;
    }
    switch (r.tag) {
      case '=':
        if (r.old_line == 0 || r.new_line == 0 || a[r.old_line - 1] != b[r.new_line - 1])
          fail("'=' on lines that differ");
        break;
      case '~':
        if (r.old_line == 0 || r.new_line == 0) fail("'~' without both sides");
        break;
      case '-':
        if (r.old_line == 0 || r.new_line != 0) fail("'-' with a new line");
        break;
      case '+':
        if (r.new_line == 0 || r.old_line != 0) fail("'+' with an old line");
        break;
      default:
        fail("unknown tag");
    }
  }
  if (next_old != a.size() + 1 || next_new != b.size() + 1) fail("a side's lines left out");

  std::vector<std::uint32_t> findings;
  for (std::uint32_t l = 1; l <= a.size(); l += 3) findings.push_back(l);
  const std::string js = torchport::report::page_chunk_js(7, "fuzz.py", a, &b, findings);
  if (js.rfind("tpChunk(7,", 0) != 0 || js.size() < 3 || js.compare(js.size() - 3, 3, ");\n") != 0)
    fail("a chunk script of another shape");
}

int one_input(const std::uint8_t* data, std::size_t size) {
  using namespace torchport::report;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t mark = bytes.find("\x01\x02");
  const std::string_view before = mark == std::string_view::npos ? bytes : bytes.substr(0, mark);
  const std::string_view after = mark == std::string_view::npos ? bytes : bytes.substr(mark + 2);

  const std::vector<std::string> lines = page_lines(before);
  const PageText text = page_text(std::string(before));
  if (text.lines.size() != lines.size()) fail("page_text and page_lines count other lines");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (text.lines[i] != lines[i]) fail("page_text and page_lines disagree");
    if (!valid_utf8(lines[i])) fail("a page line that is not UTF-8");
  }
  (void)source_lines(before);
  const std::optional<PageText> after_text = source_text(std::string(after));
  (void)notebook_view(before);
  (void)page_target_of_json(before, "/in");

  if (after_text) {
    check_alignment(text.lines, after_text->lines);
  }
  std::vector<std::string_view> reversed(text.lines.rbegin(), text.lines.rend());
  check_alignment(text.lines, reversed);
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return one_input(data, size);
}
