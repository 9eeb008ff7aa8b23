// A located error or warning. Errors are values: layers collect them, they never throw.
#pragma once

#include <cstdint>
#include <string>

namespace torchport::text {

enum class Severity : std::uint8_t { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  std::uint32_t offset = 0;  ///< byte offset into the decoded UTF-8 text
  std::string message;       ///< lower-case, no trailing period: "unterminated string literal"
};

}  // namespace torchport::text
