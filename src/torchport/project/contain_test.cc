// run_contained: a fatal signal inside one file's work sets that file aside and the run goes
// on; anything else is reported as it is. The body runs in a child process, so it reports what
// it saw through its exit code.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/project/contain.h>
#include <torchport/project/driver.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

namespace torchport::project {
namespace {

namespace fs = std::filesystem;

TEST(Contain, AFileThatCrashesIsSetAsideAndTheRunGoesOn) {
  const fs::path scratch = fs::temp_directory_path() / ("tp_contain_" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  int attempts = 0;  // counted in the parent: the body runs in children
  testing::internal::CaptureStderr();
  int rc = run_contained("torchport test", [&](const std::vector<CrashedFile>& crashed) {
    if (crashed.empty()) {
      fs::create_directories(scratch);
      note_scratch_dir(scratch);
      const std::string rel = "pkg/bad.py";
      CurrentFile mark(rel);
      std::raise(SIGSEGV);
    }
    if (crashed.size() == 1 && crashed[0].rel == "pkg/bad.py" && crashed[0].signal == "SIGSEGV")
      return kExitIncomplete;
    return 10;
  });
  ++attempts;
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, kExitIncomplete) << err;
  EXPECT_NE(err.find("torchport: pkg/bad.py: fatal error (SIGSEGV) in torchport while working on "
                     "this file"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("torchport test: pkg/bad.py: set aside after a crash (SIGSEGV); running "
                     "again without it"),
            std::string::npos)
      << err;
  EXPECT_FALSE(fs::exists(scratch)) << "the crashed attempt's output is removed";
}

TEST(Contain, ACrashOutsideAnyFileIsAnInternalError) {
  testing::internal::CaptureStderr();
  int rc =
      run_contained("torchport test", [](const std::vector<CrashedFile>&) -> int { std::abort(); });
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, kExitInternal);
  EXPECT_NE(err.find("outside any file's work"), std::string::npos) << err;
}

TEST(Contain, TheExitCodeOfACleanRunPassesThrough) {
  EXPECT_EQ(run_contained("t", [](const std::vector<CrashedFile>&) { return 1; }), 1);
  EXPECT_EQ(run_contained("t", [](const std::vector<CrashedFile>&) { return 0; }), 0);
}

TEST(Contain, TheDriverReportsASetAsideFileAndCopiesItUnchanged) {
  const fs::path root = fs::temp_directory_path() / ("tp_contain_d_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "proj");
  std::ofstream(root / "proj" / "bad.py") << "x = y.cuda()\n";
  std::ofstream(root / "proj" / "good.py") << "x = y.cuda()\n";
  Options o;
  o.input = root / "proj";
  o.outdir = root / "out";
  o.rules.target = "npu";
  o.crashed = {{"bad.py", "SIGSEGV"}};
  RunResult r = run(o, catalogue::Catalogue::builtin(), nullptr);
  EXPECT_EQ(r.exit_code, kExitIncomplete);
  bool seen = false;
  for (const report::FileEntry& e : r.report.files) {
    if (e.file != "bad.py") {
      EXPECT_EQ(e.outcome, report::Outcome::Success) << e.file;
      continue;
    }
    seen = true;
    EXPECT_EQ(e.outcome, report::Outcome::Failure);
    EXPECT_TRUE(e.not_migrated);
    EXPECT_EQ(e.reason,
              "bad.py: torchport crashed (SIGSEGV) on this file and ran again without it: copied "
              "unchanged (a bug in torchport: please report it)");
  }
  EXPECT_TRUE(seen);
  std::ifstream in(r.result_dir / "bad.py");
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "x = y.cuda()\n");
  fs::remove_all(root);
}

}  // namespace
}  // namespace torchport::project
