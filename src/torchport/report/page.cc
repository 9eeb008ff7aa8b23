#include <torchport/report/page.h>
#include <torchport/text/utf8.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

namespace torchport::report {

namespace {

constexpr std::size_t kContext = 3;

/// Length of the maximal prefix of `s` (at most 4 bytes) that starts a well-formed UTF-8
/// sequence, and whether it is the whole sequence (Unicode 15, table 3-7).
std::pair<std::size_t, bool> utf8_sequence(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80) return {1, true};
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {1, false};
  }
  std::size_t n = 1;
  for (; n < need && n < s.size(); ++n) {
    const auto c = static_cast<unsigned char>(s[n]);
    if (n == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) break;
  }
  return {n, n == need};
}

/// Length of the line break at the start of `s` (a well-formed sequence), 0 if none.
std::size_t line_break(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  switch (c) {
    case '\r':
      return s.size() > 1 && s[1] == '\n' ? 2 : 1;
    case '\n':
    case 0x0B:
    case 0x0C:
    case 0x1C:
    case 0x1D:
    case 0x1E:
      return 1;
    case 0xC2:
      return s.size() > 1 && static_cast<unsigned char>(s[1]) == 0x85 ? 2 : 0;
    case 0xE2:
      return s.size() > 2 && static_cast<unsigned char>(s[1]) == 0x80 &&
                     (static_cast<unsigned char>(s[2]) == 0xA8 ||
                      static_cast<unsigned char>(s[2]) == 0xA9)
                 ? 3
                 : 0;
    default:
      return 0;
  }
}

/// Appends `s` as a JSON string as Python's json.dumps(ensure_ascii=False) writes it, made safe
/// inside a <script> element: "</" as "<\/", "<!--" as "<\!--", U+2028 and U+2029 escaped.
/// `s` is valid UTF-8.
void append_script_string(std::string& out, std::string_view s) {
  // The bytes copied as they are: no quote, backslash, control character, '<', or the first
  // byte of U+2028 / U+2029.
  static constexpr auto kPlain = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c < 256; ++c) t[static_cast<std::size_t>(c)] = true;
    t['"'] = t['\\'] = t['<'] = t[0xE2] = false;
    return t;
  }();
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    std::size_t j = i;
    while (j < s.size() && kPlain[static_cast<unsigned char>(s[j])]) ++j;
    if (j > i) {
      out.append(s.data() + i, j - i);
      i = j;
      if (i == s.size()) break;
    }
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '<':
        if (s.substr(i + 1, 1) == "/") {
          out += "<\\/";
          ++i;
        } else if (s.substr(i + 1, 3) == "!--") {
          out += "<\\!--";
          i += 3;
        } else {
          out += '<';
        }
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else if (c == 0xE2 && s.size() > i + 2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += ch;
    }
  }
  out += '"';
}

