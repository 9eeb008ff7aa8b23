#include <torchport/report/report.h>

#include <algorithm>
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

std::string row_prefix(const Row& r) {
  return csv_cell(r.file) + "," + std::to_string(r.start_line) + "," + std::to_string(r.end_line);
}

std::string api_rows(const Report& r, rules::Operation op) {
  std::string out = "File,Start Line,End Line,OP,Tips\n";
  for (const Row& row : r.rows) {
    if (row.op != op) continue;
    out += row_prefix(row) + "," + csv_cell(row.api) + "," + csv_cell(row.message) + "\n";
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

std::string csv_cell(std::string_view cell) {
  std::string s(cell);
  if (s.size() > 1 && std::string_view("=+-@%").find(s[0]) != std::string_view::npos)
    s.insert(s.begin(), '\'');
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string change_list_csv(const Report& r) {
  std::string out = "File,Start Line,End Line,Operation Type,Message\n";
  for (const Row& row : r.rows) {
    if (row.op == rules::Operation::Unknown) continue;
    out +=
        row_prefix(row) + "," + std::string(op_name(row.op)) + "," + csv_cell(row.message) + "\n";
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

std::string report_json(const Report& r) {
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
    e["findings"] = f.findings;
    if (!f.min_torch.empty()) e["min_torch_version"] = f.min_torch;
    files.push_back(std::move(e));
  }
  j["files"] = std::move(files);
  ordered_json findings = ordered_json::array();
  for (const Row& row : r.rows) {
    ordered_json e;
    e["file"] = row.file;
    e["start_line"] = row.start_line;
    e["end_line"] = row.end_line;
    e["column"] = row.column;
    e["operation"] = op_name(row.op);
    e["code"] = row.code;
    e["api"] = row.api;
    e["message"] = row.message;
    e["applied"] = row.applied;
    findings.push_back(std::move(e));
  }
  j["findings"] = std::move(findings);
  ordered_json ops = ordered_json::array();
  for (const CudaOp& op : r.cuda_ops) ops.push_back({{"file", op.file}, {"api", op.api}});
  j["cuda_ops"] = std::move(ops);
  return j.dump(2) + "\n";
}

std::string log_line(const Row& row) {
  return row.file + ": line: " + std::to_string(row.start_line) + " ~ " +
         std::to_string(row.end_line) + "   Operation Type: " + std::string(op_name(row.op)) +
         "   Message: " + row.message;
}

std::string summary_table(const Report& r) {
  std::vector<std::pair<std::string, std::string>> lines = {
      {"change_list.csv", std::to_string(r.rows.size() - r.count(rules::Operation::Unknown))},
      {"unsupported_api.csv", std::to_string(r.count(rules::Operation::Unsupported))},
      {"unknown_api.csv", std::to_string(r.count(rules::Operation::Unknown))},
      {"cuda_op_list.csv", std::to_string(r.cuda_ops.size())},
  };
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
  std::string out = rule + row("files", "statistics", false) + rule;
  for (const auto& [a, b] : lines) out += row(a, b, true);
  out += rule;
  std::size_t python = static_cast<std::size_t>(
      std::count_if(r.files.begin(), r.files.end(), [](const FileEntry& f) { return f.python; }));
  std::size_t changed = static_cast<std::size_t>(
      std::count_if(r.files.begin(), r.files.end(), [](const FileEntry& f) { return f.changed; }));
  out += std::to_string(r.files.size()) + " files (" + std::to_string(python) +
         " Python): " + std::to_string(r.count(Outcome::Success)) + " success, " +
         std::to_string(r.count(Outcome::Failure)) + " failure, " +
         std::to_string(r.count(Outcome::Skip)) + " skipped" +
         (r.command == "analyze" ? std::string() : "; " + std::to_string(changed) + " changed") +
         "\n";
  if (!r.min_torch.empty()) out += "the output needs torch >= " + r.min_torch + "\n";
  return out;
}

std::string findings_text(const Report& r) {
  std::string out;
  for (const FileEntry& f : r.files)
    if (f.outcome == Outcome::Failure) out += f.reason + "\n";
  for (const Row& row : r.rows) {
    out += row.file + ":" + std::to_string(row.start_line) + ":" + std::to_string(row.column) +
           ": " + row.code + " [" + std::string(op_name(row.op)) + "] " + row.api + ": " +
           row.message + "\n";
  }
  return out;
}

std::string max_version(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return version_parts(a) < version_parts(b) ? b : a;
}

}  // namespace torchport::report
