#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torchport/project/driver.h>
#include <torchport/project/files.h>
#include <torchport/project/select.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <functional>
#include <map>

namespace torchport::project {
namespace {

namespace fs = std::filesystem;

TEST(Files, ClassifyByName) {
  EXPECT_EQ(classify("a/train.py"), FileKind::Python);
  EXPECT_EQ(classify("stubs.pyi"), FileKind::Python);
  EXPECT_EQ(classify("demo/my notebook.ipynb"), FileKind::Notebook);
  EXPECT_EQ(classify("requirements-dev.txt"), FileKind::Scanned);
  EXPECT_EQ(classify("pyproject.toml"), FileKind::Scanned);
  EXPECT_EQ(classify("run.sh"), FileKind::Scanned);
  EXPECT_EQ(classify("csrc/kernel.cu"), FileKind::Scanned);
  EXPECT_EQ(classify("notes.txt"), FileKind::Other);
  EXPECT_EQ(classify("model.pt"), FileKind::Other);
}

TEST(Files, ClassifySplitsANameAsFilesystemPathDoes) {
  // classify reads the last component and its extension from the string; std::filesystem::path
  // is the oracle for the split (a leading dot is not an extension, ".." has none).
  const char* const names[] = {".py",
                               ".h",
                               "a/.py",
                               "..",
                               ".",
                               "x/..",
                               "a.b/c",
                               "a.b/c.py",
                               "c.py/",
                               "..py",
                               "a..py",
                               "a.",
                               "dir.py/x",
                               "/abs/k.cu",
                               "requirements.txt",
                               "x/requirements_gpu.txt",
                               ".hidden.sh",
                               "a.tar.py",
                               "py",
                               "setup.cfg/",
                               "docs/setup.cfg"};
  for (const char* n : names) {
    const fs::path p(n);
    const std::string file = p.filename().string(), ext = p.extension().string();
    FileKind want = FileKind::Other;
    if (ext == ".py" || ext == ".pyi") {
      want = FileKind::Python;
    } else if (file == "setup.cfg" || (file.rfind("requirements", 0) == 0 && ext == ".txt") ||
               ext == ".h" || ext == ".cu" || ext == ".sh") {
      want = FileKind::Scanned;
    }
    EXPECT_EQ(classify(n), want) << n;
  }
}

TEST(Files, IsWithinComparesWholePathComponents) {
  fs::path base = fs::temp_directory_path() / ("tp_files_" + std::to_string(::getpid()));
  fs::create_directories(base / "proj" / "sub");
  fs::create_directories(base / "proj2");
  EXPECT_TRUE(is_within(base / "proj" / "sub", base / "proj"));
  EXPECT_TRUE(is_within(base / "proj", base / "proj"));
  EXPECT_TRUE(is_within(base / "proj" / "not-yet" / "x", base / "proj"));
  EXPECT_FALSE(is_within(base / "proj2", base / "proj")) << "a prefix of the name is not inside";
  EXPECT_FALSE(is_within(base, base / "proj"));
  EXPECT_TRUE(is_within(base / "proj" / "sub" / ".." / "sub", base / "proj"));
  fs::remove_all(base);
}

TEST(Files, DiscoverIsSortedSkipsExcludedDirsAndListsSymlinks) {
  fs::path base = fs::temp_directory_path() / ("tp_discover_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "b");
  fs::create_directories(base / "skip");
  std::ofstream(base / "b" / "z.py") << "x = 1\n";
  std::ofstream(base / "a.txt") << "a";
  std::ofstream(base / "skip" / "s.py") << "";
  fs::create_symlink(base / "a.txt", base / "link.txt");
  auto files = discover(base, {base / "skip"});
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].rel, "a.txt");
  EXPECT_EQ(files[1].rel, "b/z.py");
  EXPECT_EQ(files[1].kind, FileKind::Python);
  EXPECT_EQ(files[1].size, 6u);
  EXPECT_EQ(files[2].rel, "link.txt");
  EXPECT_EQ(files[2].kind, FileKind::Symlink);
  fs::remove_all(base);
}

TEST(Files, DiscoverMeasuresOnlyTheFilesThatAreRead) {
  // Python files and Scanned files a rule reads are measured (the work is ordered by size);
  // a file copied unchanged and a header no rule reads are not, and admit_file measures them
  // only for --max-file-size. Whether a Scanned file can be read is asked for every one.
  fs::path base = fs::temp_directory_path() / ("tp_discover_size_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "csrc");
  std::ofstream(base / "m.py") << "x = 1\n";
  std::ofstream(base / "requirements.txt") << "torch\n";
  std::ofstream(base / "csrc" / "k.h") << "#pragma once\n";
  std::ofstream(base / "csrc" / "k.cu") << "int x;\n";
  std::ofstream(base / "data.bin") << "0123456789";
  std::map<std::string, ProjectFile> by_rel;
  for (ProjectFile& f : discover(base)) by_rel[f.rel] = f;
  ASSERT_EQ(by_rel.size(), 5u);
  EXPECT_TRUE(by_rel["m.py"].size_known);
  EXPECT_EQ(by_rel["m.py"].size, 6u);
  EXPECT_TRUE(by_rel["requirements.txt"].size_known);
  EXPECT_EQ(by_rel["requirements.txt"].size, 6u);
  EXPECT_TRUE(by_rel["csrc/k.cu"].size_known) << "a CUDA source is read (TP901)";
  EXPECT_EQ(by_rel["csrc/k.cu"].size, 7u);
  EXPECT_FALSE(by_rel["csrc/k.h"].size_known);
  EXPECT_FALSE(by_rel["data.bin"].size_known);
  for (const auto& [rel, f] : by_rel) EXPECT_EQ(f.read_error, 0) << rel;
  // A single file given as the input is measured as before.
  const auto one = discover(base / "csrc" / "k.h");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].size_known);
  EXPECT_EQ(one[0].size, 13u);
  fs::remove_all(base);
}