/// A report string as report.json holds it: its ill-formed bytes as U+FFFD.
std::string as_utf8(std::string_view s) {
  if (text::is_valid_utf8(s)) return std::string(s);
  return nlohmann::json::parse(nlohmann::json(std::string(s))
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .get<std::string>();
}

void append_number(std::string& out, std::int64_t n) { out += std::to_string(n); }

/// Each distinct string once, in the order of first use.
class Strings {
 public:
  std::size_t id(std::string_view s) {
    auto [it, added] = ids_.try_emplace(std::string(s), list_.size());
    if (added) list_.push_back(&it->first);
    return it->second;
  }
  const std::vector<const std::string*>& list() const { return list_; }

 private:
  std::unordered_map<std::string, std::size_t> ids_;
  std::vector<const std::string*> list_;
};

std::string_view severity(rules::Operation op) {
  switch (op) {
    case rules::Operation::Unsupported:
      return "error";
    case rules::Operation::Unknown:
      return "warning";
    default:
      return "note";
  }
}

/// An equal run: a[a, a + len) == b[b, b + len), 0-based.
struct Run {
  std::size_t a, b, len;
};

/// Myers' greedy forward search for a shortest edit script from a[a0, a0 + n) to
/// b[b0, b0 + m). Appends its equal runs to `runs`; false (nothing appended) when more than
/// `max_d` lines would have to be removed or added.
bool myers(const std::vector<std::string_view>& a, std::size_t a0, std::size_t n,
           const std::vector<std::string_view>& b, std::size_t b0, std::size_t m,
           std::int32_t max_d, std::vector<Run>& runs) {
  const auto N = static_cast<std::int32_t>(n), M = static_cast<std::int32_t>(m);
  const std::int32_t off = N + M + 1;
  std::vector<std::int32_t> v(static_cast<std::size_t>(2 * off + 1), 0);
  auto at = [&](std::int32_t k) -> std::int32_t& { return v[static_cast<std::size_t>(off + k)]; };
  // trace[d] holds v[-d..d] after step d: enough to walk back.
  std::vector<std::vector<std::int32_t>> trace;
  // Down (an addition) from diagonal k+1, or right (a removal) from k-1: whichever reached
  // further; a removal when they tie.
  auto down = [](std::int32_t k, std::int32_t d, std::int32_t left, std::int32_t right) {
    return k == -d || (k != d && left < right);
  };
  std::int32_t found = -1;
  for (std::int32_t d = 0; d <= N + M && d <= max_d && found < 0; ++d) {
    for (std::int32_t k = -d; k <= d; k += 2) {
      std::int32_t x = down(k, d, d ? at(k - 1) : 0, d ? at(k + 1) : 0) ? at(k + 1) : at(k - 1) + 1;
      std::int32_t y = x - k;
      while (x < N && y < M &&
             a[a0 + static_cast<std::size_t>(x)] == b[b0 + static_cast<std::size_t>(y)]) {
        ++x;
        ++y;
      }
      at(k) = x;
      if (x >= N && y >= M) {
        found = d;
        break;
      }
    }
    trace.emplace_back(v.begin() + off - d, v.begin() + off + d + 1);
  }
  if (found < 0) return false;
  std::vector<Run> back;
  std::int32_t x = N, y = M;
  for (std::int32_t d = found; d >= 0; --d) {
    const std::int32_t k = x - y;
    std::int32_t start = 0, px = 0, py = 0;
    if (d > 0) {
      const std::vector<std::int32_t>& vp = trace[static_cast<std::size_t>(d - 1)];
      auto prev = [&](std::int32_t kk) { return vp[static_cast<std::size_t>(kk + d - 1)]; };
      const bool was_down = down(k, d, k > -d ? prev(k - 1) : 0, k < d ? prev(k + 1) : 0);
      const std::int32_t pk = was_down ? k + 1 : k - 1;
      px = prev(pk);
      py = px - pk;
      start = was_down ? px : px + 1;
    }
    if (x > start)
      back.push_back({a0 + static_cast<std::size_t>(start),
                      b0 + static_cast<std::size_t>(start - k),
                      static_cast<std::size_t>(x - start)});
    x = px;
    y = py;
  }
  runs.insert(runs.end(), back.rbegin(), back.rend());
  return true;
}

/// Joins changes that one run of equal lines keeps apart when the run can move past one of them:
/// old ["cuda", "cuda"] against new ["npu", "cuda"] is the first line changed, not "npu" added
/// and the second "cuda" removed (both scripts are as short). A run between two changes moves
/// over a removal or addition right after it (or right before it) when the lines it passes are
/// the same as its own; the run's lines stay equal, and the two changes become one.
void join_changes(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b,
                  std::size_t begin, std::size_t a_end, std::size_t b_end, std::vector<Run>& runs) {
  auto repeats = [](const std::vector<std::string_view>& s, std::size_t from, std::size_t shift,
                    std::size_t len) {
    for (std::size_t t = 0; t < len; ++t)
      if (s[from + t] != s[from + shift + t]) return false;
    return true;
  };
  for (std::size_t k = 0; k < runs.size(); ++k) {
    Run& r = runs[k];
    const std::size_t pa = k ? runs[k - 1].a + runs[k - 1].len : begin;
    const std::size_t pb = k ? runs[k - 1].b + runs[k - 1].len : begin;
    const std::size_t na = k + 1 < runs.size() ? runs[k + 1].a : a_end;
    const std::size_t nb = k + 1 < runs.size() ? runs[k + 1].b : b_end;
    const std::size_t before_a = r.a - pa, before_b = r.b - pb;
    const std::size_t after_a = na - (r.a + r.len), after_b = nb - (r.b + r.len);
    if (before_a + before_b == 0 || after_a + after_b == 0) continue;  // not between two
    if (after_b == 0 && repeats(a, r.a, after_a, r.len))
      r.a += after_a;  // the removal after it moves before it
    else if (after_a == 0 && repeats(b, r.b, after_b, r.len))
      r.b += after_b;  // the addition after it moves before it
    else if (before_b == 0 && repeats(a, r.a - before_a, before_a, r.len))
      r.a -= before_a;  // the removal before it moves after it
    else if (before_a == 0 && repeats(b, r.b - before_b, before_b, r.len))
      r.b -= before_b;  // the addition before it moves after it
  }
}

}  // namespace

