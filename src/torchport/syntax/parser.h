// The Python parser: Python 3.8-3.14 source to a lossless syntax tree (tree.h).
//
// Accepts exactly what CPython's ast.parse accepts (of the newest grammar) and reports the first
// syntax error as CPython does, as a diagnostic, never by throwing. Python 2 code is recognised
// and the error says so.
#pragma once

#include <torchport/syntax/tree.h>
#include <torchport/text/source.h>

#include <string>

namespace torchport::syntax {

/// Tokenizes and parses a decoded source file.
Tree parse(text::SourceFile source);

/// Convenience for tests and tools: parses UTF-8 `text` named `path`.
Tree parse(std::string path, std::string text);

}  // namespace torchport::syntax
