#include <torchport/report/report.h>
#include <torchport/text/utf8.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

namespace torchport::report {

namespace {

/// Appends csv_cell(cell) to `out`.
void append_cell(std::string& out, std::string_view cell) {
  const bool quote_first =
      cell.size() > 1 && std::string_view("=+-@%").find(cell[0]) != std::string_view::npos;
  if (std::none_of(cell.begin(), cell.end(),
                   [](char c) { return c == ',' || c == '"' || c == '\r' || c == '\n'; })) {
    if (quote_first) out += '\'';
    out += cell;
    return;
  }
  out += '"';
  if (quote_first) out += '\'';
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

/// `file,start,end` of a row.
void append_row_prefix(std::string& out, const Row& r) {
  append_cell(out, r.cell ? file_label(r.file, r.cell) : r.file);
  out += ',';
  append_number(out, r.start_line);
  out += ',';
  append_number(out, r.end_line);
}

/// The message with its label: "[unsafe fix: changes behaviour: ...] message" for a fix that
/// changes behaviour, "[numerics: ...] message" for a labelled safe fix.
std::string labelled_message(const Row& row) {
  if (row.changes.empty()) return row.message;
  return "[" + std::string(row.applicability == "unsafe" ? "unsafe fix: " : "") + row.changes +
         "] " + row.message;
}

std::string api_rows(const Report& r, rules::Operation op) {
  std::string out = "File,Start Line,End Line,OP,Tips\n";
  for (const Row& row : r.rows) {
    if (row.op != op) continue;
    append_row_prefix(out, row);
    out += ',';
    append_cell(out, row.api);
    out += ',';
    append_cell(out, row.message);
    out += '\n';
  }
  return out;
}

std::vector<long> version_parts(const std::string& v) {
  std::vector<long> out;
  std::size_t i = 0;
  while (i < v.size()) {
    std::size_t j = v.find('.', i);
    if (j == std::string::npos) j = v.size();
    out.push_back(std::strtol(v.substr(i, j - i).c_str(), nullptr, 10));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::Success:
      return "Success";
    case Outcome::Failure:
      return "Failure";
    case Outcome::Skip:
      return "Skip";
  }
  return "Failure";
}

std::size_t Report::count(rules::Operation op) const {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [&](const Row& r) { return r.op == op; }));
}

std::size_t Report::count(Outcome o) const {
  return static_cast<std::size_t>(std::count_if(
      files.begin(), files.end(), [&](const FileEntry& f) { return f.outcome == o; }));
}

std::vector<std::pair<std::string_view, std::uint64_t>> Report::summary_counts() const {
  const auto changed = static_cast<std::uint64_t>(
      std::count_if(files.begin(), files.end(), [](const FileEntry& f) { return f.changed; }));
  return {{"files", files.size()},
          {"success", count(Outcome::Success)},
          {"failure", count(Outcome::Failure)},
          {"skip", count(Outcome::Skip)},
          {"not_migrated", count_not_migrated()},
          {"changed", changed},
          {"insert", count(rules::Operation::Insert)},
          {"modify", count(rules::Operation::Modify)},
          {"delete", count(rules::Operation::Delete)},
          {"unsupported", count(rules::Operation::Unsupported)},
          {"unknown", count(rules::Operation::Unknown)},
          {"cuda_ops", cuda_ops.size()}};
}

std::size_t Report::count_not_migrated() const {
  return static_cast<std::size_t>(
      std::count_if(files.begin(), files.end(), [](const FileEntry& f) { return f.not_migrated; }));
}

std::string csv_cell(std::string_view cell) {
  std::string out;
  append_cell(out, cell);
  return out;
}

std::string change_list_csv(const Report& r) {
  std::string out = "File,Start Line,End Line,Operation Type,Message\n";
  for (const Row& row : r.rows) {
    if (row.op == rules::Operation::Unknown) continue;
    append_row_prefix(out, row);
    out += ',';
    out += rules::to_string(row.op);
    out += ',';
    append_cell(out, labelled_message(row));
    out += '\n';
  }
  return out;
}

std::string unsupported_api_csv(const Report& r) {
  return api_rows(r, rules::Operation::Unsupported);
}

std::string unknown_api_csv(const Report& r) { return api_rows(r, rules::Operation::Unknown); }

std::string cuda_op_list_csv(const Report& r) {
  std::string out = "File,Api\n";
  for (const CudaOp& op : r.cuda_ops) out += csv_cell(op.file) + "," + csv_cell(op.api) + "\n";
  return out;
}

std::string not_migrated_csv(const Report& r) {
  std::string out = "File,Outcome,Reason\n";
  for (const FileEntry& f : r.files)
    if (f.not_migrated)
      out += csv_cell(f.file) + "," + std::string(to_string(f.outcome)) + "," + csv_cell(f.reason) +
             "\n";
  return out;
}

namespace {

void append_advice_site(std::string& out, const AdviceRow& a) {
  if (a.start_line == 0) {
    out += "NA,NA,NA";
    return;
  }
  append_cell(out, a.cell ? file_label(a.file, a.cell) : a.file);
  out += ',';
  out += std::to_string(a.start_line);
  out += ',';
  out += std::to_string(a.end_line);
}

std::string advice_rows(const Report& r, rules::Advice::Kind kind) {
  std::string out = "File,Start Line,End Line,OP,Tips\n";
  for (const AdviceRow& a : r.advice) {
    if (a.kind != kind) continue;
    append_advice_site(out, a);
    out += ',';
    append_cell(out, a.api);
    out += ',';
    append_cell(out, a.tip);
    out += '\n';
  }
  return out;
}

}  // namespace

std::string api_precision_advice_csv(const Report& r) {
  return advice_rows(r, rules::Advice::Kind::Precision);
}

std::string api_performance_advice_csv(const Report& r) {
  return advice_rows(r, rules::Advice::Kind::Performance);
}

std::string affinity_api_call_csv(const Report& r) {
  std::string out = "File,Start Line,End Line,Api Type,Api Call Name,Affinity Api Name\n";
  for (const AdviceRow& a : r.advice) {
    if (a.kind != rules::Advice::Kind::Affinity) continue;
    append_advice_site(out, a);
    out += ',';
    append_cell(out, a.api_type);
    out += ',';
    append_cell(out, a.api);
    out += ',';
    append_cell(out, a.affinity);
    out += '\n';
  }
  return out;
}

namespace {

/// The strings of report.json, each stored once: a string's index is its place in first-seen
/// order, and "" is always 0 (a column's "none"). The views point into the Report, which outlives
/// the table.
class StringTable {
 public:
  StringTable() { (*this)(""); }
  std::uint32_t operator()(std::string_view s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<std::uint32_t>(list_.size()));
    if (added) list_.push_back(s);
    return it->second;
  }
  const std::vector<std::string_view>& strings() const { return list_; }

