#include <fcntl.h>
#include <sys/stat.h>
#include <torchport/text/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace torchport::text {

bool read_whole_file(const char* path, std::string& out, std::string& error) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  struct stat st {};
  // The size the file has now; a file that grows meanwhile (or reports no size: a pipe, /proc)
  // is read on until its end.
  const std::size_t want =
      ::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) : 0;
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
  }
  ::close(fd);
  out.resize(have);
  return true;
}

}  // namespace torchport::text