std::vector<std::string> page_lines(std::string_view bytes) {
  const PageText t = page_text(std::string(bytes));
  return {t.lines.begin(), t.lines.end()};
}

std::optional<std::vector<std::string>> source_lines(std::string_view bytes) {
  if (bytes.substr(0, 8192).find('\0') != std::string_view::npos) return std::nullopt;
  return page_lines(bytes);
}

namespace {

/// Splits valid UTF-8 `t` into `lines` (page_lines' breaks); false, as soon as it meets an
/// ill-formed sequence. Eight bytes at a time where none is a control character or non-ASCII.
bool split_lines(std::string_view t, std::vector<std::string_view>& lines) {
  constexpr std::uint64_t k80 = 0x8080808080808080ULL, k20 = 0x2020202020202020ULL;
  std::size_t begin = 0, i = 0;
  const std::size_t n = t.size();
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t x;
      std::memcpy(&x, t.data() + i, 8);
      if (((x & k80) | ((x - k20) & ~x & k80)) == 0) {  // 8 bytes in [0x20, 0x7F]
        i += 8;
        continue;
      }
    }
    const auto c = static_cast<unsigned char>(t[i]);
    std::size_t len = 1;
    if (c >= 0x80) {
      auto [m, whole] = utf8_sequence(t.substr(i));
      if (!whole) return false;
      len = m;
    }
    if (std::size_t br = c < 0x20 || c >= 0x80 ? line_break(t.substr(i)) : 0) {
      lines.push_back(t.substr(begin, i - begin));
      i += br;
      begin = i;
    } else {
      i += len;
    }
  }
  if (begin < n) lines.push_back(t.substr(begin));
  return true;
}

}  // namespace

PageText page_text(std::string bytes) {
  PageText out;
  out.text = std::make_unique<std::string>(std::move(bytes));
  if (split_lines(*out.text, out.lines)) return out;
  // Ill-formed: each maximal ill-formed subsequence becomes U+FFFD, then the lines again.
  std::string decoded;
  decoded.reserve(out.text->size() + 16);
  const std::string_view b = *out.text;
  for (std::size_t i = 0; i < b.size();) {
    auto [n, whole] = utf8_sequence(b.substr(i));
    if (whole)
      decoded.append(b.substr(i, n));
    else
      decoded += "\xEF\xBF\xBD";
    i += n;
  }
  *out.text = std::move(decoded);
  out.lines.clear();
  split_lines(*out.text, out.lines);
  return out;
}

std::optional<PageText> source_text(std::string bytes) {
  if (std::string_view(bytes).substr(0, 8192).find('\0') != std::string_view::npos)
    return std::nullopt;
  return page_text(std::move(bytes));
}

