#include <torchport/notebook/notebook.h>
#include <torchport/text/line_index.h>

#include <algorithm>

namespace torchport::notebook {

namespace {

/// How the file writes strings: raw UTF-8 unless it has no raw non-ASCII byte and writes
/// non-ASCII as \u escapes; upper-case hex when its escapes use it.
StringStyle detect_style(std::string_view bytes) {
  StringStyle st;
  bool raw_non_ascii = false, escaped_non_ascii = false;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x80 && !(i < 3 && bytes.starts_with("\xEF\xBB\xBF"))) raw_non_ascii = true;
    if (c != '\\' || i + 5 >= bytes.size()) continue;
    if (bytes[i + 1] == '\\') {
      ++i;  // an escaped backslash: what follows is not an escape
      continue;
    }
    if (bytes[i + 1] != 'u') continue;
    const std::string_view hex = bytes.substr(i + 2, 4);
    if (hex.find_first_of("ABCDEF") != std::string_view::npos) st.upper_hex = true;
    if (hex.substr(0, 2) != "00" || (hex[2] >= '8' && hex[2] <= '9') ||
        std::string_view("abcdefABCDEF").find(hex[2]) != std::string_view::npos)
      escaped_non_ascii = true;
  }
  st.ascii = !raw_non_ascii && escaped_non_ascii;
  return st;
}

const std::string* string_member(const Value& v, std::string_view key) {
  const Value* m = v.member(key);
  return m && m->kind == Value::Kind::String ? &m->str : nullptr;
}

bool ends_with_break(std::string_view s) {
  return !s.empty() && (s.back() == '\n' || s.back() == '\r');
}

bool blank_or_comment(std::string_view line) {
  const std::size_t i = line.find_first_not_of(" \t\f");
  return i == std::string_view::npos || line[i] == '#';
}

void build_module(Notebook& nb) {
  std::string& mod = nb.module;
  bool top_found = false;
  for (CodeCell& c : nb.cells) {
    c.masked = mask_cell(c.text);
    if (!c.in_module()) continue;
    c.module_begin = static_cast<std::uint32_t>(mod.size());
    mod += c.masked.text;
    if (!ends_with_break(c.masked.text)) {
      mod += '\n';
      c.added_newline = true;
    }
    if (top_found) continue;
    const std::vector<LineSpan> lines = split_lines(c.masked.text);
    for (std::size_t j = 0; j < lines.size() && !top_found; ++j) {
      const std::string_view content =
          std::string_view(c.masked.text)
              .substr(lines[j].begin, lines[j].content_end - lines[j].begin);
      if (c.masked.masked[j] || blank_or_comment(content)) continue;
      nb.top = c.module_begin + lines[j].begin;
      top_found = true;
    }
  }
  if (!top_found) nb.top = static_cast<std::uint32_t>(mod.size());
  const text::LineIndex index(mod);
  for (CodeCell& c : nb.cells)
    if (c.in_module()) c.first_line = index.locate(c.module_begin).line;
}

}  // namespace

