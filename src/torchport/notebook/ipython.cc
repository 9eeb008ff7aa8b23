#include <torchport/notebook/ipython.h>

#include <algorithm>
#include <array>

namespace torchport::notebook {

std::vector<LineSpan> split_lines(std::string_view text) {
  std::vector<LineSpan> lines;
  std::uint32_t begin = 0;
  const auto n = static_cast<std::uint32_t>(text.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    if (text[i] != '\n' && text[i] != '\r') continue;
    const std::uint32_t content_end = i;
    if (text[i] == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
    lines.push_back({begin, content_end, i + 1});
    begin = i + 1;
  }
  if (begin < n) lines.push_back({begin, n, n});
  return lines;
}

namespace {

/// The cell magics whose body the kernel runs as Python.
bool python_body(std::string_view magic) {
  static constexpr std::array<std::string_view, 6> kPython = {"time", "timeit", "capture",
                                                              "prun", "debug",  "memit"};
  for (std::string_view m : kPython)
    if (m == magic) return true;
  return false;
}

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_ident(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

/// `a = !cmd`, `a.b, c = %magic`: names, '=', then an escape.
bool assigns_escape(std::string_view s) {
  std::size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  };
  for (;;) {
    if (i >= s.size() || !is_ident_start(s[i])) return false;
    while (i < s.size() && (is_ident(s[i]) || s[i] == '.')) ++i;
    ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      ws();
      continue;
    }
    break;
  }
  if (i >= s.size() || s[i] != '=') return false;
  ++i;
  ws();
  return i < s.size() && (s[i] == '!' || s[i] == '%');
}

/// IPython's automagic (on by default): a line that starts with the name of a line magic, then
/// something that cannot continue a Python statement, runs the magic (`pip install diffusers`,
/// `cd data`, `matplotlib inline`). IPython checks the rest as its prefilter does: an operator,
/// `=`, `(`, `.`, `[`, `:` or a keyword after the name means Python.
bool automagic(std::string_view s) {
  static constexpr std::array<std::string_view, 40> kMagics = {
      "pip",        "conda",      "mamba",      "cd",         "pwd",     "env",    "set_env",
      "matplotlib", "load_ext",   "reload_ext", "unload_ext", "time",    "timeit", "run",
      "who",        "whos",       "reset",      "store",      "history", "pylab",  "config",
      "alias",      "autoreload", "aimport",    "bookmark",   "pushd",   "popd",   "dirs",
      "sx",         "system",     "ls",         "cat",        "mkdir",   "rm",     "cp",
      "mv",         "ll",         "less",       "clear",      "xmode"};
  static constexpr std::array<std::string_view, 12> kKeywords = {
      "if", "else", "and", "or", "in", "is", "not", "for", "async", "await", "lambda", "from"};
  std::size_t i = 0;
  while (i < s.size() && is_ident(s[i])) ++i;
  const std::string_view name = s.substr(0, i);
  if (std::find(kMagics.begin(), kMagics.end(), name) == kMagics.end()) return false;
  if (i >= s.size() || (s[i] != ' ' && s[i] != '\t')) return false;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (i >= s.size()) return false;
  if (std::string_view("!=()<>,+*/%^&|.[:;#\"'@").find(s[i]) != std::string_view::npos)
    return false;
  std::size_t j = i;
  while (j < s.size() && is_ident(s[j])) ++j;
  const std::string_view next = s.substr(i, j - i);
  return std::find(kKeywords.begin(), kKeywords.end(), next) == kKeywords.end();
}

/// What the tokenizer has open at the end of a line.
struct State {
  int depth = 0;           ///< open brackets
  char triple = 0;         ///< inside a triple-quoted string with this quote
  bool continued = false;  ///< the line ended with a backslash
  bool at_start() const { return depth == 0 && triple == 0 && !continued; }
};

/// Scans one line's content from `s`, returning the state after it and, in `last`, the last
/// character outside strings and comments ('\0' if none).
State scan_line(std::string_view s, State st, char& last) {
  last = 0;
  st.continued = false;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (st.triple) {
      if (s[i] == '\\') {
        i += 2;
        continue;
      }
      if (s[i] == st.triple && i + 2 < n && s[i + 1] == st.triple && s[i + 2] == st.triple) {
        i += 3;
        st.triple = 0;
        continue;
      }
      ++i;
      continue;
    }
    const char c = s[i];
    if (c == '#') break;
    if (c == '"' || c == '\'') {
      if (i + 2 < n && s[i + 1] == c && s[i + 2] == c) {
        st.triple = c;
        i += 3;
        continue;
      }
      ++i;
      while (i < n && s[i] != c) i += s[i] == '\\' ? 2 : 1;
      ++i;  // past the closing quote (or the end: an unterminated string)
      last = c;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++st.depth;
    if ((c == ')' || c == ']' || c == '}') && st.depth > 0) --st.depth;
    if (c != ' ' && c != '\t' && c != '\f') last = c;
    ++i;
  }
  if (!st.triple && n > 0 && s[n - 1] == '\\' && last == '\\') st.continued = true;
  return st;
}

/// The masked form of a line's content.
std::string masked_line(std::string_view content, bool first) {
  const std::size_t ind = content.find_first_not_of(" \t");
  if (first && ind != std::string_view::npos && ind > 0)
    return std::string(content.substr(0, ind)) + "pass";
  std::string out = "#";
  for (char c : content) out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? ' ' : c;
  return out;
}

}  // namespace

MaskedCell mask_cell(std::string_view source) {
  MaskedCell out;
  const std::vector<LineSpan> lines = split_lines(source);
  out.masked.assign(lines.size(), false);
  std::vector<bool> continued(lines.size(), false);  // a masked line a backslash continues
  auto content = [&](std::size_t k) {
    return source.substr(lines[k].begin, lines[k].content_end - lines[k].begin);
  };
  std::size_t first = 0;  // the first non-blank line
  while (first < lines.size() &&
         content(first).find_first_not_of(" \t\f") == std::string_view::npos)
    ++first;
  std::size_t k = 0;
  if (first < lines.size() &&
      content(first).substr(content(first).find_first_not_of(" \t\f")).starts_with("%%")) {
    std::string_view c = content(first);
    c.remove_prefix(c.find_first_not_of(" \t\f") + 2);
    out.magic = std::string(c.substr(0, c.find_first_of(" \t")));
    if (python_body(out.magic)) {
      out.masked[first] = true;
      k = first + 1;
    } else {
      out.kind = CellKind::Foreign;
      for (std::size_t j = first; j < lines.size(); ++j) out.masked[j] = true;
      k = lines.size();
    }
  }
  State st;
  for (; k < lines.size(); ++k) {
    const std::string_view c = content(k);
    const std::size_t ind = c.find_first_not_of(" \t\f");
    if (st.at_start() && ind != std::string_view::npos) {
      const std::string_view body = c.substr(ind);
      char last = 0;
      const State next = scan_line(c, st, last);
      const bool escape = std::string_view("%!?/,;").find(body[0]) != std::string_view::npos;
      const bool help = last == '?' && next.depth == 0 && next.triple == 0;
      if (escape || help || assigns_escape(body) || automagic(body)) {
        out.masked[k] = true;
        // A trailing backslash continues the magic onto the next lines.
        while (k + 1 < lines.size() && !content(k).empty() && content(k).back() == '\\') {
          out.masked[++k] = true;
          continued[k] = true;
        }
        continue;
      }
      st = next;
      continue;
    }
    char last = 0;
    st = scan_line(c, st, last);
  }
  out.text.reserve(source.size() + lines.size());
  for (std::size_t j = 0; j < lines.size(); ++j) {
    if (!out.masked[j]) {
      out.text.append(source.substr(lines[j].begin, lines[j].end - lines[j].begin));
      continue;
    }
    out.text += masked_line(content(j), !continued[j] && out.kind == CellKind::Python);
    out.text.append(source.substr(lines[j].content_end, lines[j].end - lines[j].content_end));
  }
  return out;
}

}  // namespace torchport::notebook
