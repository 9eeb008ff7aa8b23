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
  /// Among insertions at one offset, lower first (then in the order the fixes were taken): a
  /// rule declares it where its insertion must come before (a local variable the others use)
  /// or after (the statements of a --rules file, after the imports torchport inserts) the rest.
  std::int8_t order = 0;
};

enum class Applicability : std::uint8_t {
  Safe,         ///< applied by migrate
  Unsafe,       ///< applied only when asked (it may change behaviour)
  DisplayOnly,  ///< shown in reports, never applied
};

/// The highest applicability `migrate` applies unless told otherwise: the one default of the
/// command line (--unsafe-fixes / --no-unsafe-fixes) and of the library (project::Options::fixes).
/// Unsafe, unlike ruff, which applies only Safe fixes by default: the output of a migration must
/// run on the target, where the original's CUDA calls fail, and the fixes that change behaviour
/// (a value replaced by a constant, device_ids dropped, an autocast dtype pinned) are what make
/// it run or keep its numerics. Each is labelled in the reports; --no-unsafe-fixes leaves them
/// out. Display-only fixes are never applied. docs/cli.md says the same.
inline constexpr Applicability kDefaultApplied = Applicability::Unsafe;

struct Fix {
  std::vector<Edit> edits;
  Applicability applicability = Applicability::Safe;
};

}  // namespace torchport::fix