PageText page_text_of_lines(const std::vector<std::string>& lines) {
  PageText out;
  out.text = std::make_unique<std::string>();
  std::vector<std::size_t> starts;
  starts.reserve(lines.size());
  for (const std::string& l : lines) {
    starts.push_back(out.text->size());
    *out.text += l;
  }
  const std::string_view t = *out.text;
  for (std::size_t k = 0; k < lines.size(); ++k)
    out.lines.push_back(t.substr(starts[k], lines[k].size()));
  return out;
}

std::optional<NotebookView> notebook_view(std::string_view bytes) {
  nlohmann::json nb = nlohmann::json::parse(bytes, nullptr, false);
  if (nb.is_discarded() || !nb.is_object() || !nb.contains("cells")) return std::nullopt;
  const nlohmann::json& cells = nb["cells"];
  NotebookView view;
  if (!cells.is_array()) {
    if (cells.is_object() || cells.is_string()) return view;  // iterable: no cell in it
    return std::nullopt;
  }
  std::uint32_t n = 0;
  for (const nlohmann::json& cell : cells) {
    ++n;
    if (!cell.is_object()) continue;
    auto type = cell.find("cell_type");
    if (type == cell.end() || *type != "code") continue;
    std::string text;
    if (auto src = cell.find("source"); src != cell.end()) {
      if (src->is_array()) {
        for (const nlohmann::json& part : *src)
          if (part.is_string()) text += part.get_ref<const std::string&>();
      } else if (src->is_string()) {
        text = src->get<std::string>();
      } else {
        text = src->dump();
      }
    }
    view.lines.push_back("# %% cell " + std::to_string(n));
    view.first[n] = static_cast<std::uint32_t>(view.lines.size() + 1);
    for (std::string& l : page_lines(text)) view.lines.push_back(std::move(l));
  }
  return view;
}

std::vector<AlignedLine> align_lines(const std::vector<std::string_view>& a,
                                     const std::vector<std::string_view>& b) {
  std::vector<AlignedLine> out;
  out.reserve(std::max(a.size(), b.size()));
  auto same = [&](std::size_t i, std::size_t j, std::size_t len) {
    for (std::size_t k = 0; k < len; ++k)
      out.push_back(
          {static_cast<std::uint32_t>(i + k + 1), static_cast<std::uint32_t>(j + k + 1), '='});
  };
  // Between two equal runs: old lines paired with new ones, then the rest of either side.
  auto differ = [&](std::size_t i1, std::size_t i2, std::size_t j1, std::size_t j2) {
    const std::size_t n = std::max(i2 - i1, j2 - j1);
    for (std::size_t k = 0; k < n; ++k) {
      const std::uint32_t o = i1 + k < i2 ? static_cast<std::uint32_t>(i1 + k + 1) : 0;
      const std::uint32_t w = j1 + k < j2 ? static_cast<std::uint32_t>(j1 + k + 1) : 0;
      out.push_back({o, w, o && w ? '~' : (o ? '-' : '+')});
    }
  };
  std::size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  std::size_t post = 0;
  while (post < a.size() - pre && post < b.size() - pre &&
         a[a.size() - 1 - post] == b[b.size() - 1 - post])
    ++post;
  same(0, 0, pre);
  const std::size_t n = a.size() - pre - post, m = b.size() - pre - post;
  std::vector<Run> runs;
  // A file rewritten on thousands of lines: one block of changed lines.
  if (!myers(a, pre, n, b, pre, m, 2048, runs)) runs.clear();
  join_changes(a, b, pre, pre + n, pre + m, runs);
  std::size_t i = pre, j = pre;
  for (const Run& r : runs) {
    differ(i, r.a, j, r.b);
    same(r.a, r.b, r.len);
    i = r.a + r.len;
    j = r.b + r.len;
  }
  differ(i, pre + n, j, pre + m);
  same(pre + n, pre + m, post);
  return out;
}

