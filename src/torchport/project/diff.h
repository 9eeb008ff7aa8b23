// A unified diff of one rewritten file, built from the applied edits (no text matching needed:
// the edits say exactly which lines changed).
#pragma once

#include <torchport/fix/apply.h>

#include <string>
#include <string_view>
#include <vector>

namespace torchport::project {

/// `--- a/<rel>` / `+++ b/<rel>` and one hunk per group of changed lines, with `context` lines
/// around each; "" when `edits` is empty. `edits` are the applied edits of fix::apply_fixes on
/// `before`.
std::string unified_diff(std::string_view rel, std::string_view before, std::string_view after,
                         const std::vector<fix::AppliedEdit>& edits, unsigned context = 3);

}  // namespace torchport::project
