#include <torchport/report/report.h>
#include <torchport/text/utf8.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

namespace torchport::report {

namespace {

std::string_view op_name(rules::Operation op) {
  switch (op) {
    case rules::Operation::Insert:
      return "INSERT";
    case rules::Operation::Modify:
      return "MODIFY";
    case rules::Operation::Delete:
      return "DELETE";
    case rules::Operation::Unsupported:
      return "UNSUPPORTED";
    case rules::Operation::Unknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

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
    out += op_name(row.op);
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

std::string report_json_reference(const Report& r) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["tool"] = "torchport";
  j["version"] = TORCHPORT_VERSION;
  j["command"] = r.command;
  j["target"] = r.target;
  j["torch_version"] = r.torch_version;
  j["input"] = r.input;
  j["output"] = r.output;
  j["min_torch_version"] = r.min_torch;
  ordered_json summary;
  summary["files"] = r.files.size();
  summary["success"] = r.count(Outcome::Success);
  summary["failure"] = r.count(Outcome::Failure);
  summary["skip"] = r.count(Outcome::Skip);
  summary["not_migrated"] = r.count_not_migrated();
  summary["changed"] =
      std::count_if(r.files.begin(), r.files.end(), [](const FileEntry& f) { return f.changed; });
  for (auto op : {rules::Operation::Insert, rules::Operation::Modify, rules::Operation::Delete,
                  rules::Operation::Unsupported, rules::Operation::Unknown}) {
    std::string key(op_name(op));
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    summary[key] = r.count(op);
  }
  summary["cuda_ops"] = r.cuda_ops.size();
  j["summary"] = summary;
  ordered_json files = ordered_json::array();
  for (const FileEntry& f : r.files) {
    ordered_json e;
    e["file"] = f.file;
    e["outcome"] = to_string(f.outcome);
    if (!f.reason.empty()) e["reason"] = f.reason;
    e["python"] = f.python;
    e["changed"] = f.changed;
    if (f.not_migrated) e["not_migrated"] = true;
    e["findings"] = f.findings;
    if (!f.min_torch.empty()) e["min_torch_version"] = f.min_torch;
    files.push_back(std::move(e));
  }
  j["files"] = std::move(files);
  ordered_json findings = ordered_json::array();
  for (const Row& row : r.rows) {
    ordered_json e;
    e["file"] = row.file;
    if (row.cell) e["cell"] = row.cell;
    e["start_line"] = row.start_line;
    e["end_line"] = row.end_line;
    e["column"] = row.column;
    e["operation"] = op_name(row.op);
    e["code"] = row.code;
    e["api"] = row.api;
    e["message"] = row.message;
    e["applied"] = row.applied;
    if (!row.applicability.empty()) e["applicability"] = row.applicability;
    if (!row.changes.empty()) e["changes"] = row.changes;
    findings.push_back(std::move(e));
  }
  j["findings"] = std::move(findings);
  ordered_json ops = ordered_json::array();
  for (const CudaOp& op : r.cuda_ops) ops.push_back({{"file", op.file}, {"api", op.api}});
  j["cuda_ops"] = std::move(ops);
  if (r.has_advice) {
    ordered_json advice = ordered_json::array();
    for (const AdviceRow& a : r.advice) {
      ordered_json e;
      e["kind"] = rules::to_string(a.kind);
      if (a.start_line == 0) {
        e["scope"] = "project";
      } else {
        e["scope"] = "site";
        e["file"] = a.file;
        if (a.cell) e["cell"] = a.cell;
        e["start_line"] = a.start_line;
        e["end_line"] = a.end_line;
      }
      e["api"] = a.api;
      if (!a.api_type.empty()) e["api_type"] = a.api_type;
      if (!a.tip.empty()) e["tips"] = a.tip;
      if (!a.affinity.empty()) e["affinity_api"] = a.affinity;
      advice.push_back(std::move(e));
    }
    j["advice"] = std::move(advice);
  }
  // A file name that is not UTF-8 cannot be JSON: its invalid bytes become U+FFFD (the CSV
  // reports keep the bytes).
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

/// True if `s` is well-formed UTF-8 (what nlohmann::json's strict serializer accepts).
bool valid_utf8(std::string_view s) { return text::is_valid_utf8(s); }

/// Writes JSON text exactly as nlohmann::ordered_json::dump(2) does, for the shapes of
/// report.json. `ok` turns false on a string that is not valid UTF-8.
class JsonWriter {
 public:
  std::string out;
  bool ok = true;

  void open(char bracket) {
    out += bracket;
    ++depth_;
    first_ = true;
  }
  /// Closes an object or array; `empty` when nothing was written into it.
  void close(char bracket) {
    --depth_;
    if (!first_) {
      out += '\n';
      indent();
    }
    out += bracket;
    first_ = false;
  }
  void key(std::string_view k) {
    item();
    string(k);
    out += ": ";
  }
  /// Starts an array element.
  void item() {
    out += first_ ? "\n" : ",\n";
    first_ = false;
    indent();
  }
  void string(std::string_view s) {
    if (!valid_utf8(s)) ok = false;
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
  }
  void number(std::uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, end);
  }
  void boolean(bool b) { out += b ? "true" : "false"; }

  template <class F>
  void field(std::string_view k, F&& value) {
    key(k);
    value();
  }

 private:
  void indent() { out.append(static_cast<std::size_t>(depth_) * 2, ' '); }
  int depth_ = 0;
  bool first_ = true;
};

}  // namespace

std::string report_json(const Report& r) {
  JsonWriter w;
  w.out.reserve(256 + r.files.size() * 160 + r.rows.size() * 320);
  auto str = [&](std::string_view k, std::string_view v) {
    w.key(k);
    w.string(v);
  };
  auto num = [&](std::string_view k, std::uint64_t v) {
    w.key(k);
    w.number(v);
  };
  w.open('{');
  str("tool", "torchport");
  str("version", TORCHPORT_VERSION);
  str("command", r.command);
  str("target", r.target);
  str("torch_version", r.torch_version);
  str("input", r.input);
  str("output", r.output);
  str("min_torch_version", r.min_torch);
  w.key("summary");
  w.open('{');
  num("files", r.files.size());
  num("success", r.count(Outcome::Success));
  num("failure", r.count(Outcome::Failure));
  num("skip", r.count(Outcome::Skip));
  num("not_migrated", r.count_not_migrated());
  num("changed",
      static_cast<std::uint64_t>(std::count_if(r.files.begin(), r.files.end(),
                                               [](const FileEntry& f) { return f.changed; })));
  num("insert", r.count(rules::Operation::Insert));
  num("modify", r.count(rules::Operation::Modify));
  num("delete", r.count(rules::Operation::Delete));
  num("unsupported", r.count(rules::Operation::Unsupported));
  num("unknown", r.count(rules::Operation::Unknown));
  num("cuda_ops", r.cuda_ops.size());
  w.close('}');
  w.key("files");
  w.open('[');
  for (const FileEntry& f : r.files) {
    w.item();
    w.open('{');
    str("file", f.file);
    str("outcome", to_string(f.outcome));
    if (!f.reason.empty()) str("reason", f.reason);
    w.key("python");
    w.boolean(f.python);
    w.key("changed");
    w.boolean(f.changed);
    if (f.not_migrated) {
      w.key("not_migrated");
      w.boolean(true);
    }
    num("findings", f.findings);
    if (!f.min_torch.empty()) str("min_torch_version", f.min_torch);
    w.close('}');
  }
  w.close(']');
  w.key("findings");
  w.open('[');
  for (const Row& row : r.rows) {
    w.item();
    w.open('{');
    str("file", row.file);
    if (row.cell) num("cell", row.cell);
    num("start_line", row.start_line);
    num("end_line", row.end_line);
    num("column", row.column);
    str("operation", op_name(row.op));
    str("code", row.code);
    str("api", row.api);
    str("message", row.message);
    w.key("applied");
    w.boolean(row.applied);
    if (!row.applicability.empty()) str("applicability", row.applicability);
    if (!row.changes.empty()) str("changes", row.changes);
    w.close('}');
  }
  w.close(']');
  w.key("cuda_ops");
  w.open('[');
  for (const CudaOp& op : r.cuda_ops) {
    w.item();
    w.open('{');
    str("file", op.file);
    str("api", op.api);
    w.close('}');
  }
  w.close(']');
  if (r.has_advice) {
    w.key("advice");
    w.open('[');
    for (const AdviceRow& a : r.advice) {
      w.item();
      w.open('{');
      str("kind", rules::to_string(a.kind));
      if (a.start_line == 0) {
        str("scope", "project");
      } else {
        str("scope", "site");
        str("file", a.file);
        if (a.cell) num("cell", a.cell);
        num("start_line", a.start_line);
        num("end_line", a.end_line);
      }
      str("api", a.api);
      if (!a.api_type.empty()) str("api_type", a.api_type);
      if (!a.tip.empty()) str("tips", a.tip);
      if (!a.affinity.empty()) str("affinity_api", a.affinity);
      w.close('}');
    }
    w.close(']');
  }
  w.close('}');
  if (!w.ok) return report_json_reference(r);
  w.out += '\n';
  return std::move(w.out);
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
  out += op_name(row.op);
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

std::string findings_text(const Report& r) {
  std::string out;
  for (const FileEntry& f : r.files)
    if (f.outcome == Outcome::Failure) out += f.reason + "\n";
  for (const Row& row : r.rows) {
    out += file_label(row.file, row.cell) + ":" + std::to_string(row.start_line) + ":" +
           std::to_string(row.column) + ": " + row.code + " [" + std::string(op_name(row.op)) +
           "] " + row.api + ": " + row.message + "\n";
  }
  return out;
}

std::string max_version(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return version_parts(a) < version_parts(b) ? b : a;
}

}  // namespace torchport::report