 private:
  std::unordered_map<std::string_view, std::uint32_t> ids_;
  std::vector<std::string_view> list_;
};

/// The columns of report.json's tables (format 2): a number, or the index of a string.
constexpr std::string_view kFileColumns[] = {"file",     "outcome",          "reason",
                                             "python",   "changed",          "not_migrated",
                                             "findings", "min_torch_version"};
constexpr std::string_view kFindingColumns[] = {"file",    "cell",      "start_line",    "end_line",
                                                "column",  "operation", "code",          "api",
                                                "message", "applied",   "applicability", "changes"};
constexpr std::string_view kCudaOpColumns[] = {"file", "api"};
constexpr std::string_view kAdviceColumns[] = {
    "kind", "file", "cell", "start_line", "end_line", "api", "api_type", "tips", "affinity_api"};

/// report.json's text (docs/report-json.md), with `escape(out, s)` appending one JSON string.
/// The layout is fixed here; the two writers differ only in how they escape strings.
template <class Escape>
std::string render_report_json(const Report& r, Escape&& escape) {
  std::string out;
  out.reserve(4096 + r.files.size() * 48 + r.rows.size() * 40 + r.advice.size() * 40);
  StringTable ids;
  auto str = [&](std::string_view k, std::string_view v) {
    out += "  \"";
    out += k;
    out += "\": ";
    escape(out, v);
    out += ",\n";
  };
  auto num = [&](std::string_view k, std::uint64_t v) {
    out += "    \"";
    out += k;
    out += "\": ";
    append_number(out, v);
    out += ",\n";
  };
  // A row: numbers, and strings as their index in "strings".
  auto row = [&](bool first, const auto& cells) {
    out += first ? "\n[" : ",\n[";
    bool head = true;
    for (std::uint64_t c : cells) {
      if (!head) out += ',';
      head = false;
      append_number(out, c);
    }
    out += ']';
  };
  auto table = [&](std::string_view name, auto& rows, auto&& cells) {
    out += "  \"";
    out += name;
    out += "\": [";
    bool first = true;
    for (const auto& x : rows) {
      row(first, cells(x));
      first = false;
    }
    out += first ? "],\n" : "\n],\n";
  };
  auto columns = [&](std::string_view name, const auto& cols, bool last) {
    out += "    \"";
    out += name;
    out += "\": [";
    bool head = true;
    for (std::string_view c : cols) {
      if (!head) out += ", ";
      head = false;
      out += '"';
      out += c;
      out += '"';
    }
    out += last ? "]\n" : "],\n";
  };

  out += "{\n";
  str("tool", "torchport");
  str("version", TORCHPORT_VERSION);
  out += "  \"format_version\": 2,\n";
  str("command", r.command);
  str("target", r.target);
  str("torch_version", r.torch_version);
  str("input", r.input);
  str("output", r.output);
  str("min_torch_version", r.min_torch);
  out += "  \"summary\": {\n";
  const auto counts = r.summary_counts();
  for (std::size_t i = 0; i + 1 < counts.size(); ++i) num(counts[i].first, counts[i].second);
  out += "    \"";
  out += counts.back().first;  // the last one: no comma
  out += "\": ";
  append_number(out, counts.back().second);
  out += "\n  },\n";
  out += "  \"columns\": {\n";
  columns("files", kFileColumns, false);
  columns("findings", kFindingColumns, false);
  columns("cuda_ops", kCudaOpColumns, !r.has_advice);
  if (r.has_advice) columns("advice", kAdviceColumns, true);
  out += "  },\n";
  using N = std::uint64_t;
  table("files", r.files, [&](const FileEntry& f) {
    return std::array<N, 8>{
        ids(f.file),  ids(to_string(f.outcome)), ids(f.reason), N{f.python},
        N{f.changed}, N{f.not_migrated},         N{f.findings}, ids(f.min_torch)};
  });
  table("findings", r.rows, [&](const Row& x) {
    return std::array<N, 12>{ids(x.file),
                             x.cell,
                             x.start_line,
                             x.end_line,
                             x.column,
                             ids(rules::to_string(x.op)),
                             ids(x.code),
                             ids(x.api),
                             ids(x.message),
                             N{x.applied},
                             ids(x.applicability),
                             ids(x.changes)};
  });
  table("cuda_ops", r.cuda_ops, [&](const CudaOp& c) {
    return std::array<N, 2>{ids(c.file), ids(c.api)};
  });
  if (r.has_advice)
    table("advice", r.advice, [&](const AdviceRow& a) {
      return std::array<N, 9>{ids(rules::to_string(a.kind)),
                              ids(a.file),
                              a.cell,
                              a.start_line,
                              a.end_line,
                              ids(a.api),
                              ids(a.api_type),
                              ids(a.tip),
                              ids(a.affinity)};
    });
  out += "  \"strings\": [";
  bool first = true;
  for (std::string_view s : ids.strings()) {
    out += first ? "\n" : ",\n";
    first = false;
    escape(out, s);
  }
  out += "\n]\n}\n";
  return out;
}

/// Appends `s` as a JSON string, escaped as nlohmann::json::dump does; false (and nothing
/// appended) when `s` is not valid UTF-8.
bool append_json_string(std::string& out, std::string_view s) {
  if (!text::is_valid_utf8(s)) return false;
  out += '"';
  std::size_t plain = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
        out += buf;
      }
    }
  }
  out.append(s.data() + plain, s.size() - plain);
  out += '"';
  return true;
}

}  // namespace

