#include <torchport/project/files.h>
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

FileKind classify(const fs::path& name) {
  std::string file = name.filename().string();
  std::string ext = name.extension().string();
  if (ext == ".py" || ext == ".pyi") return FileKind::Python;
  if (ext == ".ipynb") return FileKind::Notebook;
  if (file == "pyproject.toml" || file == "setup.cfg" || file == "environment.yml" ||
      file == "environment.yaml" || (file.rfind("requirements", 0) == 0 && ext == ".txt"))
    return FileKind::Scanned;
  static const char* const kScanned[] = {".sh", ".bash", ".cpp", ".cc",  ".cxx",
                                         ".cu", ".cuh",  ".h",   ".hpp", ".c"};
  for (const char* e : kScanned)
    if (ext == e) return FileKind::Scanned;
  return FileKind::Other;
}

bool default_excluded(const fs::path& dir) {
  static const char* const kNames[] = {".git",         ".hg",   ".svn", "__pycache__",
                                       "node_modules", "build", "dist"};
  std::string name = dir.filename().string();
  for (const char* n : kNames)
    if (name == n) return true;
  if (name.ends_with(".egg-info")) return true;
  std::error_code ec;
  return fs::is_regular_file(dir / "pyvenv.cfg", ec);
}

namespace {

/// `p` relative to `input`, for a path the walk made by joining `input` with names: the rest
/// of its text after `input` and one '/' (lexically_relative splits both paths into elements,
/// some 4,000 instructions a file). Where `input` ends with a separator, lexically_relative.
std::string relative_to(const fs::path& p, const fs::path& input) {
  const std::string& s = p.native();
  const std::string& in = input.native();
  const std::size_t n = in.size();
  if (n > 0 && in.back() != '/' && s.size() > n + 1 && s.compare(0, n, in) == 0 && s[n] == '/' &&
      s[n + 1] != '/')
    return s.substr(n + 1);
  return p.lexically_relative(input).generic_string();
}

}  // namespace

std::vector<ProjectFile> discover(const fs::path& input, const std::vector<fs::path>& exclude,
                                  bool default_excludes, std::vector<std::string>* excluded) {
  std::vector<ProjectFile> out;
  std::error_code ec;
  // `link`: whether `p` is a symbolic link (the walk's entry knows it without a system call).
  auto add = [&](const fs::path& p, const std::string& rel, bool link) {
    ProjectFile f;
    f.path = p;
    f.rel = rel;
    std::error_code fec;  // not the walk's: a file's error must not end the walk
    if (link) {
      f.kind = FileKind::Symlink;
    } else {
      f.kind = classify(p);
      f.size = fs::file_size(p, fec);
      if (fec) f.size = 0;
    }
    out.push_back(std::move(f));
  };
  if (!fs::is_directory(input, ec)) {
    std::error_code fec;
    add(input, input.filename().generic_string(), fs::is_symlink(fs::symlink_status(input, fec)));
    return out;
  }
  std::vector<fs::path> excl;
  for (const fs::path& e : exclude) excl.push_back(fs::weakly_canonical(e, ec));
  // The walk follows no link, so a directory it reaches is the input's resolved path joined
  // with its relative path: one resolution, not one per directory (a readlink per component).
  std::error_code rec;
  const fs::path root = fs::weakly_canonical(input, rec);
  auto resolved = [&](const fs::directory_entry& entry, std::error_code& lec) {
    if (rec) return fs::weakly_canonical(entry.path(), lec);
    return root / entry.path().lexically_relative(input);
  };
  fs::recursive_directory_iterator it(input, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::error_code lec;  // an entry's own error must not end the walk
    // The entry's type as the directory listing gave it (no system call); a symbolic link is
    // never followed. Where the listing gives no type, the entry asks (lstat, then stat).
    const bool link = entry.is_symlink(lec);
    const fs::file_type type = link                         ? fs::file_type::symlink
                               : entry.is_directory(lec)    ? fs::file_type::directory
                               : entry.is_regular_file(lec) ? fs::file_type::regular
                                                            : fs::file_type::unknown;
    if (type == fs::file_type::directory) {
      if (!excl.empty() &&
          std::find(excl.begin(), excl.end(), resolved(entry, lec)) != excl.end()) {
        it.disable_recursion_pending();
      } else if (default_excludes && default_excluded(entry.path())) {
        it.disable_recursion_pending();
        if (excluded) excluded->push_back(relative_to(entry.path(), input) + "/");
      }
      continue;
    }
    if (type == fs::file_type::unknown) continue;  // sockets, fifos, devices
    add(entry.path(), relative_to(entry.path(), input), link);
  }
  std::sort(out.begin(), out.end(),
            [](const ProjectFile& a, const ProjectFile& b) { return a.rel < b.rel; });
  if (excluded) std::sort(excluded->begin(), excluded->end());
  return out;
}

bool read_file(const fs::path& p, std::string& out, std::string& error) {
  return text::read_whole_file(p.c_str(), out, error);
}

bool readable(const fs::path& p, std::string& error) {
  if (::access(p.c_str(), R_OK) == 0) return true;
  error = std::strerror(errno);
  return false;
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