std::optional<Notebook> read(std::string_view bytes, ReadError& error) {
  Value root;
  ScanError se;
  auto fail = [&](std::uint32_t offset, std::string message) {
    auto [line, col] = line_col(bytes, offset);
    error = {line, col, std::move(message)};
    return std::nullopt;
  };
  if (!scan(bytes, root, se)) return fail(se.offset, "not valid JSON: " + se.message);
  if (root.kind != Value::Kind::Object)
    return fail(root.begin, "not a notebook: the JSON value is not an object");
  const Value* format = root.member("nbformat");
  if (!format) return fail(root.begin, "not a notebook: no \"nbformat\" key");
  const std::string_view version = bytes.substr(format->begin, format->end - format->begin);
  if (format->kind != Value::Kind::Number || version != "4")
    return fail(format->begin, "nbformat " + std::string(version) +
                                   ": only nbformat 4 notebooks are read (Jupyter's `jupyter "
                                   "nbconvert --to notebook` upgrades older ones)");
  const Value* cells = root.member("cells");
  if (!cells || cells->kind != Value::Kind::Array)
    return fail(cells ? cells->begin : root.begin, "not a notebook: no \"cells\" list");
  Notebook nb;
  nb.style = detect_style(bytes);
  if (const Value* meta = root.member("metadata"); meta && meta->kind == Value::Kind::Object) {
    const Value* ks = meta->member("kernelspec");
    const Value* li = meta->member("language_info");
    if (const std::string* lang = ks ? string_member(*ks, "language") : nullptr)
      nb.language = *lang;
    else if (const std::string* name = li ? string_member(*li, "name") : nullptr)
      nb.language = *name;
  }
  nb.cell_count = static_cast<std::uint32_t>(cells->items.size());
  for (std::size_t i = 0; i < cells->items.size(); ++i) {
    const Value& cell = cells->items[i];
    const std::string number = std::to_string(i + 1);
    if (cell.kind != Value::Kind::Object)
      return fail(cell.begin, "cell " + number + " is not a JSON object");
    const std::string* type = string_member(cell, "cell_type");
    if (!type) return fail(cell.begin, "cell " + number + " has no \"cell_type\"");
    if (*type != "code") continue;
    const Value* src = cell.member("source");
    if (!src) return fail(cell.begin, "code cell " + number + " has no \"source\"");
    CodeCell c;
    c.number = static_cast<std::uint32_t>(i + 1);
    c.source = {src->begin, src->end};
    if (src->kind == Value::Kind::String) {
      c.tokens.push_back({src->begin, src->end});
      c.text = src->str;
    } else if (src->kind == Value::Kind::Array) {
      c.list = true;
      for (const Value& item : src->items) {
        if (item.kind != Value::Kind::String)
          return fail(item.begin, "the source of cell " + number + " holds a non-string");
        c.tokens.push_back({item.begin, item.end});
        c.text += item.str;
      }
    } else {
      return fail(src->begin,
                  "the source of cell " + number + " is not a string or a list of strings");
    }
    if (const Value* out = cell.member("outputs")) c.outputs = Span{out->begin, out->end};
    if (const Value* ec = cell.member("execution_count"))
      c.execution_count = Span{ec->begin, ec->end};
    nb.cells.push_back(std::move(c));
  }
  build_module(nb);
  return nb;
}

CellLine locate(const Notebook& nb, std::uint32_t line) {
  CellLine at;
  for (const CodeCell& c : nb.cells) {
    if (!c.in_module() || c.first_line > line) continue;
    at.cell = &c;
    at.line = line - c.first_line + 1;
  }
  if (at.cell && at.line > split_lines(at.cell->masked.text).size()) at.cell = nullptr;
  return at;
}

