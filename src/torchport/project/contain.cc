#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <torchport/project/contain.h>
#include <torchport/project/driver.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

namespace torchport::project {

namespace {

thread_local const char* current_file = nullptr;
int crash_fd = -1;  // the child's end of the pipe; -1 outside a contained child

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "a fatal signal";
  }
}

// Async-signal-safe: write(2) of strings that already exist.
void write_all(int fd, const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(fd, s, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return;
    }
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_fatal_signal(int sig) {
  const char* file = current_file;
  const char* name = signal_name(sig);
  if (file != nullptr) {
    write_all(STDERR_FILENO, "torchport: ");
    write_all(STDERR_FILENO, file);
    write_all(STDERR_FILENO, ": fatal error (");
    write_all(STDERR_FILENO, name);
    write_all(STDERR_FILENO, ") in torchport while working on this file\n");
    if (crash_fd >= 0) {
      write_all(crash_fd, "crash\t");
      write_all(crash_fd, name);
      write_all(crash_fd, "\t");
      write_all(crash_fd, file);
      write_all(crash_fd, "\n");
    }
  } else {
    write_all(STDERR_FILENO, "torchport: fatal error (");
    write_all(STDERR_FILENO, name);
    write_all(STDERR_FILENO, ") in torchport outside any file's work\n");
  }
  // SA_RESETHAND restored the default action: die of the same signal.
  ::raise(sig);
}

void install_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK | SA_NODEFER;
  for (int sig : kFatalSignals) ::sigaction(sig, &sa, nullptr);
}

struct Attempt {
  int status = 0;
  std::vector<CrashedFile> crashes;
  std::vector<std::filesystem::path> scratch;
};

Attempt read_attempt(int fd, pid_t pid) {
  Attempt a;
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  while (::waitpid(pid, &a.status, 0) < 0 && errno == EINTR) {
  }
  std::istringstream lines(data);
  for (std::string line; std::getline(lines, line);) {
    std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    const std::string kind = line.substr(0, tab), rest = line.substr(tab + 1);
    if (kind == "scratch") {
      a.scratch.emplace_back(rest);
    } else if (kind == "crash") {
      std::size_t tab2 = rest.find('\t');
      if (tab2 != std::string::npos)
        a.crashes.push_back({rest.substr(tab2 + 1), rest.substr(0, tab2)});
    }
  }
  return a;
}

}  // namespace

CurrentFile::CurrentFile(const std::string& rel) noexcept : previous_(current_file) {
  current_file = rel.c_str();
}

CurrentFile::~CurrentFile() { current_file = previous_; }

void note_scratch_dir(const std::filesystem::path& dir) {
  if (crash_fd < 0) return;
  const std::string line = "scratch\t" + std::filesystem::absolute(dir).string() + "\n";
  write_all(crash_fd, line.c_str());
}

int run_contained(const std::string& who,
                  const std::function<int(const std::vector<CrashedFile>&)>& body) {
  std::vector<CrashedFile> crashed;
  for (;;) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) return body(crashed);
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return body(crashed);
    }
    if (pid == 0) {
      // The child dies with its parent (a `timeout` or a CI runner that stops the command stops
      // the work too), and not a moment later if the parent is already gone.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kExitInternal);
      ::close(fds[0]);
      crash_fd = fds[1];
      install_handler();
      int rc = kExitInternal;
      try {
        rc = body(crashed);
      } catch (const std::exception& e) {
        std::cerr << who << ": internal error: " << e.what() << " (please report it)\n";
      }
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      ::_exit(rc);
    }
    ::close(fds[1]);
    Attempt a = read_attempt(fds[0], pid);
    if (WIFEXITED(a.status)) return WEXITSTATUS(a.status);
    std::error_code ec;
    for (const std::filesystem::path& d : a.scratch) std::filesystem::remove_all(d, ec);
    const int sig = WIFSIGNALED(a.status) ? WTERMSIG(a.status) : 0;
    // A closed pipe (`torchport analyze ... | head`) ends the run as it would end any program.
    if (sig == SIGPIPE) return 128 + sig;
    bool fatal = false;
    for (int s : kFatalSignals) fatal = fatal || s == sig;
    if (!fatal || a.crashes.empty()) {
      // Killed from outside (SIGKILL, SIGTERM: the out-of-memory killer, the user), or a crash
      // outside any file's work: nothing to set aside.
      std::cerr << who << ": error: the run died of " << (sig ? strsignal(sig) : "an unknown cause")
                << (fatal ? " outside any file's work (a bug in torchport: please report it)" : "")
                << "\n";
      return fatal ? kExitInternal : 128 + sig;
    }
    const CrashedFile& c = a.crashes.front();
    crashed.push_back(c);
    if (static_cast<int>(crashed.size()) > kMaxCrashes) {
      std::cerr << who << ": error: " << crashed.size()
                << " files crashed torchport; giving up (a bug in torchport: please report it)\n";
      return kExitInternal;
    }
    std::cerr << who << ": " << c.rel << ": set aside after a crash (" << c.signal
              << "); running again without it\n";
  }
}

}  // namespace torchport::project
