#include <torchport/project/selection.h>

namespace torchport::project {
namespace {

/// `*`/`?` within one component, `**` across components (also zero of them: "a/**/b" ~ "a/b").
bool glob(std::string_view p, std::string_view s) {
  while (!p.empty()) {
    if (p.substr(0, 2) == "**") {
      std::string_view rest = p.substr(2);
      if (!rest.empty() && rest.front() == '/') {
        std::string_view after = rest.substr(1);
        if (glob(after, s)) return true;  // zero components
      }
      for (std::size_t i = 0; i <= s.size(); ++i)
        if (glob(rest, s.substr(i))) return true;
      return false;
    }
    if (p.front() == '*') {
      for (std::size_t i = 0; i <= s.size(); ++i) {
        if (glob(p.substr(1), s.substr(i))) return true;
        if (i < s.size() && s[i] == '/') break;
      }
      return false;
    }
    if (s.empty()) return false;
    if (p.front() == '?' ? s.front() == '/' : p.front() != s.front()) return false;
    p.remove_prefix(1);
    s.remove_prefix(1);
  }
  return s.empty();
}

bool code_matches(std::string_view wanted, std::string_view code) {
  return !wanted.empty() && code.substr(0, wanted.size()) == wanted;
}

}  // namespace

bool path_matches(std::string_view pattern, std::string_view rel) {
  while (pattern.size() > 1 && pattern.back() == '/') pattern.remove_suffix(1);
  if (pattern.substr(0, 2) == "./") pattern.remove_prefix(2);
  if (pattern.empty()) return false;
  const bool anchored = pattern.find('/') != std::string_view::npos;
  for (std::size_t end = 0; end != std::string_view::npos;) {
    end = rel.find('/', end + (end == 0 ? 0 : 1));
    std::string_view prefix = end == std::string_view::npos ? rel : rel.substr(0, end);
    if (glob(pattern, prefix)) return true;
    if (!anchored) {
      std::size_t start = prefix.rfind('/');
      std::string_view component =
          start == std::string_view::npos ? prefix : prefix.substr(start + 1);
      if (glob(pattern, component)) return true;
    }
  }
  return false;
}

std::string Selection::excluded_by(std::string_view rel) const {
  for (const std::string& p : exclude)
    if (path_matches(p, rel)) return p;
  return {};
}

bool Selection::ignored(std::string_view rel, std::string_view code) const {
  for (const std::string& c : ignore)
    if (code_matches(c, code)) return true;
  for (const PathCodes& pc : per_file_ignores) {
    bool code_hit = false;
    for (const std::string& c : pc.codes) code_hit = code_hit || code_matches(c, code);
    if (code_hit && path_matches(pc.glob, rel)) return true;
  }
  return false;
}

std::string parse_path_codes(std::string_view spec, PathCodes& out) {
  std::size_t colon = spec.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size())
    return "'" + std::string(spec) + "': expected GLOB:CODE[,CODE...]";
  out.glob = std::string(spec.substr(0, colon));
  out.codes.clear();
  std::string_view codes = spec.substr(colon + 1);
  while (!codes.empty()) {
    std::size_t comma = codes.find(',');
    std::string_view c = codes.substr(0, comma);
    if (!c.empty()) out.codes.emplace_back(c);
    if (comma == std::string_view::npos) break;
    codes.remove_prefix(comma + 1);
  }
  if (out.codes.empty()) return "'" + std::string(spec) + "': no rule code after ':'";
  return {};
}

}  // namespace torchport::project
