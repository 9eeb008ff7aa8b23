// Conflicts between rules, resolved in one place from what each finding declares.
//
// A rule never removes, reorders or edits another finding. When its fix replaces code another
// rule already rewrote, it says so on its own finding, and check() resolves it here after each
// family (engine.cc):
//   - Finding::drops: the code the fix removes; the findings inside it go, fix included.
//   - Finding::takes: the code the fix takes over (replaces whole, or moves): the findings
//     inside it go, and their edits are applied to the taken code where the fix puts it.
//   - Finding::opens_arguments: after the fix, an argument another finding inserts there is
//     the first of its call: its leading comma goes.
// What a code is about is declared in the registry (RuleInfo::subject, renames_in_place), and
// the order of insertions at one offset on the edits (fix::Edit::order), which the fix applier
// follows. The one file-level policy, incidental changes kept only next to CUDA changes, is
// settle_incidental().
#pragma once

#include <torchport/rules/engine.h>

#include <cstddef>
#include <string_view>
#include <vector>

namespace torchport::rules {

class Context;

/// Resolves the declarations of the findings from `first_new` on (one family's), in the order
/// they were made; each acts on the findings made before it that are still there. `text` is the
/// file's decoded text (for Take::into).
void resolve_family(std::string_view text, std::vector<Finding>& findings, std::size_t first_new);

/// A file that uses nothing CUDA-specific comes out byte-identical for every target: when its
/// only changes are incidental ones (incidental(): the map_location added to torch.load) and
/// findings about the torch version, the incidental ones go, and the file counts as unchanged.
/// check() calls it once, before the first family that declares NeedSettled.
void settle_incidental(Context& ctx);

}  // namespace torchport::rules