std::string page_chunk_js(std::size_t id, std::string_view rel,
                          const std::vector<std::string_view>& before,
                          const std::vector<std::string_view>* after,
                          const std::vector<std::uint32_t>& finding_lines) {
  const std::vector<std::string_view>& now = after ? *after : before;
  std::vector<AlignedLine> aligned;
  if (after && *after != before) {
    aligned = align_lines(before, *after);
  } else {
    aligned.reserve(before.size());
    for (std::uint32_t k = 1; k <= before.size(); ++k) aligned.push_back({k, k, '='});
  }
  std::set<std::uint32_t> flagged(finding_lines.begin(), finding_lines.end());
  std::vector<char> keep(aligned.size(), 0);
  for (std::size_t k = 0; k < aligned.size(); ++k) {
    const AlignedLine& l = aligned[k];
    if (l.tag != '=' || flagged.count(l.old_line)) {
      const std::size_t lo = k >= kContext ? k - kContext : 0;
      const std::size_t hi = std::min(aligned.size(), k + kContext + 1);
      std::fill(keep.begin() + static_cast<std::ptrdiff_t>(lo),
                keep.begin() + static_cast<std::ptrdiff_t>(hi), 1);
    }
  }
  std::string out = "tpChunk(" + std::to_string(id) + ",{\"file\":";
  append_script_string(out, as_utf8(rel));
  out += after ? ",\"diff\":true,\"rows\":[" : ",\"diff\":false,\"rows\":[";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ',';
    first = false;
  };
  std::size_t skipped = 0;
  for (std::size_t k = 0; k < aligned.size(); ++k) {
    if (!keep[k]) {
      ++skipped;  // only shared lines are ever left out: a change keeps its row
      continue;
    }
    if (skipped) {
      sep();
      append_number(out, static_cast<std::int64_t>(skipped));
      skipped = 0;
    }
    const AlignedLine& l = aligned[k];
    sep();
    static const std::string_view kNone;
    const std::string_view old_text = l.old_line ? before[l.old_line - 1] : kNone;
    const std::string_view new_text = l.new_line ? now[l.new_line - 1] : kNone;
    if (l.tag == '=') {
      append_script_string(out, old_text);
    } else if (l.tag == '~') {
      out += "[\"~\",";
      append_script_string(out, old_text);
      out += ',';
      append_script_string(out, new_text);
      out += ']';
    } else {
      out += l.tag == '-' ? "[\"-\"," : "[\"+\",";
      append_script_string(out, l.tag == '-' ? old_text : new_text);
      out += ']';
    }
  }
  if (skipped) {
    sep();
    append_number(out, static_cast<std::int64_t>(skipped));
  }
  out += "]});\n";
  return out;
}

std::uint32_t page_line(const Row& row, std::uint32_t line,
                        const std::map<std::uint32_t, std::uint32_t>* cells) {
  if (!row.cell || !cells) return line;
  auto it = cells->find(row.cell);
  if (it == cells->end()) return line;
  return it->second + line - 1;
}

PageTarget page_target(const Report& rep) {
  PageTarget t;
  t.target = as_utf8(rep.target);
  t.changed = static_cast<std::uint64_t>(std::count_if(
      rep.files.begin(), rep.files.end(), [](const FileEntry& f) { return f.changed; }));
  t.changes = rep.count(rules::Operation::Insert) + rep.count(rules::Operation::Modify) +
              rep.count(rules::Operation::Delete);
  t.unsupported = rep.count(rules::Operation::Unsupported);
  t.unknown = rep.count(rules::Operation::Unknown);
  t.cuda_ops = rep.cuda_ops.size();
  std::set<std::string> apis;
  for (const Row& r : rep.rows)
    if (r.code == "TP002") apis.insert(r.api);
  t.third_party = apis.size();
  return t;
}

