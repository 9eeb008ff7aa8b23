// Third-party analysis output: Ascend's five CSV files, third_party.json, the text report, and
// reading a full_unsupported_results.csv back.
//
// The CSV layouts are those of Ascend's analysis tool (msFmkTransplt `pytorch_analyse.sh -m
// third_party`, analysis/third_party_analysis/third_party_analyzer.py in Ascend/mstt, summarised
// in ../shared/reference/peer-migration-tools.md §1.4): `Torch API,Affected 3rd-party API` for
// framework_unsupported_op / unknown_op / migration_needed_op, `OP Name,Affected 3rd-party API`
// for cuda_op, `File,3rd-party API,Message` for full_unsupported_results, where a cell lists its
// names one a line and the message has one `file_path:F, start_line:N, api_name:API` line per
// API reached.
#include <torchport/callgraph/callgraph.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace torchport::callgraph {

namespace {

std::string cell(std::string_view s) {
  bool quote = s.find_first_of(",\"\n\r") != std::string_view::npos;
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : "\n") + n;
  return s;
}

/// Splits CSV text into rows of cells (RFC 4180 quoting; cells may hold line breaks). The
/// 1-based line each row starts on goes to `lines`. nullopt on an unterminated quote.
std::optional<std::vector<std::vector<std::string>>> parse_csv(std::string_view text,
                                                               std::vector<std::uint32_t>& lines,
                                                               std::uint32_t& bad_line) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cur;
  bool quoted = false, any = false;
  std::uint32_t line = 1, row_line = 1;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cur += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(cur));
      cur.clear();
      any = true;
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !cur.empty()) {
        row.push_back(std::move(cur));
        rows.push_back(std::move(row));
        lines.push_back(row_line);
      }
      row.clear();
      cur.clear();
      any = false;
      ++line;
      row_line = line;
    } else {
      cur += c;
      any = true;
    }
  }
  if (quoted) {
    bad_line = row_line;
    return std::nullopt;
  }
  if (any || !cur.empty()) {
    row.push_back(std::move(cur));
    rows.push_back(std::move(row));
    lines.push_back(row_line);
  }
  return rows;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ascend_csvs(const Result& r) {
  // Per category: torch API -> the library APIs that reach it (every name they go by).
  std::map<Category, std::map<std::string, std::set<std::string>>> by;
  std::string full = "File,3rd-party API,Message\n";
  for (const LibraryApi& api : r.apis) {
    std::set<std::string> names(api.names.begin(), api.names.end());
    names.insert(api.name);
    std::string message;
    for (const LibraryApi::Reach& reach : api.reaches) {
      const Leaf& leaf = r.leaves[reach.leaf];
      by[leaf.category][leaf.api].insert(names.begin(), names.end());
      // As Ascend: the unknown ones are not "unsupported" and stay out of the full results.
      if (leaf.category == Category::Unknown) continue;
      message += "file_path:" + reach.file + ", start_line:" + std::to_string(reach.line) +
                 ", api_name:" + leaf.api + " \n";
    }
    if (message.empty()) continue;
    std::string name_cell = api.name;
    for (const std::string& n : names)
      if (n != api.name) name_cell += "\n" + n;
    full += cell(api.file) + "," + cell(name_cell) + "," + cell(message) + "\n";
  }
  auto table = [&](Category c, const char* header) {
    std::string out = header;
    for (const auto& [api, names] : by[c]) out += cell(api) + "," + cell(joined(names)) + "\n";
    return out;
  };
  return {
      {"framework_unsupported_op.csv",
       table(Category::FrameworkUnsupported, "Torch API,Affected 3rd-party API\n")},
      {"unknown_op.csv", table(Category::Unknown, "Torch API,Affected 3rd-party API\n")},
      {"migration_needed_op.csv",
       table(Category::MigrationNeeded, "Torch API,Affected 3rd-party API\n")},
      {"cuda_op.csv", table(Category::CudaOp, "OP Name,Affected 3rd-party API\n")},
      {"full_unsupported_results.csv", full},
  };
}

std::string result_json(const Result& r, const Options& opts) {
  nlohmann::ordered_json j;
  j["tool"] = "torchport";
  j["mode"] = "third-party";
  j["target"] = opts.target;
  j["torch_version"] = opts.torch_version;
  j["env"] = opts.env;
  j["results_read"] = opts.results;
  j["libraries"] = r.libraries;
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const Finding& f : r.findings) {
    const Leaf& leaf = r.leaves[f.leaf];
    nlohmann::ordered_json chain = nlohmann::ordered_json::array();
    for (const Hop& h : f.chain)
      chain.push_back({{"function", h.function}, {"file", h.file}, {"line", h.line}});
    findings.push_back({{"file", f.file},
                        {"line", f.line},
                        {"column", f.column},
                        {"api", f.api},
                        {"reaches", leaf.api},
                        {"category", to_string(leaf.category)},
                        {"note", leaf.note},
                        {"chain", chain}});
  }
  j["findings"] = findings;
  j["warnings"] = r.warnings;
  j["stats"] = {{"project_files", r.stats.project_files},
                {"modules_parsed", r.stats.modules_parsed},
                {"bytes_parsed", r.stats.bytes_parsed},
                {"functions_followed", r.stats.functions},
                {"library_apis_reaching", r.apis.size()}};
  return j.dump(1) + "\n";
}

