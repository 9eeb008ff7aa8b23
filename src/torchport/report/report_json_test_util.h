// Test helper for the report tests: report.json (format 2, docs/report-json.md) read back into
// one object per file, finding, operator and advice row, with the keys of docs/report-json.md,
// so a test asserts `files[0]["reason"]` rather than indices. Python has its own reader
// (torchport.report_json); this one is for the C++ tests only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::report::testing {

/// `text` parsed and its tables expanded; throws when a row does not fit its columns or a string
/// index is out of range.
inline nlohmann::ordered_json expand_report_json(std::string_view text) {
  using nlohmann::ordered_json;
  const ordered_json j = ordered_json::parse(text);
  if (j.at("format_version") != 2) throw std::runtime_error("not report.json format 2");
  const ordered_json& strings = j.at("strings");
  auto s = [&](const ordered_json& cell) -> ordered_json {
    return strings.at(cell.get<std::size_t>());
  };
  // A table's rows as objects: string columns resolved, the rest kept as numbers; the columns
  // in `optional` left out when empty (""/0), the columns in `flags` as booleans.
  auto table = [&](const std::string& name, const std::vector<std::string>& string_columns,
                   const std::vector<std::string>& optional,
                   const std::vector<std::string>& flags) {
    ordered_json out = ordered_json::array();
    const ordered_json& columns = j.at("columns").at(name);
    for (const ordered_json& row : j.at(name)) {
      if (row.size() != columns.size())
        throw std::runtime_error(name + ": a row of the wrong width");
      ordered_json e = ordered_json::object();
      for (std::size_t c = 0; c < columns.size(); ++c) {
        const std::string key = columns[c].get<std::string>();
        const bool is_string =
            std::find(string_columns.begin(), string_columns.end(), key) != string_columns.end();
        ordered_json v = is_string ? s(row[c]) : row[c];
        if (std::find(flags.begin(), flags.end(), key) != flags.end()) v = v.get<int>() != 0;
        const bool empty = v == "" || v == 0 || v == false;
        if (empty && std::find(optional.begin(), optional.end(), key) != optional.end()) continue;
        e[key] = v;
      }
      out.push_back(std::move(e));
    }
    return out;
  };
  ordered_json r = ordered_json::object();
  for (const auto& [k, v] : j.items())
    if (k != "columns" && k != "strings" && k != "files" && k != "findings" && k != "cuda_ops" &&
        k != "advice")
      r[k] = v;
  r["files"] =
      table("files", {"file", "outcome", "reason", "min_torch_version"},
            {"reason", "not_migrated", "min_torch_version"}, {"python", "changed", "not_migrated"});
  r["findings"] =
      table("findings", {"file", "operation", "code", "api", "message", "applicability", "changes"},
            {"cell", "applicability", "changes"}, {"applied"});
  r["cuda_ops"] = table("cuda_ops", {"file", "api"}, {}, {});
  if (j.contains("advice"))
    r["advice"] = table("advice", {"kind", "file", "api", "api_type", "tips", "affinity_api"},
                        {"cell", "api_type", "tips", "affinity_api"}, {});
  return r;
}

}  // namespace torchport::report::testing
