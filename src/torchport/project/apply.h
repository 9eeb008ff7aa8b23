// Phases 6 and 7 of the driver for one file, resolve the conflicts and apply the fixes: the
// findings' fixes go to fix::apply_fixes, the one place where conflicts are resolved (taken by
// offset, a fix whole or not at all, overlaps and fixes above the allowed applicability left
// out), and each finding becomes one located report row that says what became of its fix.
#pragma once

#include <torchport/fix/apply.h>
#include <torchport/project/run_rules.h>

#include <string>
#include <string_view>
#include <vector>

namespace torchport::project {

/// Where the rows of a set of findings are: their ranges are offsets of the text the fixes
/// apply to, shown as lines and columns of the original.
struct Locate {
  const text::LineIndex* lines = nullptr;  ///< of the original (nullptr: made from the text)
  /// The findings are on the output of these edits (the output pass): their offsets are mapped
  /// back to the original first.
  const std::vector<fix::AppliedEdit>* earlier = nullptr;
  /// The findings describe a file torchport generates: it is their change (a row is applied).
  bool generated = false;
};

/// Output of apply_findings: the new text, or nullopt when it is `text` unchanged (no fix, none
/// applied, or edits that give the same text: no copy of the file is made), and the edits
/// applied, sorted.
struct Applied {
  std::optional<std::string> text;
  std::vector<fix::AppliedEdit> edits;
};

/// Input: findings on `text`, spent by the call (their fixes and strings are moved out: on a
/// file with a finding on every line they are a large part of its memory). The rows are appended to
/// `w.rows`; fixes are left out when analyzing, and above Options::fixes.
Applied apply_findings(const std::string& rel, std::string_view text,
                       std::vector<rules::Finding>& findings, const Options& opts, FileWork& w,
                       const Locate& where = {});

/// Output of apply_fixes: the Python file and its text with the first pass's fixes.
struct Fixed {
  PythonText file;
  std::optional<std::string> after;       ///< nullopt: file.text unchanged
  std::vector<fix::AppliedEdit> applied;  ///< on file.text
};

/// Input: the checked Python file.
Fixed apply_fixes(const ProjectFile& f, Checked checked, const Options& opts, FileWork& w);

}  // namespace torchport::project