namespace {

/// One unit of a string token: its raw bytes and what they decode to.
struct Piece {
  std::string raw;
  std::string dec;
};

void token_pieces(std::string_view token, std::vector<Piece>& out) {
  std::string dec;
  decode_string(token, dec);
  std::size_t d = 0;
  for (const Unit& u : string_units(token)) {
    out.push_back({std::string(token.substr(u.raw_begin, u.raw_end - u.raw_begin)),
                   dec.substr(d, u.decoded_len)});
    d += u.decoded_len;
  }
}

struct Splice {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::string text;
};

/// A module offset inside cell `c`'s masked text mapped to its source; nullopt when it lies in
/// a masked line (other than at its start).
std::optional<std::uint32_t> to_source(const CodeCell& c, std::uint32_t local) {
  const std::vector<LineSpan> ml = split_lines(c.masked.text);
  const std::vector<LineSpan> sl = split_lines(c.text);
  if (ml.size() != sl.size()) return std::nullopt;
  if (ml.empty()) return local == 0 ? std::optional<std::uint32_t>(0) : std::nullopt;
  std::size_t j = 0;
  while (j + 1 < ml.size() && ml[j + 1].begin <= local) ++j;
  const std::uint32_t col = local - ml[j].begin;
  const std::uint32_t width = ml[j].end - ml[j].begin;
  if (col > width) return std::nullopt;
  // A masked line maps only at its ends: its start, or past it (the end of a last line that
  // has no line break, where an insertion after the cell's last line goes).
  if (c.masked.masked[j] && col != 0) {
    if (col != width) return std::nullopt;
    return sl[j].end;
  }
  return sl[j].begin + col;
}

/// True when [b, e) of cell `c`'s masked text touches a masked line.
bool touches_masked(const CodeCell& c, std::uint32_t b, std::uint32_t e) {
  const std::vector<LineSpan> ml = split_lines(c.masked.text);
  for (std::size_t j = 0; j < ml.size(); ++j)
    if (c.masked.masked[j] && ml[j].begin < e && b < ml[j].end) return true;
  return false;
}

/// The separator written between two new tokens of list `c`.
std::string default_separator(const CodeCell& c, std::string_view bytes) {
  if (c.tokens.size() > 1)
    return std::string(bytes.substr(c.tokens[0].end, c.tokens[1].begin - c.tokens[0].end));
  const std::string_view lead =
      bytes.substr(c.source.begin + 1, c.tokens[0].begin - c.source.begin - 1);
  return lead.find('\n') != std::string_view::npos ? "," + std::string(lead) : ", ";
}

/// The edits of one cell (source offsets, sorted) as splices of its JSON; false if an edit
/// does not fall on the boundaries of the string's characters. Only the string tokens an edit
/// touches are written again, and in them only the edited characters are new: the others keep
/// their raw bytes (escapes included).
bool cell_splices(const CodeCell& c, std::string_view bytes, const std::vector<ModuleEdit>& edits,
                  const StringStyle& style, std::vector<Splice>& out) {
  const std::size_t m = c.tokens.size();
  if (m == 0) return false;
  std::vector<std::uint32_t> start(m + 1, 0);  // decoded start of each token
  std::vector<std::vector<Piece>> pieces(m);
  for (std::size_t k = 0; k < m; ++k) {
    token_pieces(bytes.substr(c.tokens[k].begin, c.tokens[k].end - c.tokens[k].begin), pieces[k]);
    std::uint32_t len = 0;
    for (const Piece& p : pieces[k]) len += static_cast<std::uint32_t>(p.dec.size());
    start[k + 1] = start[k] + len;
  }
  const std::uint32_t total = start[m];
  // The token an edit begins in (an insertion between two tokens: the later one) and ends in.
  auto first_token = [&](const ModuleEdit& e) -> std::size_t {
    if (!c.list) return 0;
    std::size_t k = 0;
    while (k + 1 < m && start[k + 1] <= e.begin) ++k;
    return k;
  };
  auto last_token = [&](const ModuleEdit& e) -> std::size_t {
    if (!c.list) return m - 1;
    if (e.begin == e.end) return first_token(e);
    std::size_t k = m - 1;
    while (k > 0 && start[k] >= e.end) --k;
    return k;
  };
  for (const ModuleEdit& e : edits)
    if (e.begin > e.end || e.end > total) return false;
  const std::string sep = c.list ? default_separator(c, bytes) : std::string();
  for (std::size_t next = 0; next < edits.size();) {
    const std::size_t i = first_token(edits[next]);
    std::size_t j = last_token(edits[next]);
    std::size_t upto = next;  // edits [next, upto) fall in tokens i..j
    std::vector<Piece> built;
    for (;;) {
      while (upto < edits.size() && first_token(edits[upto]) <= j) {
        j = std::max(j, last_token(edits[upto]));
        ++upto;
      }
      struct At {
        std::uint32_t off;
        const Piece* piece;
      };
      std::vector<At> flat;
      std::uint32_t d = start[i];
      for (std::size_t k = i; k <= j; ++k)
        for (const Piece& p : pieces[k]) {
          flat.push_back({d, &p});
          d += static_cast<std::uint32_t>(p.dec.size());
        }
      const std::uint32_t run_end = start[j + 1];
      auto off_at = [&](std::size_t p) { return p < flat.size() ? flat[p].off : run_end; };
      built.clear();
      std::size_t p = 0;
      for (std::size_t e = next; e < upto; ++e) {
        while (p < flat.size() && flat[p].off < edits[e].begin) built.push_back(*flat[p++].piece);
        if (off_at(p) != edits[e].begin) return false;  // inside a character
        const std::string enc = encode_string(edits[e].replacement, style);
        token_pieces(enc, built);
        while (p < flat.size() && flat[p].off < edits[e].end) ++p;
        if (off_at(p) != edits[e].end) return false;
      }
      while (p < flat.size()) built.push_back(*flat[p++].piece);
      // A list's token ends with its line's break: a run whose text no longer does takes the
      // next line in.
      if (c.list && !built.empty() && !built.back().dec.ends_with('\n') && j + 1 < m) {
        ++j;
        continue;
      }
      break;
    }
    // The run's new tokens: one per line for a list, else one.
    std::vector<std::string> tokens;
    bool open = false;
    for (const Piece& p : built) {
      if (!open) tokens.emplace_back("\"");
      open = true;
      tokens.back() += p.raw;
      if (c.list && p.dec.ends_with('\n')) {
        tokens.back() += '"';
        open = false;
      }
    }
    if (open) tokens.back() += '"';
    if (tokens.empty() && !c.list) tokens.emplace_back("\"\"");
    Splice s{c.tokens[i].begin, c.tokens[j].end, {}};
    if (tokens.empty()) {
      if (j + 1 < m)
        s.end = c.tokens[j + 1].begin;
      else if (i > 0)
        s.begin = c.tokens[i - 1].end;
    }
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      if (t > 0)
        s.text += i + t <= j
                      ? std::string(bytes.substr(c.tokens[i + t - 1].end,
                                                 c.tokens[i + t].begin - c.tokens[i + t - 1].end))
                      : sep;
      s.text += tokens[t];
    }
    out.push_back(std::move(s));
    next = upto;
  }
  return true;
}

