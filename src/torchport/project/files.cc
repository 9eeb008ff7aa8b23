#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <torchport/project/files.h>
#include <torchport/rules/engine.h>
#include <torchport/text/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace torchport::project {

namespace fs = std::filesystem;

FileKind classify(std::string_view name) {
  // The name's last component and its extension as std::filesystem::path would split them
  // (".bashrc" has none), without building a path: discover asks this of every entry.
  const std::string_view file = name.substr(name.rfind('/') + 1);
  std::string_view ext;
  if (const std::size_t dot = file.rfind('.');
      dot != std::string_view::npos && dot != 0 && file != "..")
    ext = file.substr(dot);
  if (ext == ".py" || ext == ".pyi") return FileKind::Python;
  if (ext == ".ipynb") return FileKind::Notebook;
  if (file == "pyproject.toml" || file == "setup.cfg" || file == "environment.yml" ||
      file == "environment.yaml" || (file.starts_with("requirements") && ext == ".txt"))
    return FileKind::Scanned;
  static constexpr std::string_view kScanned[] = {".sh", ".bash", ".cpp", ".cc",  ".cxx",
                                                  ".cu", ".cuh",  ".h",   ".hpp", ".c"};
  for (std::string_view e : kScanned)
    if (ext == e) return FileKind::Scanned;
  return FileKind::Other;
}

bool default_excluded_name(std::string_view name) {
  static constexpr std::string_view kNames[] = {".git",         ".hg",   ".svn", "__pycache__",
                                                "node_modules", "build", "dist"};
  for (std::string_view n : kNames)
    if (name == n) return true;
  return name.ends_with(".egg-info");
}

bool default_excluded(const fs::path& dir) {
  if (default_excluded_name(dir.filename().string())) return true;
  std::error_code ec;
  return fs::is_regular_file(dir / "pyvenv.cfg", ec);
}

namespace {

/// A directory open for reading, closed when it goes out of scope.
class Dir {
 public:
  explicit Dir(const char* path) : dir_(::opendir(path)), error_(dir_ ? 0 : errno) {}
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  ~Dir() {
    if (dir_) ::closedir(dir_);
  }
  explicit operator bool() const { return dir_ != nullptr; }
  int fd() const { return ::dirfd(dir_); }
  const dirent* next() { return ::readdir(dir_); }
  int error() const { return error_; }  ///< opendir's errno when it failed

 private:
  DIR* dir_;
  int error_;
};

/// A directory the walk still has to list: its path as the walk names it (the input joined with
/// names) and its path relative to the input ("" for the input itself).
/// `dir`/`name`, as `fs::path(dir) / name` writes it, without building a path (which splits
/// itself into components, one allocation each).
std::string join(const std::string& dir, std::string_view name) {
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out += dir;
  if (!out.empty() && out.back() != '/') out += '/';
  out += name;
  return out;
}

struct Pending {
  fs::path path;
  std::string rel;
};

}  // namespace

