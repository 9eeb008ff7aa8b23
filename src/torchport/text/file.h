// Reading a whole file into memory: one open, one fstat and as few read calls as the file has
// bytes for, straight into the string that keeps them (no stream buffers in between).
#pragma once

#include <cstddef>
#include <string>

namespace torchport::text {

/// Reads the whole file at `path` into `out`; false (and `error`: strerror's text, "No such
/// file or directory") on failure, `out` then unspecified.
bool read_whole_file(const char* path, std::string& out, std::string& error);
/// The same with a relative `path` walked from the open directory `dir` (openat(2); AT_FDCWD for
/// the working directory). An absolute `path` ignores `dir`. `regular_size`, when not 0, is the
/// size a walk of the directory measured of this regular file: it is not asked again (a file
/// that changed since is still read to its end).
bool read_whole_file_at(int dir, const char* path, std::string& out, std::string& error,
                        std::size_t regular_size = 0);

/// A directory held open, for read_whole_file_at: a file under it is then opened by its path
/// relative to it, and the kernel looks up only that part. (Each of the 2,285 files of torch's
/// tree is under 10 more directories, looked up again by each of a run's two reads.)
class OpenDirectory {
 public:
  explicit OpenDirectory(const char* path);
  ~OpenDirectory();
  OpenDirectory(const OpenDirectory&) = delete;
  OpenDirectory& operator=(const OpenDirectory&) = delete;
  /// Its descriptor; -1 when it could not be opened (not a directory, gone, not searchable).
  int fd() const { return fd_; }
  /// read_whole_file of `rel`, a relative path under the directory: from its descriptor, or by
  /// the directory's path joined with `rel` when it could not be opened.
  bool read(const std::string& rel, std::string& out, std::string& error,
            std::size_t regular_size = 0) const;

 private:
  std::string path_;
  int fd_;
};

}  // namespace torchport::text