std::optional<PageTarget> page_target_of_json(std::string_view report_json,
                                              std::string_view input) {
  using nlohmann::json;
  json o = json::parse(report_json, nullptr, false);
  if (o.is_discarded() || !o.is_object()) return std::nullopt;
  auto text = [&](const char* k) -> std::optional<std::string> {
    auto it = o.find(k);
    if (it == o.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  const std::optional<std::string> in = text("input"), target = text("target");
  if (!in || *in != input || !target) return std::nullopt;
  PageTarget t;
  t.target = *target;
  auto count = [&](const char* k) -> std::uint64_t {
    auto s = o.find("summary");
    if (s == o.end() || !s->is_object()) return 0;
    auto it = s->find(k);
    return it != s->end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
  };
  t.changed = count("changed");
  t.changes = count("insert") + count("modify") + count("delete");
  t.unsupported = count("unsupported");
  t.unknown = count("unknown");
  t.cuda_ops = count("cuda_ops");
  std::set<std::string> apis;
  auto findings = o.find("findings");
  if (findings == o.end() || !findings->is_array()) return t;
  auto version = o.find("format_version");
  if (version == o.end()) {  // format 1: an object per finding
    for (const json& f : *findings)
      if (f.is_object() && f.value("code", "") == "TP002") apis.insert(f.value("api", ""));
  } else if (*version == 2) {  // rows of string indices
    const json& cols = o["columns"]["findings"];
    const json& strings = o["strings"];
    std::size_t code = 0, api = 0;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      if (cols[c] == "code") code = c;
      if (cols[c] == "api") api = c;
    }
    auto str = [&](const json& row, std::size_t c) -> std::string {
      if (!row.is_array() || c >= row.size() || !row[c].is_number_unsigned()) return {};
      const auto k = row[c].get<std::size_t>();
      return k < strings.size() && strings[k].is_string() ? strings[k].get<std::string>() : "";
    };
    for (const json& f : *findings)
      if (str(f, code) == "TP002") apis.insert(str(f, api));
  } else {
    return std::nullopt;  // a format this core does not know
  }
  t.third_party = apis.size();
  return t;
}

namespace {

/// The summary, in report.json's order.
std::string summary_json(const Report& rep) {
  std::string s = "{";
  auto field = [&](std::string_view k, std::uint64_t v) {
    if (s.size() > 1) s += ',';
    s += '"';
    s += k;
    s += "\":";
    append_number(s, static_cast<std::int64_t>(v));
  };
  for (const auto& [k, v] : rep.summary_counts()) field(k, v);
  return s + "}";
}

/// The table of the project's targets.
std::string targets_json(const std::vector<PageTarget>& targets) {
  std::string out;
  out += '[';
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const PageTarget& t = targets[i];
    std::string row = "{";
    row += "\"target\":";
    append_script_string(row, as_utf8(t.target));
    row += ",\"href\":";
    append_script_string(row, as_utf8(t.href));
    for (auto [k, v] : {std::pair<const char*, std::uint64_t>{"changed", t.changed},
                        {"changes", t.changes},
                        {"unsupported", t.unsupported},
                        {"unknown", t.unknown},
                        {"cuda_ops", t.cuda_ops},
                        {"third_party", t.third_party}}) {
      row += ",\"";
      row += k;
      row += "\":";
      append_number(row, static_cast<std::int64_t>(v));
    }
    out += (i ? "," : "") + row + "}";
  }
  out += ']';
  return out;
}

}  // namespace

