// Containing what cannot be caught: a fatal signal inside one file's work.
//
// An exception, a depth limit or an allocation failure inside one file's work is caught by the
// driver and the file becomes a Failure row. A fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
// SIGABRT: a bug in torchport) cannot be caught that way, so `analyze` and `migrate` run their
// work in a child process (run_contained): the child marks which file each thread works on
// (CurrentFile), and its signal handler writes that file's name to stderr and to a pipe before
// the child dies. The parent removes the child's scratch output, then runs the work again with
// that file set aside (Options::crashed: a Failure row, exit code 3), at most kMaxCrashes times.
// A crash outside any file's work is reported as such, with exit code 4 (docs/cli.md).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace torchport::project {

/// A file whose work killed an earlier attempt of the run.
struct CrashedFile {
  std::string rel;     ///< the file, as the driver names it (relative to the input)
  std::string signal;  ///< "SIGSEGV", ...
};

/// How many files may crash the run before it gives up (each costs one more attempt).
inline constexpr int kMaxCrashes = 8;

/// While alive, names the file this thread works on for the fatal-signal handler. `rel` must
/// outlive it. Costs a thread-local store.
class CurrentFile {
 public:
  explicit CurrentFile(const std::string& rel) noexcept;
  ~CurrentFile();
  CurrentFile(const CurrentFile&) = delete;
  CurrentFile& operator=(const CurrentFile&) = delete;

 private:
  const char* previous_;
};

/// Tells the parent of a contained run about a directory to remove if this attempt dies (the
/// output tree being built). A no-op outside run_contained.
void note_scratch_dir(const std::filesystem::path& dir);

/// Runs `body` in a child process (stdout and stderr shared), as described above, and returns
/// its exit code; `body` gets the files that crashed earlier attempts. `who` prefixes the
/// messages ("torchport migrate"). Where fork() is not possible, `body` runs in this process.
int run_contained(const std::string& who,
                  const std::function<int(const std::vector<CrashedFile>&)>& body);

}  // namespace torchport::project