std::vector<ProjectFile> discover(const fs::path& input, const std::vector<fs::path>& exclude,
                                  bool default_excludes, std::vector<std::string>* excluded) {
  std::vector<ProjectFile> out;
  std::error_code ec;
  if (!fs::is_directory(input, ec)) {
    std::error_code fec;
    ProjectFile f;
    f.path = input;
    f.rel = input.filename().generic_string();
    if (fs::is_symlink(fs::symlink_status(input, fec))) {
      f.kind = FileKind::Symlink;
    } else {
      f.kind = classify(input.native());
      f.size = fs::file_size(input, fec);
      if (fec) f.size = 0;
      if (f.kind == FileKind::Scanned && ::access(input.c_str(), R_OK) != 0) f.read_error = errno;
    }
    out.push_back(std::move(f));
    return out;
  }
  std::vector<fs::path> excl;
  for (const fs::path& e : exclude) excl.push_back(fs::weakly_canonical(e, ec));
  // The walk follows no link, so a directory it reaches is the input's resolved path joined
  // with its relative path: one resolution, not one per directory.
  std::error_code rec;
  const fs::path root = fs::weakly_canonical(input, rec);
  // Each directory is opened once, by its path; everything asked about the entries in it (a
  // file's size, whether it can be read, a directory's pyvenv.cfg) is asked relative to that
  // open directory, so the kernel looks up one name, not the whole path again. A directory
  // that cannot be listed (no permission, or gone meanwhile) is an Unlisted entry: nothing in
  // it is migrated, and the report says so.
  std::vector<Pending> todo{{input, ""}};
  while (!todo.empty()) {
    Pending d = std::move(todo.back());
    todo.pop_back();
    Dir dir(d.path.c_str());
    if (!dir) {
      ProjectFile f;
      f.path = d.path;
      f.rel = d.rel.empty() ? std::string("./") : d.rel + "/";
      f.kind = FileKind::Unlisted;
      f.read_error = dir.error();
      f.size_known = false;
      out.push_back(std::move(f));
      continue;
    }
    const int dfd = dir.fd();
    if (!d.rel.empty() && default_excludes) {
      // a virtualenv: a directory holding pyvenv.cfg
      struct stat st {};
      if (::fstatat(dfd, "pyvenv.cfg", &st, 0) == 0 && S_ISREG(st.st_mode)) {
        if (excluded) excluded->push_back(d.rel + "/");
        continue;
      }
    }
    const std::string prefix = d.rel.empty() ? std::string() : d.rel + "/";
    while (const dirent* e = dir.next()) {
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {  // a file system whose listing gives no type: ask
        struct stat st {};
        if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        type = S_ISLNK(st.st_mode)   ? DT_LNK
               : S_ISDIR(st.st_mode) ? DT_DIR
               : S_ISREG(st.st_mode) ? DT_REG
                                     : DT_UNKNOWN;
      }
      std::string rel = prefix;
      rel += name;
      if (type == DT_DIR) {
        fs::path sub = d.path / name;
        if (!excl.empty()) {
          std::error_code lec;
          const fs::path resolved = rec ? fs::weakly_canonical(sub, lec) : root / rel;
          if (std::find(excl.begin(), excl.end(), resolved) != excl.end()) continue;
        }
        if (default_excludes && default_excluded_name(name)) {
          if (excluded) excluded->push_back(rel + "/");
          continue;
        }
        todo.push_back({std::move(sub), std::move(rel)});
        continue;
      }
      if (type != DT_REG && type != DT_LNK) continue;  // sockets, fifos, devices
      ProjectFile f;
      f.path = join(d.path.native(), name);
      f.rel = std::move(rel);
      if (type == DT_LNK) {
        f.kind = FileKind::Symlink;
      } else {
        f.kind = classify(name);
        // The size orders the work (largest first) and is checked against --max-file-size.
        // A file that is never read (copied unchanged, or a Scanned file no rule reads) is not
        // measured here: admit_file asks for its size only if --max-file-size is given.
        const bool unread = f.kind == FileKind::Other ||
                            (f.kind == FileKind::Scanned && !rules::other_file_read(f.rel));
        if (!unread) {
          struct stat st {};
          if (::fstatat(dfd, e->d_name, &st, 0) == 0 && st.st_size > 0)
            f.size = static_cast<std::uintmax_t>(st.st_size);
        } else {
          f.size_known = false;
        }
        if (f.kind == FileKind::Scanned && ::faccessat(dfd, e->d_name, R_OK, 0) != 0)
          f.read_error = errno;
      }
      out.push_back(std::move(f));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ProjectFile& a, const ProjectFile& b) { return a.rel < b.rel; });
  if (excluded) std::sort(excluded->begin(), excluded->end());
  return out;
}

bool read_file(const fs::path& p, std::string& out, std::string& error) {
  return text::read_whole_file(p.c_str(), out, error);
}

bool write_atomic(const fs::path& p, const std::string& bytes, std::string& error,
                  const fs::path& mode_from) {
  static std::atomic<unsigned> counter{0};
  fs::path tmp = p;
  tmp += ".torchport-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      error = std::string("cannot write: ") + std::strerror(errno);
      return false;
    }
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      error = "write error";
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  if (!mode_from.empty() && fs::exists(mode_from, ec))
    fs::permissions(tmp, fs::status(mode_from, ec).permissions(), ec);
  fs::rename(tmp, p, ec);
  if (ec) {
    error = "cannot rename into place: " + ec.message();
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  fs::path a = fs::weakly_canonical(fs::absolute(inner), ec);
  fs::path b = fs::weakly_canonical(fs::absolute(outer), ec);
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (bi->empty()) continue;  // trailing separator
    if (ai == a.end() || *ai != *bi) return false;
  }
  return true;
}

}  // namespace torchport::project
