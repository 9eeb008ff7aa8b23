// Fixes are plain data: an Edit replaces a byte range of the decoded text; a Fix groups the
// edits of one change with how safe it is to apply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchport::fix {

struct Edit {
  std::uint32_t begin = 0;  ///< byte offset into the decoded UTF-8 text
  std::uint32_t end = 0;    ///< one past the last replaced byte; begin == end inserts
  std::string replacement;
};

enum class Applicability : std::uint8_t {
  Safe,         ///< applied by migrate
  Unsafe,       ///< applied only when asked (it may change behaviour)
  DisplayOnly,  ///< shown in reports, never applied
};

struct Fix {
  std::vector<Edit> edits;
  Applicability applicability = Applicability::Safe;
};

}  // namespace torchport::fix
