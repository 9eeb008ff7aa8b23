// Project files: discovery, atomic writes, and the output tree.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::project {

enum class FileKind : std::uint8_t {
  Python,    ///< *.py, *.pyi: parsed and rewritten
  Notebook,  ///< *.ipynb: its code cells parsed and rewritten (project/notebook.h)
  Scanned,   ///< requirements*.txt, pyproject.toml, setup.cfg, *.sh, C++/CUDA sources: scanned
  Other,     ///< copied unchanged
  Symlink,   ///< recreated as a link, never followed
  Unlisted,  ///< a directory that could not be listed (rel ends in '/'): a Failure row
};

struct ProjectFile {
  std::string path;  ///< absolute (as found under the input)
  std::string rel;   ///< relative to the input root, '/' separators
  FileKind kind = FileKind::Other;
  std::uintmax_t size = 0;  ///< 0 for symlinks, and where !size_known
  /// False for a file discover did not measure, because nothing reads it (Other, and Scanned
  /// files no rule reads): admit_file asks only when --max-file-size needs the size.
  bool size_known = true;
  /// For a Scanned file: the errno of asking whether it can be read (0: it can). Asked during the
  /// walk, relative to its open directory; a Scanned file that no rule reads is only asked this.
  /// For an Unlisted directory: the errno of opening it.
  int read_error = 0;
};

/// The kind of a file from its name.
FileKind classify(std::string_view name);

/// True for a directory name that is not part of a project's sources by default: .git .hg .svn
/// __pycache__ node_modules *.egg-info build dist (default_excluded() also asks for pyvenv.cfg).
bool default_excluded_name(std::string_view name);

/// True for a directory that is not part of a project's sources by default (ruff's convention):
/// .git .hg .svn __pycache__ node_modules *.egg-info build dist, and virtualenvs (a directory
/// holding pyvenv.cfg).
bool default_excluded(const std::filesystem::path& dir);

/// Every file under `input` (a directory, or a single file), sorted by relative path. Symbolic
/// links are listed, not followed. Directories listed in `exclude` (absolute) are skipped; with
/// `default_excludes`, so are the default_excluded() ones, whose relative paths go to `excluded`.
std::vector<ProjectFile> discover(const std::filesystem::path& input,
                                  const std::vector<std::filesystem::path>& exclude = {},
                                  bool default_excludes = false,
                                  std::vector<std::string>* excluded = nullptr);

/// Reads a whole file; false (and `error`) on failure.
bool read_file(const std::filesystem::path& p, std::string& out, std::string& error);

/// Writes `bytes` to `p` atomically: a temporary file in the same directory, then rename. The
/// permissions of `mode_from` (if it exists) are copied. False (and `error`) on failure.
bool write_atomic(const std::filesystem::path& p, const std::string& bytes, std::string& error,
                  const std::filesystem::path& mode_from = {});

/// True when `inner` is `outer` or lies inside it (both resolved through symlinks).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

}  // namespace torchport::project