std::string page_index_html(const Report& rep, const PageIndex& index) {
  Strings strings;
  std::unordered_map<std::string, std::int64_t> file_index;
  for (std::size_t i = 0; i < rep.files.size(); ++i)
    file_index.emplace(as_utf8(rep.files[i].file), static_cast<std::int64_t>(i));
  std::vector<std::array<std::uint64_t, 3>> counts(rep.files.size(), {0, 0, 0});
  std::string rows;
  std::set<std::string> third_party;
  bool first = true;
  for (const Row& r : rep.rows) {
    const std::string file = as_utf8(r.file);
    auto at = file_index.find(file);
    const std::int64_t fi = at == file_index.end() ? -1 : at->second;
    const std::map<std::uint32_t, std::uint32_t>* cells =
        fi >= 0 ? index.cells[static_cast<std::size_t>(fi)] : nullptr;
    if (fi >= 0) {
      const std::string_view sev = severity(r.op);
      ++counts[static_cast<std::size_t>(fi)][sev == "error" ? 0 : sev == "warning" ? 1 : 2];
    }
    if (r.code == "TP002") third_party.insert(as_utf8(r.api));
    const std::size_t op = strings.id(rules::to_string(r.op)), code = strings.id(as_utf8(r.code));
    const std::size_t api = strings.id(as_utf8(r.api)), msg = strings.id(as_utf8(r.message));
    rows += first ? "[" : ",[";
    first = false;
    for (std::int64_t n : {fi, static_cast<std::int64_t>(page_line(r, r.start_line, cells)),
                           static_cast<std::int64_t>(r.column), static_cast<std::int64_t>(op),
                           static_cast<std::int64_t>(code), static_cast<std::int64_t>(api),
                           static_cast<std::int64_t>(msg), static_cast<std::int64_t>(r.applied)}) {
      if (rows.back() != '[') rows += ',';
      append_number(rows, n);
    }
    if (r.cell) rows += "," + std::to_string(r.cell) + "," + std::to_string(r.start_line);
    rows += ']';
  }
  std::string files;
  for (std::size_t i = 0; i < rep.files.size(); ++i) {
    const FileEntry& f = rep.files[i];
    files += i ? ",[" : "[";
    append_script_string(files, as_utf8(f.file));
    const std::size_t outcome = strings.id(to_string(f.outcome));
    const std::size_t reason = strings.id(as_utf8(f.reason));
    for (std::int64_t n :
         {static_cast<std::int64_t>(outcome), static_cast<std::int64_t>(reason),
          static_cast<std::int64_t>(f.changed), static_cast<std::int64_t>(counts[i][0]),
          static_cast<std::int64_t>(counts[i][1]), static_cast<std::int64_t>(counts[i][2]),
          index.chunks[i]}) {
      files += ',';
      append_number(files, n);
    }
    files += ']';
  }
  std::string d = "{";
  auto key = [&](std::string_view k) {
    if (d.size() > 1) d += ',';
    d += '"';
    d += k;
    d += "\":";
  };
  auto str = [&](std::string_view k, std::string_view v) {
    key(k);
    append_script_string(d, as_utf8(v));
  };
  str("command", rep.command);
  str("target", rep.target);
  str("torch_version", rep.torch_version);
  str("min_torch_version", rep.min_torch);
  str("input", rep.input);
  str("output", rep.output);
  str("version", TORCHPORT_VERSION);
  key("summary");
  d += summary_json(rep);
  key("files");
  d += "[" + files + "]";
  key("rows");
  d += "[" + rows + "]";
  key("strings");
  d += '[';
  for (std::size_t i = 0; i < strings.list().size(); ++i) {
    if (i) d += ',';
    append_script_string(d, *strings.list()[i]);
  }
  d += ']';
  key("cuda_ops");
  d += '[';
  for (std::size_t i = 0; i < rep.cuda_ops.size(); ++i) {
    d += i ? ",[" : "[";
    append_script_string(d, as_utf8(rep.cuda_ops[i].file));
    d += ',';
    append_script_string(d, as_utf8(rep.cuda_ops[i].api));
    d += ']';
  }
  d += ']';
  key("third_party");
  d += '[';
  for (const std::string& api : third_party) {
    if (d.back() != '[') d += ',';
    append_script_string(d, api);
  }
  d += ']';
  key("csvs");
  d += '[';
  for (std::size_t i = 0; i < index.csvs.size(); ++i) {
    if (i) d += ',';
    append_script_string(d, as_utf8(index.csvs[i]));
  }
  d += ']';
  key("targets");
  d += targets_json(index.targets);
  d += "}";
  const std::string_view tpl = page_template();
  const std::string_view mark = "/*DATA*/";
  const std::size_t at = tpl.find(mark);
  std::string page;
  if (at == std::string_view::npos) return std::string(tpl);
  page.reserve(tpl.size() + d.size());
  page.append(tpl.substr(0, at));
  page += d;
  page.append(tpl.substr(at + mark.size()));
  return page;
}

}  // namespace torchport::report
