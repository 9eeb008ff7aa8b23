// Which files and which rules a run covers, as the user configured it (command-line flags, or
// `[tool.torchport]` / torchport.toml resolved into those flags by the Python front end):
//   --exclude GLOB                 files not looked at (still copied, reported as Skip);
//   --ignore CODE                  rule codes (or code prefixes, "TP3") not reported or applied;
//   --per-file-ignores GLOB:CODES  the same for the files a glob matches.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace torchport::project {

struct PathCodes {
  std::string glob;
  std::vector<std::string> codes;
};

struct Selection {
  std::vector<std::string> exclude;
  std::vector<std::string> ignore;
  std::vector<PathCodes> per_file_ignores;

  /// The first exclude pattern matching `rel` ('/'-separated, relative to the input), or "".
  std::string excluded_by(std::string_view rel) const;
  /// True when a finding of `code` in `rel` is not wanted.
  bool ignored(std::string_view rel, std::string_view code) const;
};

/// Glob match of a relative path: `*` and `?` do not cross '/', `**` does; a pattern matches a
/// path when it matches the whole path or one of its leading directories ("build" and
/// "third_party/*" exclude everything below). A pattern without '/' also matches any single
/// component ("__pycache__").
bool path_matches(std::string_view pattern, std::string_view rel);

/// Parses "GLOB:CODE[,CODE...]"; returns "" or why it is malformed.
std::string parse_path_codes(std::string_view spec, PathCodes& out);

}  // namespace torchport::project
