// The lossless Python lexer: Python 3.8-3.14 lexical grammar, including PEP 701 f-strings and
// PEP 750 t-strings. Tokens tile the text: every byte is in exactly one token.
#pragma once

#include <torchport/syntax/token.h>
#include <torchport/text/diagnostic.h>

#include <string_view>
#include <vector>

namespace torchport::syntax {

struct LexResult {
  std::vector<Token> tokens;                  ///< ends with EndMarker; tiles the text
  std::vector<text::Diagnostic> diagnostics;  ///< lexical errors (the tokens are still complete)
};

/// Tokenizes UTF-8 text (a text::SourceFile's `text`). Never fails: bad input becomes Error
/// tokens plus diagnostics.
LexResult tokenize(std::string_view text);

}  // namespace torchport::syntax