std::string report_json_reference(const Report& r) {
  // A file name that is not UTF-8 cannot be JSON: its invalid bytes become U+FFFD (the CSV
  // reports keep the bytes).
  return render_report_json(r, [](std::string& out, std::string_view s) {
    out += nlohmann::json(std::string(s))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  });
}

std::string report_json(const Report& r) {
  bool ok = true;
  std::string out = render_report_json(r, [&](std::string& o, std::string_view s) {
    if (!append_json_string(o, s)) ok = false;
  });
  return ok ? out : report_json_reference(r);
}

std::string log_line(const Row& row) {
  std::string out;
  out.reserve(row.file.size() + row.message.size() + 64);
  out += row.file;
  if (row.cell) out += ":cell" + std::to_string(row.cell);
  out += ": line: ";
  append_number(out, row.start_line);
  out += " ~ ";
  append_number(out, row.end_line);
  out += "   Operation Type: ";
  out += rules::to_string(row.op);
  out += "   Message: ";
  out += labelled_message(row);
  return out;
}

std::string summary_table(const Report& r, bool files_written) {
  // The CSV each count is written to, and what it counts when no file is written.
  auto label = [&](const char* csv, const char* what) { return files_written ? csv : what; };
  std::vector<std::pair<std::string, std::string>> lines = {
      {label("change_list.csv", "changes"),
       std::to_string(r.rows.size() - r.count(rules::Operation::Unknown))},
      {label("unsupported_api.csv", "unsupported APIs"),
       std::to_string(r.count(rules::Operation::Unsupported))},
      {label("unknown_api.csv", "unknown APIs"),
       std::to_string(r.count(rules::Operation::Unknown))},
      {label("cuda_op_list.csv", "custom CUDA ops"), std::to_string(r.cuda_ops.size())},
  };
  if (r.has_advice)
    for (auto kind : {rules::Advice::Kind::Precision, rules::Advice::Kind::Performance,
                      rules::Advice::Kind::Affinity}) {
      auto n = std::count_if(r.advice.begin(), r.advice.end(),
                             [&](const AdviceRow& a) { return a.kind == kind; });
      lines.emplace_back(kind == rules::Advice::Kind::Precision
                             ? label("api_precision_advice.csv", "precision advice")
                         : kind == rules::Advice::Kind::Performance
                             ? label("api_performance_advice.csv", "performance advice")
                             : label("affinity_api_call.csv", "affinity API calls"),
                         std::to_string(n));
    }
  std::size_t w0 = 5, w1 = 10;
  for (const auto& [a, b] : lines) {
    w0 = std::max(w0, a.size());
    w1 = std::max(w1, b.size());
  }
  auto rule = "+" + std::string(w0 + 2, '-') + "+" + std::string(w1 + 2, '-') + "+\n";
  auto row = [&](const std::string& a, const std::string& b, bool right) {
    std::string left = a + std::string(w0 - a.size(), ' ');
    std::string val =
        right ? std::string(w1 - b.size(), ' ') + b : b + std::string(w1 - b.size(), ' ');
    return "| " + left + " | " + val + " |\n";
  };
  std::string out =
      rule + (files_written ? row("files", "statistics", false) : row("findings", "count", false)) +
      rule;
  for (const auto& [a, b] : lines) out += row(a, b, true);
  out += rule;
  std::size_t python = static_cast<std::size_t>(
      std::count_if(r.files.begin(), r.files.end(), [](const FileEntry& f) { return f.python; }));
  std::size_t changed = static_cast<std::size_t>(
      std::count_if(r.files.begin(), r.files.end(), [](const FileEntry& f) { return f.changed; }));
  std::size_t not_migrated = r.count_not_migrated();
  out += std::to_string(r.files.size()) + " files (" + std::to_string(python) +
         " Python): " + std::to_string(r.count(Outcome::Success)) + " success, " +
         std::to_string(r.count(Outcome::Failure)) + " failure, " +
         std::to_string(r.count(Outcome::Skip)) + " skipped" +
         (r.command == "analyze" ? std::string() : "; " + std::to_string(changed) + " changed") +
         "\n";
  if (not_migrated) {
    out += "INCOMPLETE: " + std::to_string(not_migrated) + " file(s) not " +
           (r.command == "analyze" ? "analyzed" : "migrated") +
           " (each is a row of not_migrated.csv, with its reason):\n";
    constexpr std::size_t kShown = 20;
    std::size_t shown = 0;
    for (const FileEntry& f : r.files)
      if (f.not_migrated && shown++ < kShown) out += "  " + f.reason + "\n";
    if (not_migrated > kShown)
      out += "  ... and " + std::to_string(not_migrated - kShown) + " more\n";
  }
  if (!r.min_torch.empty()) out += "the output needs torch >= " + r.min_torch + "\n";
  return out;
}

