// Phase 9 of the driver for a Python file, the self-check: the output of a file must parse
// (else the original is kept, and the file is a Failure). When the rules edited a few
// module-level statements of a large file, parsing those statements on their own proves it,
// without parsing the whole output again.
//
// Why it is sound: a module-level statement begins at the start of a line where the tokenizer
// has nothing open (no bracket, string, continuation or indented block). The output is the
// original's untouched statements, unchanged, with the edited runs of statements between them.
// If each edited run parses on its own and ends on a line break, the tokenizer reaches the next
// untouched statement in the same clean state as in the original, which parsed. Anything else
// (a run that does not parse, or whose last line break was edited away) proves nothing, and the
// caller parses the whole output.
#pragma once

#include <torchport/fix/apply.h>
#include <torchport/project/output_pass.h>
#include <torchport/syntax/tree.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::project {

/// The offsets of the line starts where `tree`'s module-level statements begin (decorators
/// included), ascending, without duplicates (`a = 1; b = 2` is one line).
std::vector<std::uint32_t> statement_cuts(const syntax::Tree& tree);

/// True when every run of module-level statements of `original` that `edits` (sorted by begin,
/// in `original`'s offsets, as fix::apply_fixes returns them) touched parses on its own in
/// `after` (the edited text) and ends on a line break. False means "not proven": parse `after`.
bool edited_statements_parse(const std::string& rel, std::string_view original,
                             std::string_view after, const std::vector<std::uint32_t>& cuts,
                             const std::vector<fix::AppliedEdit>& edits);

/// The self-check phase. Input: the file with every pass's fixes. Output, in `w`: the new bytes
/// (encoded as the original was) and the diff, or the Failure that keeps the original.
void self_check(const ProjectFile& f, OutputPassed passed, const FileContext& ctx, FileWork& w);

}  // namespace torchport::project
