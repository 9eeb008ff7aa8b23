// No input takes a run down: files at the depth limit go through every walk (model, rules,
// fixes, self-check, reports) on the driver's threads, deeper ones are Failure rows, and the
// ordinary files beside them migrate. Run in the sanitizer build too, where frames are largest.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/project/contain.h>
#include <torchport/project/driver.h>
#include <torchport/project/files.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/parser_test_util.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace torchport::project {
namespace {

namespace fs = std::filesystem;

using syntax::testing::joined;
using syntax::testing::repeat;

struct Kind {
  const char* name;
  std::function<std::string(int)> make;
};

// CUDA in every level where the form allows it, so that the rules find and rewrite something
// at every depth.
const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {
      {"sum", [](int n) { return "y = " + joined("x.cuda()", " + ", n) + "\n"; }},
      {"chain", [](int n) { return "y = x" + repeat(".to('cuda')", n) + "\n"; }},
      {"devices", [](int n) { return "y = " + joined("torch.device('cuda:0')", " + ", n) + "\n"; }},
      {"fstrings", [](int n) { return "y = " + joined("f'cuda:{rank}'", " + ", n) + "\n"; }},
      {"attribute", [](int n) { return "y = torch.cuda" + repeat(".a", n) + "\n"; }},
      {"subscript", [](int n) { return "y = x.cuda()" + repeat("[0]", n) + "\n"; }},
      {"unary", [](int n) { return "y = " + repeat("-", n) + "x.cuda()\n"; }},
      {"lambda", [](int n) { return "y = " + repeat("lambda: ", n) + "x.cuda()\n"; }},
      {"ternary", [](int n) { return "y = " + repeat("x.cuda() if b else ", n) + "c\n"; }},
      {"power", [](int n) { return "y = " + joined("x.cuda()", "**", n) + "\n"; }},
  };
  return all;
}

const std::string kHeader = "import torch\nx = torch.zeros(2)\n";

/// The deepest n whose file still parses (on a walk stack, as the driver parses).
int deepest_accepted(const Kind& k) {
  int lo = 1, hi = static_cast<int>(syntax::kMaxNesting) + 10;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    bool ok = false;
    syntax::run_on_walk_stack([&] { ok = syntax::parse("t.py", kHeader + k.make(mid)).ok(); });
    (ok ? lo : hi) = ok ? mid : mid - 1;
  }
  return lo;
}

class DeepFiles : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tp_deep_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proj");
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& rel, const std::string& bytes) {
    std::ofstream(root_ / "proj" / rel, std::ios::binary) << bytes;
  }
  fs::path root_;
  static inline int counter_ = 0;
};

TEST_P(DeepFiles, AtTheLimitMigrateBeyondItAreFailureRowsAndNothingElseIsLost) {
  std::map<std::string, std::string> deepest, too_deep;
  for (const Kind& k : kinds()) {
    const int n = deepest_accepted(k);
    // The limit is what stops it, not something else first, and the form is deep at all.
    ASSERT_GT(n, 1000) << k.name;
    ASSERT_LT(n, static_cast<int>(syntax::kMaxNesting)) << k.name;
    deepest[k.name] = kHeader + k.make(n);
    too_deep[k.name] = kHeader + k.make(n + 1);
    put(std::string("deepest_") + k.name + ".py", deepest[k.name]);
    put(std::string("too_deep_") + k.name + ".py", too_deep[k.name]);
  }
  put("ordinary.py", "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n");
  for (unsigned jobs : {1u, 2u}) {
    Options o;
    o.input = root_ / "proj";
    o.outdir = root_ / ("out" + std::to_string(jobs));
    o.rules.target = GetParam();
    o.jobs = jobs;
    RunResult r = run(o, catalogue::Catalogue::builtin(), nullptr);
    ASSERT_EQ(r.exit_code, kExitIncomplete) << r.error;
    const fs::path out = r.result_dir;
    std::size_t failures = 0, kept_at_limit = 0;
    for (const report::FileEntry& e : r.report.files) {
      std::string got, err;
      ASSERT_TRUE(read_file(out / e.file, got, err)) << e.file << ": " << err;
      if (e.file.starts_with("too_deep_")) {
        ++failures;
        EXPECT_EQ(e.outcome, report::Outcome::Failure) << e.file;
        EXPECT_TRUE(e.not_migrated) << e.file;
        EXPECT_TRUE(e.reason.starts_with(e.file + ":3:")) << e.reason;
        EXPECT_NE(e.reason.find(syntax::kTooDeep), std::string::npos) << e.reason;
        EXPECT_TRUE(got == too_deep[e.file.substr(9, e.file.size() - 12)])
            << e.file << ": not copied unchanged";
      } else if (e.outcome != report::Outcome::Success) {
        // A rewrite that adds a level (accelerator: torch.cuda.X -> a call) can push a file
        // at the limit over it: the original is kept, and the row says why, not "internal".
        EXPECT_TRUE(e.file.starts_with("deepest_")) << e.file << ": " << e.reason;
        EXPECT_TRUE(e.reason.starts_with(e.file + ": the rewritten file would nest deeper than " +
                                         std::to_string(syntax::kMaxNesting) + " levels ("))
            << e.reason.substr(0, 300);
        EXPECT_TRUE(got == deepest[e.file.substr(8, e.file.size() - 11)]) << e.file;
        ++kept_at_limit;
      } else {
        EXPECT_FALSE(e.not_migrated) << e.file;
        if (e.file == "ordinary.py") {
          EXPECT_EQ(got.find(".cuda()"), std::string::npos) << got.substr(0, 200);
        }
        // The rewritten file still parses, at its depth.
        bool ok = false;
        syntax::run_on_walk_stack([&] { ok = syntax::parse(e.file, got).ok(); });
        EXPECT_TRUE(ok) << e.file;
      }
    }
    EXPECT_EQ(failures, kinds().size());
    // Most forms keep their depth when rewritten.
    EXPECT_LE(kept_at_limit, 2u);
    EXPECT_EQ(r.report.files.size(), 2 * kinds().size() + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, DeepFiles, ::testing::Values("npu", "cpu", "accelerator"));

}  // namespace
}  // namespace torchport::project