std::string file_label(const std::string& file, std::uint32_t cell) {
  return cell ? file + ":cell" + std::to_string(cell) : file;
}

void write_findings_text(const Report& r, std::ostream& os) {
  // One line per finding: on a large tree that is tens of thousands of lines (49,477 for the
  // installed torch, 12 MB), so the lines are made in one buffer, with no temporary strings,
  // and written out whenever it holds 64 KB.
  constexpr std::size_t kChunk = std::size_t{64} << 10;
  std::string out;
  out.reserve(kChunk + 4096);
  auto flush = [&](std::size_t at_least) {
    if (out.size() < at_least) return;
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
  };
  for (const FileEntry& f : r.files)
    if (f.outcome == Outcome::Failure) {
      out += f.reason;
      out += '\n';
      flush(kChunk);
    }
  char num[16];
  auto number = [&](std::uint32_t n) {
    auto [end, ec] = std::to_chars(num, num + sizeof num, n);
    out.append(num, end);
  };
  for (const Row& row : r.rows) {
    out += row.file;
    if (row.cell) {
      out += ":cell";
      number(row.cell);
    }
    out += ':';
    number(row.start_line);
    out += ':';
    number(row.column);
    out += ": ";
    out += row.code;
    out += " [";
    out += rules::to_string(row.op);
    out += "] ";
    out += row.api;
    out += ": ";
    out += row.message;
    out += '\n';
    flush(kChunk);
  }
  flush(1);
}

std::string findings_text(const Report& r) {
  std::ostringstream os;
  write_findings_text(r, os);
  return std::move(os).str();
}

std::string max_version(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return version_parts(a) < version_parts(b) ? b : a;
}

}  // namespace torchport::report