/// `text` with `edits` (sorted, not overlapping) applied.
std::string apply_edits(std::string_view text, const std::vector<ModuleEdit>& edits) {
  std::string out;
  std::uint32_t pos = 0;
  for (const ModuleEdit& e : edits) {
    out.append(text.substr(pos, e.begin - pos));
    out += e.replacement;
    pos = e.end;
  }
  out.append(text.substr(pos));
  return out;
}

/// The line break a replacement ends with ("" if none).
std::string_view trailing_break(std::string_view s) {
  if (s.ends_with("\r\n")) return s.substr(s.size() - 2);
  if (s.ends_with('\n') || s.ends_with('\r')) return s.substr(s.size() - 1);
  return {};
}

}  // namespace

Rewritten rewrite(const Notebook& nb, std::string_view bytes, const std::vector<ModuleEdit>& edits,
                  bool clear_outputs) {
  Rewritten res;
  std::vector<const CodeCell*> mod;  // the cells of the module, in order
  for (const CodeCell& c : nb.cells)
    if (c.in_module()) mod.push_back(&c);
  // Each edit, in its cell's source offsets.
  std::vector<std::vector<ModuleEdit>> per(mod.size());
  auto fail = [&](const ModuleEdit& e, const std::string& why) {
    res.error = "an edit of the module at offset " + std::to_string(e.begin) + " " + why;
    res.bytes.clear();
    res.changes.clear();
    return res;
  };
  for (const ModuleEdit& e : edits) {
    if (mod.empty()) return fail(e, "falls in a notebook without Python cells");
    std::size_t k = 0;
    while (k + 1 < mod.size() && mod[k + 1]->module_begin <= e.begin) ++k;
    const CodeCell* c = mod[k];
    const auto size = static_cast<std::uint32_t>(c->masked.text.size());
    std::uint32_t local = e.begin - c->module_begin;
    std::string text = e.replacement;
    if (e.begin == e.end) {
      // An insertion between two cells goes to the end of the earlier one, unless it is at
      // the top of the module (then it goes to the start of the later one).
      const bool after_cell = local > size;  // past the module's line break after the last cell
      const bool at_start = local == 0 && k > 0 && e.begin > nb.top;
      if (after_cell || at_start) {
        std::size_t into = after_cell ? k : k - 1;
        const CodeCell* p = mod[into];
        if (p->added_newline) {
          const std::string_view br = trailing_break(text);
          if (br.empty()) {
            if (after_cell) return fail(e, "ends a cell without a line break");
            into = k;  // the start of the later cell keeps the text as it is
          } else {
            text = std::string(br) + text.substr(0, text.size() - br.size());
          }
        }
        if (into != k || after_cell) {
          const std::uint32_t module_line =
              after_cell ? mod[k]->first_line +
                               static_cast<std::uint32_t>(split_lines(mod[k]->masked.text).size())
                         : mod[k]->first_line;
          c = mod[into];
          k = into;
          local = static_cast<std::uint32_t>(c->masked.text.size());
          res.moved.push_back({module_line, c->number,
                               static_cast<std::uint32_t>(split_lines(c->text).size()) + 1});
        } else {
          local = 0;
          text = e.replacement;
        }
      }
    } else if (e.end - c->module_begin > size) {
      return fail(e, "spans two cells");
    }
    const std::uint32_t local_end = local + (e.end - e.begin);
    if (e.begin != e.end && touches_masked(*c, local, local_end))
      return fail(e, "touches an IPython line of cell " + std::to_string(c->number));
    const std::optional<std::uint32_t> b = to_source(*c, local);
    const std::optional<std::uint32_t> en = to_source(*c, local_end);
    if (!b || !en) return fail(e, "touches an IPython line of cell " + std::to_string(c->number));
    per[k].push_back({*b, *en, std::move(text)});
  }
  std::vector<Splice> splices;
  for (std::size_t k = 0; k < mod.size(); ++k) {
    if (per[k].empty()) continue;
    std::stable_sort(per[k].begin(), per[k].end(),
                     [](const ModuleEdit& a, const ModuleEdit& b) { return a.begin < b.begin; });
    if (!cell_splices(*mod[k], bytes, per[k], nb.style, splices)) {
      res.error = "an edit of cell " + std::to_string(mod[k]->number) +
                  " does not fall on the boundaries of its characters";
      return res;
    }
    CellChange ch{mod[k], mod[k]->text, apply_edits(mod[k]->text, per[k]), std::move(per[k])};
    if (ch.after != ch.before) res.changes.push_back(std::move(ch));
  }
  if (clear_outputs)
    for (const CodeCell& c : nb.cells) {
      if (c.outputs && bytes.substr(c.outputs->begin, c.outputs->end - c.outputs->begin) != "[]")
        splices.push_back({c.outputs->begin, c.outputs->end, "[]"});
      if (c.execution_count &&
          bytes.substr(c.execution_count->begin,
                       c.execution_count->end - c.execution_count->begin) != "null")
        splices.push_back({c.execution_count->begin, c.execution_count->end, "null"});
    }
  std::stable_sort(splices.begin(), splices.end(),
                   [](const Splice& a, const Splice& b) { return a.begin < b.begin; });
  std::uint32_t pos = 0;
  res.bytes.reserve(bytes.size() + 256);
  for (const Splice& s : splices) {
    res.bytes.append(bytes.substr(pos, s.begin - pos));
    res.bytes += s.text;
    pos = s.end;
  }
  res.bytes.append(bytes.substr(pos));
  return res;
}

}  // namespace torchport::notebook
