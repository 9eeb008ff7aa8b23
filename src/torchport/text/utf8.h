// Well-formed UTF-8: a check and a printable rendering of byte strings that are not, such as
// file names on a POSIX file system (any bytes but '/' and NUL).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace torchport::text {

/// True if `s` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view s);

/// `s` with every byte that is not part of a well-formed UTF-8 sequence written as `\xNN`
/// (lower-case hex) and every backslash kept as it is; `s` itself when it is valid.
std::string printable_utf8(std::string_view s);

/// Appends code point `cp` (at most U+10FFFF) to `out` as UTF-8.
void append_utf8(std::string& out, std::uint32_t cp);

}  // namespace torchport::text
