// Machine-readable findings for code-scanning tools and CI logs:
//   - SARIF 2.1.0 (OASIS), the format GitHub code scanning and IDE viewers read;
//   - GitHub Actions workflow commands (`::warning file=F,line=L,col=C,title=T::message`).
// Both give every finding a level: UNSUPPORTED is an error (it will not work on the target),
// UNKNOWN a warning (no list confirms it), INSERT/MODIFY/DELETE a note (`migrate` rewrites it).
// A file that could not be read or parsed is an error too.
#pragma once

#include <torchport/report/report.h>

#include <string>
#include <string_view>

namespace torchport::report {

/// "error", "warning" or "note" (SARIF's level names).
std::string_view level(rules::Operation op);

/// The whole report as one SARIF 2.1.0 log (one run). File URIs are relative to the input
/// root, which is given as the SRCROOT base.
std::string sarif_json(const Report& r);

/// One GitHub workflow command per finding and per failed file, paths as given by
/// `path_prefix` + the report's relative path.
std::string github_annotations(const Report& r, std::string_view path_prefix = {});

}  // namespace torchport::report
