#include <torchport/report/sarif.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

namespace torchport::report {
namespace {

using nlohmann::json;

/// The registry's entry of a code, if it has one (TP950, the vendor-list judging done by the
/// driver, has none).
const rules::RuleInfo* family_of(std::string_view code) {
  for (const rules::RuleInfo& info : rules::registry())
    if (info.code == code) return &info;
  return nullptr;
}

/// "path:line:col: message" (a Failure's reason) split into its parts; line 0 when absent.
struct Located {
  std::string path;
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::string message;
};

Located locate(const FileEntry& f) {
  Located out{f.file, 0, 0, f.reason};
  std::string_view s = f.reason;
  if (s.substr(0, f.file.size()) != f.file || s.size() <= f.file.size() + 1 ||
      s[f.file.size()] != ':')
    return out;
  std::string_view rest = s.substr(f.file.size() + 1);
  std::uint32_t numbers[2] = {0, 0};
  for (std::uint32_t& n : numbers) {
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (ec != std::errc() || end == rest.data() + rest.size() || *end != ':') break;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()) + 1);
  }
  out.line = numbers[0];
  out.column = numbers[1];
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  out.message = std::string(rest);
  return out;
}

std::string file_uri(std::string_view base) {
  std::string uri = "file://";
  for (char c : base) {
    if (c == ' ')
      uri += "%20";
    else if (c == '%')
      uri += "%25";
    else
      uri += c;
  }
  if (uri.back() != '/') uri += '/';
  return uri;
}

