// Applying fixes: sort, skip overlaps deterministically, rebuild the text from slices.
#pragma once

#include <torchport/fix/edit.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::fix {

enum class FixOutcome : std::uint8_t {
  Applied,
  Overlap,        ///< an edit overlaps an edit of a fix applied before it: the whole fix is skipped
  Duplicate,      ///< every edit equals one already applied (two rules made the same change)
  NotApplicable,  ///< applicability above the allowed level (unsafe / display-only)
  Invalid,        ///< an edit range is reversed or beyond the end of the text
};

struct AppliedEdit {
  Edit edit;
  std::size_t fix;  ///< index of the fix it came from
};

struct ApplyResult {
  std::string text;
  std::vector<FixOutcome> outcomes;  ///< one per input fix, in input order
  std::vector<AppliedEdit> edits;    ///< the edits applied, sorted by position
  std::size_t applied() const;
};

/// Applies the fixes whose applicability is at most `allowed` (Safe < Unsafe < DisplayOnly).
///
/// Fixes are taken in order of their first edit's offset (ties: input order). A fix is applied
/// whole or not at all: if any of its edits overlaps an edit already accepted, it is skipped.
/// Two edits overlap when their byte ranges intersect; an insertion (begin == end) overlaps a
/// replacement only strictly inside it. Several insertions at one offset keep their order.
/// The text is rebuilt from slices of the original, so bytes outside the edits never change.
ApplyResult apply_fixes(std::string_view text, const std::vector<Fix>& fixes,
                  Applicability allowed = Applicability::Safe);

}  // namespace torchport::fix