/// A directory for a test whose files lose their permissions: as root under /tmp, since the
/// nobody user must be able to walk down to it (TMPDIR may be private).
fs::path permission_test_dir(const std::string& name) {
  const fs::path tmp = ::geteuid() == 0 ? fs::path("/tmp") : fs::temp_directory_path();
  fs::path base = tmp / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  fs::permissions(base, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  return base;
}

/// Runs `check` in a child process, which first gives up root for the nobody user (root reads
/// whatever the mode), and gives its exit status: 0 for a pass. Exit 3 means that this root
/// cannot change its user (a container without CAP_SETUID): the caller skips.
int exit_status_as_nobody(const std::function<int()>& check) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    ::_exit(check());
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(Files, AFileThatCannotBeReadIsAFailureRowWhetherOrNotARuleReadsIt) {
  // A header no rule reads is only asked about (discover, relative to its directory); a source
  // a rule reads and a Python file are read. Each that cannot be read is a Failure with the
  // system's reason.
  const fs::path base = permission_test_dir("tp_unreadable");
  fs::create_directories(base / "csrc");
  for (const char* rel : {"csrc/k.h", "csrc/k.cu", "m.py"}) {
    std::ofstream(base / rel) << "x\n";
    fs::permissions(base / rel, fs::perms::none);
  }
  std::ofstream(base / "ok.h") << "x\n";
  const int status = exit_status_as_nobody([&] {
    const std::vector<ProjectFile> files = discover(base);
    if (files.size() != 4) return 2;  // the walk itself must reach them
    int bad = 0;
    for (const ProjectFile& f : files) {
      const Admitted a = admit_file(f, Options{});
      const bool failed = a.work.entry.outcome == report::Outcome::Failure;
      const bool said = a.work.entry.reason == f.rel + ": cannot read: Permission denied";
      if (f.rel == "ok.h" ? failed : !(failed && said && !a.bytes)) ++bad;
      if (f.rel == "csrc/k.h" && f.read_error != EACCES) ++bad;
    }
    return bad == 0 ? 0 : 1;
  });
  fs::remove_all(base);
  if (status == 3) GTEST_SKIP() << "root cannot become nobody here";
  EXPECT_EQ(status, 0);
}

TEST(Files, ADirectoryThatCannotBeListedIsAFailureRow) {
  // Nothing under it can be migrated or copied: the user sees one row for it, with the system's
  // reason, where the walk used to pass over it.
  const fs::path base = permission_test_dir("tp_unlisted");
  fs::create_directories(base / "locked" / "deeper");
  std::ofstream(base / "locked" / "train.py") << "import torch\n";
  std::ofstream(base / "main.py") << "x = 1\n";
  fs::permissions(base / "locked", fs::perms::none);
  const int status = exit_status_as_nobody([&] {
    const std::vector<ProjectFile> files = discover(base);
    if (files.size() != 2 || files[0].rel != "locked/" || files[1].rel != "main.py") return 2;
    const ProjectFile& d = files[0];
    if (d.kind != FileKind::Unlisted || d.read_error != EACCES) return 4;
    const Admitted a = admit_file(d, Options{});
    if (a.work.entry.outcome != report::Outcome::Failure || a.bytes ||
        a.work.entry.reason !=
            "locked/: cannot list the directory: Permission denied: nothing "
            "in it is migrated or copied")
      return 5;
    if (admit_file(files[1], Options{}).work.entry.outcome == report::Outcome::Failure) return 6;
    return 0;
  });
  fs::permissions(base / "locked", fs::perms::owner_all);
  fs::remove_all(base);
  if (status == 3) GTEST_SKIP() << "root cannot become nobody here";
  EXPECT_EQ(status, 0);
}

TEST(Files, DiscoverGivesTheSameRelativePathsHoweverTheInputIsSpelled) {
  // The relative path is cut from the walk's path after the input's text; an input that ends
  // with a separator, has "." or doubled separators inside, or is relative gives the same.
  fs::path base = fs::temp_directory_path() / ("tp_discover_rel_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "proj" / "pkg" / "sub");
  fs::create_directories(base / "proj" / "node_modules");
  std::ofstream(base / "proj" / "top.py") << "";
  std::ofstream(base / "proj" / "pkg" / "sub" / "deep.py") << "";
  const std::vector<std::string> want = {"pkg/sub/deep.py", "top.py"};
  const fs::path cwd = fs::current_path();
  fs::current_path(base);
  const std::string abs = (base / "proj").string();
  const std::vector<std::string> inputs = {
      abs,    abs + "/", abs + "//", base.string() + "/./proj", base.string() + "//proj",
      "proj", "./proj",  "proj/"};
  for (const std::string& input : inputs) {
    std::vector<std::string> excluded;
    std::vector<std::string> rels;
    for (const ProjectFile& f : discover(input, {}, true, &excluded)) rels.push_back(f.rel);
    EXPECT_EQ(rels, want) << input;
    EXPECT_EQ(excluded, std::vector<std::string>{"node_modules/"}) << input;
  }
  fs::current_path(cwd);
  fs::remove_all(base);
}

TEST(Files, DiscoverExcludesADirectoryWhateverPathReachesIt) {
  // The input through a link, a relative path with dots, an excluded directory named through
  // another link: the walk compares resolved paths, so each is excluded all the same.
  fs::path base = fs::temp_directory_path() / ("tp_discover_links_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "real" / "pkg" / "out");
  fs::create_directories(base / "real" / "pkg" / "keep");
  std::ofstream(base / "real" / "pkg" / "out" / "o.py") << "";
  std::ofstream(base / "real" / "pkg" / "keep" / "k.py") << "";
  fs::create_directory_symlink(base / "real", base / "via");
  for (const fs::path& input :
       {base / "via", base / "real" / "pkg" / "..", base / "via" / "pkg" / ".." / ""}) {
    auto files = discover(input, {base / "via" / "pkg" / "out"});
    ASSERT_EQ(files.size(), 1u) << input;
    EXPECT_EQ(files[0].rel, "pkg/keep/k.py") << input;
  }
  // A link to a directory inside the input is listed, never walked.
  fs::create_directory_symlink(base / "real" / "pkg" / "keep", base / "real" / "alias");
  auto files = discover(base / "real", {});
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].rel, "alias");
  EXPECT_EQ(files[0].kind, FileKind::Symlink);
  fs::remove_all(base);
}

TEST(Files, DefaultExclusionsFollowRuff) {
  fs::path base = fs::temp_directory_path() / ("tp_excl_" + std::to_string(::getpid()));
  fs::remove_all(base);
  for (const char* d : {".git", ".hg", ".svn", "__pycache__", "node_modules", "x.egg-info", "build",
                        "dist", "venv", "src/build", "src/builder"})
    fs::create_directories(base / d);
  std::ofstream(base / "venv" / "pyvenv.cfg") << "home = /usr\n";
  for (const char* d : {".git", ".hg", ".svn", "__pycache__", "node_modules", "x.egg-info", "build",
                        "dist", "venv", "src/build"})
    EXPECT_TRUE(default_excluded(base / d)) << d;
  EXPECT_FALSE(default_excluded(base / "src"));
  EXPECT_FALSE(default_excluded(base / "src" / "builder"));
  std::ofstream(base / "src" / "builder" / "m.py") << "";
  std::ofstream(base / "build" / "m.py") << "";
  std::vector<std::string> excluded;
  auto files = discover(base, {}, true, &excluded);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].rel, "src/builder/m.py");
  EXPECT_EQ(excluded.size(), 10u);
  EXPECT_EQ(discover(base, {}, false).size(), 3u) << "with the flag, everything is listed";
  fs::remove_all(base);
}

TEST(Files, WriteAtomicReplacesAndKeepsPermissions) {
  fs::path base = fs::temp_directory_path() / ("tp_write_" + std::to_string(::getpid()));
  fs::create_directories(base);
  fs::path p = base / "run.py";
  std::ofstream(p) << "old";
  fs::permissions(p, fs::perms::owner_all);
  std::string err;
  ASSERT_TRUE(write_atomic(p, "new contents", err, p)) << err;
  std::string got;
  ASSERT_TRUE(read_file(p, got, err));
  EXPECT_EQ(got, "new contents");
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::owner_all, fs::perms::owner_all);
  int entries = 0;
  for (auto& e : fs::directory_iterator(base)) entries += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(entries, 1) << "no temporary file left";
  EXPECT_FALSE(write_atomic(base / "no-such-dir" / "f", "x", err));
  EXPECT_NE(err.find("cannot write"), std::string::npos);
  fs::remove_all(base);
}

}  // namespace
}  // namespace torchport::project
