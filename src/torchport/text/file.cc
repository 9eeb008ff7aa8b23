#include <fcntl.h>
#include <sys/stat.h>
#include <torchport/text/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace torchport::text {

bool read_whole_file(const char* path, std::string& out, std::string& error) {
  return read_whole_file_at(AT_FDCWD, path, out, error);
}

bool read_whole_file_at(int dir, const char* path, std::string& out, std::string& error,
                        std::size_t regular_size) {
  const int fd = ::openat(dir, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  // The size the file has now; a file that grows meanwhile (or reports no size: a pipe, /proc)
  // is read on until its end.
  std::size_t want = regular_size;
  bool sized = regular_size > 0;
  if (!sized) {
    struct stat st {};
    const bool measured = ::fstat(fd, &st) == 0;
    want = measured && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0;
    // A regular file that gave exactly the bytes it reported, one short of what was asked, is
    // at its end: no read more to hear it. (A file of /proc or /sys reports 0 or 4096 and is
    // read on.)
    sized = measured && S_ISREG(st.st_mode) && want > 0;
  }
  out.resize(want + 1);  // one byte more: the read that finds the end needs no larger buffer
  std::size_t have = 0;
  for (;;) {
    if (have == out.size()) out.resize(out.size() * 2 + 4096);
    const ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
    if (sized && have == want) break;
  }
  ::close(fd);
  out.resize(have);
  return true;
}

OpenDirectory::OpenDirectory(const char* path)
    : path_(path), fd_(::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) {}

bool OpenDirectory::read(const std::string& rel, std::string& out, std::string& error,
                         std::size_t regular_size) const {
  if (fd_ >= 0) return read_whole_file_at(fd_, rel.c_str(), out, error, regular_size);
  std::string whole = path_;
  if (!whole.empty() && whole.back() != '/') whole += '/';
  whole += rel;
  return read_whole_file_at(AT_FDCWD, whole.c_str(), out, error, regular_size);
}

OpenDirectory::~OpenDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace torchport::text
