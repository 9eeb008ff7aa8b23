// Phase 8 of the driver for a Python file, the output pass: the rules that read the output of
// the first pass's fixes (rules::check_output; TP310 ports the command line's device flags as
// one unit) run on that output, and their fixes are applied to it. Their rows are located in the
// original; their edits join the first pass's (for the diff and the self-check).
#pragma once

#include <torchport/project/apply.h>
#include <torchport/syntax/tree.h>

#include <optional>

namespace torchport::project {

/// Output of output_pass: the file with both passes' fixes.
struct OutputPassed {
  PythonText file;
  std::optional<std::string> after;       ///< nullopt: file.text unchanged
  std::vector<fix::AppliedEdit> applied;  ///< both passes' edits, composed, on file.text
  std::optional<syntax::Tree> tree;       ///< the parse of `after`, when the pass made it (reused)
  bool ran = false;                       ///< the pass looked at the text
};

/// Input: the file with the first pass's fixes. Passes it on unchanged when the pass has
/// nothing to look for (PythonText::output_pass).
OutputPassed output_pass(const ProjectFile& f, Fixed fixed, const FileContext& ctx, FileWork& w);

}  // namespace torchport::project