/// A relative path as a URI reference: percent-encode what a URI cannot hold as is.
std::string relative_uri(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    bool keep =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
        std::string_view("-._~/!$&'()*+,;=:@").find(static_cast<char>(c)) != std::string_view::npos;
    if (keep) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

/// GitHub workflow command escaping: the message escapes % CR LF; properties also : and ,.
std::string gh_escape(std::string_view s, bool property) {
  std::string out;
  for (char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string_view level(rules::Operation op) {
  switch (op) {
    case rules::Operation::Unsupported:
      return "error";
    case rules::Operation::Unknown:
      return "warning";
    case rules::Operation::Insert:
    case rules::Operation::Modify:
    case rules::Operation::Delete:
      break;
  }
  return "note";
}

std::string sarif_json(const Report& r) {
  // One reportingDescriptor per code that occurs, in code order.
  std::map<std::string, std::size_t> rule_index;
  for (const Row& row : r.rows) rule_index.emplace(row.code, 0);
  json rules = json::array();
  for (auto& [code, index] : rule_index) {
    index = rules.size();
    json rule = {{"id", code}};
    if (const rules::RuleInfo* fam = family_of(code)) {
      rule["name"] = std::string(fam->name);
      rule["shortDescription"] = {{"text", std::string(fam->summary)}};
    }
    rules.push_back(std::move(rule));
  }

  json results = json::array();
  for (const Row& row : r.rows) {
    json region = {{"startLine", std::max<std::uint32_t>(1, row.start_line)}};
    if (row.column > 0) region["startColumn"] = row.column;
    if (row.end_line >= row.start_line && row.end_line > 0) region["endLine"] = row.end_line;
    std::string text = row.api.empty() ? row.message : row.api + ": " + row.message;
    json physical = {
        {"artifactLocation", {{"uri", relative_uri(row.file)}, {"uriBaseId", "SRCROOT"}}},
        {"region", region}};
    json location = {{"physicalLocation", physical}};
    if (row.cell) {
      // A notebook: the lines are the cell's, not the .ipynb file's, so no region of the file
      // is claimed; the cell and its line go in a logical location, the message and properties.
      const std::string where = "cell " + std::to_string(row.cell) + ", line " +
                                std::to_string(row.start_line) + ", column " +
                                std::to_string(row.column);
      text = where + ": " + text;
      physical.erase("region");
      location = {{"physicalLocation", physical},
                  {"logicalLocations",
                   json::array({{{"name", "cell" + std::to_string(row.cell)},
                                 {"fullyQualifiedName", file_label(row.file, row.cell) + ":" +
                                                            std::to_string(row.start_line) + ":" +
                                                            std::to_string(row.column)},
                                 {"kind", "module"}}})},
                  {"properties",
                   {{"cell", row.cell},
                    {"startLine", row.start_line},
                    {"endLine", row.end_line},
                    {"startColumn", row.column}}}};
    }
    results.push_back({
        {"ruleId", row.code},
        {"ruleIndex", rule_index[row.code]},
        {"level", std::string(level(row.op))},
        {"message", {{"text", text}}},
        {"locations", json::array({location})},
        {"properties",
         {{"operation", std::string(rules::to_string(row.op))},
          {"api", row.api},
          {"target", r.target},
          {"applied", row.applied}}},
    });
  }

  json notifications = json::array();
  for (const FileEntry& f : r.files) {
    if (f.outcome != Outcome::Failure) continue;
    Located at = locate(f);
    json loc = {{"artifactLocation", {{"uri", relative_uri(f.file)}, {"uriBaseId", "SRCROOT"}}}};
    if (at.line > 0) {
      loc["region"] = {{"startLine", at.line}};
      if (at.column > 0) loc["region"]["startColumn"] = at.column;
    }
    notifications.push_back({{"level", "error"},
                             {"message", {{"text", at.message}}},
                             {"locations", json::array({{{"physicalLocation", loc}}})}});
  }
  json invocation = {{"executionSuccessful", notifications.empty()}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;

  json run = {
      {"tool",
       {{"driver",
         {{"name", "torchport"},
          {"version", TORCHPORT_VERSION},
          {"semanticVersion", TORCHPORT_VERSION},
          {"rules", rules}}}}},
      {"invocations", json::array({invocation})},
      {"columnKind", "unicodeCodePoints"},
      {"results", results},
      {"properties", {{"command", r.command}, {"target", r.target}}},
  };
  if (!r.input.empty()) run["originalUriBaseIds"] = {{"SRCROOT", {{"uri", file_uri(r.input)}}}};
  if (!r.torch_version.empty()) run["properties"]["torch_version"] = r.torch_version;
  json log = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
              {"version", "2.1.0"},
              {"runs", json::array({run})}};
  return log.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string github_annotations(const Report& r, std::string_view path_prefix) {
  std::string out;
  auto command = [&](std::string_view kind, std::string_view file, std::uint32_t line,
                     std::uint32_t end_line, std::uint32_t col, std::string_view title,
                     std::string_view message) {
    out += "::";
    out += kind;
    out += " file=" + gh_escape(std::string(path_prefix) + std::string(file), true);
    if (line > 0) out += ",line=" + std::to_string(line);
    if (end_line > line) out += ",endLine=" + std::to_string(end_line);
    if (col > 0) out += ",col=" + std::to_string(col);
    out += ",title=" + gh_escape(title, true);
    out += "::" + gh_escape(message, false) + "\n";
  };
  for (const FileEntry& f : r.files) {
    if (f.outcome != Outcome::Failure) continue;
    Located at = locate(f);
    command("error", f.file, at.line, 0, at.column, "torchport: file not migrated", at.message);
  }
  for (const Row& row : r.rows) {
    std::string_view lv = level(row.op);
    std::string_view kind = lv == "note" ? "notice" : lv;
    std::string title = "torchport " + row.code + " [" + std::string(rules::to_string(row.op)) +
                        "] (" + r.target + ")";
    std::string text = row.api.empty() ? row.message : row.api + ": " + row.message;
    if (row.cell) {  // a notebook: the lines are the cell's, not the file's
      text = "cell " + std::to_string(row.cell) + ", line " + std::to_string(row.start_line) +
             ": " + text;
      command(kind, row.file, 0, 0, 0, title, text);
      continue;
    }
    command(kind, row.file, row.start_line, row.end_line, row.column, title, text);
  }
  return out;
}

}  // namespace torchport::report
