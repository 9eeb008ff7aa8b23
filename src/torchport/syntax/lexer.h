// The lossless Python lexer: Python 3.8-3.14 lexical grammar, including PEP 701 f-strings and
// PEP 750 t-strings. Tokens tile the text: every byte is in exactly one token.
#pragma once

#include <torchport/syntax/token.h>
#include <torchport/text/diagnostic.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace torchport::syntax {

struct LexResult {
  std::vector<Token> tokens;                  ///< ends with EndMarker; tiles the text
  std::vector<text::Diagnostic> diagnostics;  ///< lexical errors (the tokens are still complete)
  /// 0, then the offset one past each line break (LF, CRLF or a lone CR), ascending: what
  /// text::LineIndex(text) finds, found as the line breaks are lexed.
  std::vector<std::uint32_t> line_starts;
};

/// Tokenizes UTF-8 text (a text::SourceFile's `text`). Never fails: bad input becomes Error
/// tokens plus diagnostics.
LexResult tokenize(std::string_view text);

}  // namespace torchport::syntax