std::string result_text(const Result& r) {
  std::string out;
  for (const Finding& f : r.findings) {
    const Leaf& leaf = r.leaves[f.leaf];
    out += f.file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) + ": " + f.api +
           " reaches " + leaf.api + " (" + std::string(to_string(leaf.category)) +
           (leaf.note.empty() ? "" : ": " + leaf.note) + ")\n";
    for (const Hop& h : f.chain)
      out += "    " + h.function + "  " + h.file + ":" + std::to_string(h.line) + "\n";
    out += "    -> " + leaf.api + "\n";
  }
  std::map<Category, std::set<std::string>> seen;
  for (const Finding& f : r.findings) seen[r.leaves[f.leaf].category].insert(r.leaves[f.leaf].api);
  out += "third-party: " + std::to_string(r.libraries.size()) + " libraries, " +
         std::to_string(r.stats.modules_parsed) + " modules parsed, " +
         std::to_string(r.stats.functions) + " functions followed; " +
         std::to_string(r.findings.size()) +
         " calls reach: " + std::to_string(seen[Category::MigrationNeeded].size()) +
         " migration needed, " + std::to_string(seen[Category::FrameworkUnsupported].size()) +
         " unsupported, " + std::to_string(seen[Category::CudaOp].size()) + " CUDA-only, " +
         std::to_string(seen[Category::Unknown].size()) + " unknown\n";
  return out;
}

std::optional<std::vector<KnownApi>> read_results(const std::string& path, const std::string& text,
                                                  std::string* error) {
  std::vector<std::uint32_t> lines;
  std::uint32_t bad = 0;
  auto rows = parse_csv(text, lines, bad);
  if (!rows) {
    *error = path + ":" + std::to_string(bad) + ": unterminated quoted cell";
    return std::nullopt;
  }
  if (rows->empty() || rows->front().size() < 3 || trim(rows->front()[0]) != "File" ||
      trim(rows->front()[1]) != "3rd-party API" || trim(rows->front()[2]) != "Message") {
    *error = path +
             ":1: not a full_unsupported_results.csv (the header must be "
             "File,3rd-party API,Message)";
    return std::nullopt;
  }
  std::vector<KnownApi> out;
  for (std::size_t i = 1; i < rows->size(); ++i) {
    const std::vector<std::string>& row = (*rows)[i];
    const std::string where = path + ":" + std::to_string(lines[i]);
    if (row.size() < 3) {
      *error = where + ": a row needs 3 cells (File,3rd-party API,Message)";
      return std::nullopt;
    }
    KnownApi k;
    k.file = row[0];
    for (std::size_t b = 0, e; b <= row[1].size(); b = e + 1) {
      e = row[1].find('\n', b);
      if (e == std::string::npos) e = row[1].size();
      if (std::string n = trim(std::string_view(row[1]).substr(b, e - b)); !n.empty())
        k.names.push_back(n);
    }
    for (std::size_t b = 0, e; b < row[2].size(); b = e + 1) {
      e = row[2].find('\n', b);
      if (e == std::string::npos) e = row[2].size();
      std::string l = trim(std::string_view(row[2]).substr(b, e - b));
      if (l.empty()) continue;
      // file_path:F, start_line:N, api_name:API  (F may hold ", " itself: split from the right)
      std::size_t api_at = l.rfind(", api_name:");
      std::size_t line_at = l.rfind(", start_line:", api_at);
      if (!l.starts_with("file_path:") || api_at == std::string::npos ||
          line_at == std::string::npos) {
        *error =
            where + ": message line '" + l + "' is not 'file_path:F, start_line:N, api_name:API'";
        return std::nullopt;
      }
      KnownApi::Reached r;
      r.file = l.substr(10, line_at - 10);
      std::string n = l.substr(line_at + 13, api_at - line_at - 13);
      r.line = 0;
      for (char c : n) {
        if (c < '0' || c > '9') {
          *error = where + ": start_line '" + n + "' is not a number";
          return std::nullopt;
        }
        r.line = r.line * 10 + static_cast<std::uint32_t>(c - '0');
      }
      r.api = trim(l.substr(api_at + 11));
      k.reached.push_back(std::move(r));
    }
    if (k.names.empty()) {
      *error = where + ": empty 3rd-party API cell";
      return std::nullopt;
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace torchport::callgraph
