// Applying fixes: sort, skip overlaps deterministically, rebuild the text from slices.
#pragma once

#include <torchport/fix/edit.h>

#include <cstddef>
#include <cstdint>
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

/// Applies the fixes whose applicability is at most `allowed` (Safe < Unsafe < DisplayOnly);
/// by default kDefaultApplied, the one default of migrate (edit.h). DisplayOnly fixes are never
/// applied unless `allowed` is DisplayOnly (a preview of what they would do).
///
/// Fixes are taken in order of their first edit's offset (ties: input order). A fix is applied
/// whole or not at all: if any of its edits overlaps an edit already accepted, it is skipped.
/// Two edits overlap when their byte ranges intersect; an insertion (begin == end) overlaps a
/// replacement only strictly inside it. Several insertions at one offset go in their declared
/// order (Edit::order), ties in the order their fixes were taken.
/// The text is rebuilt from slices of the original, so bytes outside the edits never change.
ApplyResult apply_fixes(std::string_view text, const std::vector<Fix>& fixes,
                        Applicability allowed = kDefaultApplied);

// Two passes of edits (the driver's second pass runs on the first pass's output).

/// An offset of the edited text mapped back to the original: an offset inside a replacement
/// maps to the replaced range's begin (with `high`, its end). `edits` as ApplyResult::edits.
std::uint32_t to_original(std::uint32_t offset, const std::vector<AppliedEdit>& edits,
                          bool high = false);
/// Where an original offset that no edit covers lands in the edited text.
std::uint32_t to_edited(std::uint32_t offset, const std::vector<AppliedEdit>& edits);
/// The edits of two passes as one list on the original text: the regions either pass touched,
/// each replaced by what `final_text` (the second pass's output) has there.
std::vector<AppliedEdit> compose(const std::vector<AppliedEdit>& first,
                                 const std::vector<AppliedEdit>& second,
                                 std::string_view final_text);

}  // namespace torchport::fix
