// Rule fixtures: tests/fixtures/rules/<case>/input.py with, per target, the expected output
// <target>.py and the expected findings <target>.findings ("LINE OP API" per line, in source
// order). Unexpected findings fail the test, as clang-tidy's CHECK-MESSAGES do. Each output is
// also re-parsed and migrated again, which must change nothing (idempotence).
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace torchport::rules {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Applies the fixes: sorted by offset, overlapping edits after the first are skipped.
// The driver's way (fix::apply_fixes); a fix that overlaps another or is invalid fails the test,
// since the driver would turn it into an UNSUPPORTED row the fixture does not show.
std::string apply_fixes(const std::string& text, const FileResult& r) {
  std::vector<fix::Fix> fixes;
  for (const Finding& f : r.findings) {
    if (f.fix) fixes.push_back(*f.fix);
  }
  fix::ApplyResult applied = fix::apply_fixes(text, fixes);
  for (std::size_t i = 0; i < fixes.size(); ++i) {
    EXPECT_TRUE(applied.outcomes[i] == fix::FixOutcome::Applied ||
                applied.outcomes[i] == fix::FixOutcome::Duplicate ||
                applied.outcomes[i] == fix::FixOutcome::NotApplicable)
        << "fix " << i << " at byte " << fixes[i].edits.front().begin << " was not applied";
  }
  return applied.text;
}

std::string findings_text(const std::string& text, const FileResult& r) {
  std::string out;
  for (const Finding& f : r.findings) {
    const auto line = 1 + std::count(text.begin(), text.begin() + f.begin, '\n');
    out += std::to_string(line) + " " + std::string(to_string(f.op)) + " " + f.api + "\n";
  }
  return out;
}

struct Case {
  fs::path dir;
  std::string target;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const fs::path root = fs::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures" / "rules";
  if (!fs::exists(root)) return out;
  for (const auto& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(d.path())) {
      if (f.path().extension() == ".py" && f.path().stem() != "input") {
        out.push_back({d.path(), f.path().stem().string()});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) {
    return std::tie(a.dir, a.target) < std::tie(b.dir, b.target);
  });
  return out;
}

FileResult migrate(const std::string& name, const std::string& text, const std::string& target,
                   bool specify_device = false, const std::string& torch_version = "") {
  syntax::Tree tree = syntax::parse(name, text);
  EXPECT_TRUE(tree.ok()) << name;
  Options o;
  o.target = target;
  o.specify_device = specify_device;
  o.torch_version = torch_version;
  return check(tree, catalogue::Catalogue::builtin(), o);
}

TEST(RuleFixtures, ThereAreFixturesForEveryTarget) {
  std::set<std::string> targets;
  for (const Case& c : cases()) targets.insert(c.target);
  for (const char* t : {"npu", "mlu", "musa", "xpu", "cpu", "accelerator"}) {
    EXPECT_TRUE(targets.contains(t)) << "no fixture for " << t;
  }
}

TEST(RuleFixtures, OutputsAndFindingsMatchTheHandWrittenExpectations) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.dir.filename().string() + " --target " + c.target);
    const std::string input = slurp(c.dir / "input.py");
    // <target>.options: "specify_device" and/or "torch_version=X.Y", one per line.
    bool specify = false;
    std::string version;
    if (fs::exists(c.dir / (c.target + ".options"))) {
      std::istringstream opts(slurp(c.dir / (c.target + ".options")));
      for (std::string line; std::getline(opts, line);) {
        if (line == "specify_device") specify = true;
        if (line.starts_with("torch_version=")) version = line.substr(14);
      }
    }
    FileResult r = migrate("input.py", input, c.target, specify, version);
    const std::string out = apply_fixes(input, r);
    EXPECT_EQ(out, slurp(c.dir / (c.target + ".py")));
    const fs::path fpath = c.dir / (c.target + ".findings");
    if (fs::exists(fpath)) {
      EXPECT_EQ(findings_text(input, r), slurp(fpath));
    }
    if (fs::exists(c.dir / (c.target + ".min_torch"))) {
      std::string want = slurp(c.dir / (c.target + ".min_torch"));
      want.erase(want.find_last_not_of("\n") + 1);
      EXPECT_EQ(r.min_torch_version, want);
    }
    // The output parses, and migrating it again changes nothing.
    FileResult again = migrate("output.py", out, c.target, specify, version);
    EXPECT_EQ(apply_fixes(out, again), out) << "not idempotent";
    if (std::getenv("TORCHPORT_FIXTURE_DUMP")) {
      std::ofstream(c.dir / (c.target + ".actual")) << out;
      std::ofstream(c.dir / (c.target + ".findings.actual")) << findings_text(input, r);
    }
  }
}

}  // namespace
}  // namespace torchport::rules

namespace torchport::rules {
namespace {

// The example CUDA project (examples/cuda_project) against the hand-written expected outputs
// in tests/fixtures/cuda_project_expected/<target>/. tests/python/test_migrate_runs.py runs
// the cpu and accelerator outputs.
TEST(ExampleProject, EveryTargetGivesTheExpectedFiles) {
  const fs::path src = fs::path(TORCHPORT_SOURCE_DIR) / "examples" / "cuda_project";
  const fs::path expected =
      fs::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures" / "cuda_project_expected";
  for (const char* target : {"npu", "mlu", "musa", "xpu", "cpu", "accelerator"}) {
    for (const char* file : {"train.py", "model/net.py", "model/__init__.py"}) {
      SCOPED_TRACE(std::string(file) + " --target " + target);
      const std::string input = slurp(src / file);
      FileResult r = migrate(file, input, target);
      const fs::path want = expected / target / file;
      // Files without CUDA code are expected unchanged (no expected copy is kept).
      EXPECT_EQ(apply_fixes(input, r), fs::exists(want) ? slurp(want) : input);
      FileResult again = migrate(file, apply_fixes(input, r), target);
      EXPECT_EQ(apply_fixes(apply_fixes(input, r), again), apply_fixes(input, r));
    }
  }
}

TEST(ExampleProject, CpuOutputReportsWhatItLeftInPlace) {
  const fs::path src = fs::path(TORCHPORT_SOURCE_DIR) / "examples" / "cuda_project";
  const std::string input = slurp(src / "train.py");
  FileResult r = migrate("train.py", input, "cpu");
  // cudnn.benchmark stays but has no effect on the CPU: reported, never silent.
  // torch.cuda.max_memory_allocated has no CPU allocator to ask: it becomes 0, reported.
  std::vector<std::string> unsupported;
  std::string memory_message;
  for (const Finding& f : r.findings) {
    if (f.op == Operation::Unsupported) unsupported.push_back(f.api);
    if (f.api == "torch.cuda.max_memory_allocated") memory_message = f.message;
  }
  EXPECT_EQ(unsupported, std::vector<std::string>{"torch.backends.cudnn.benchmark"});
  EXPECT_EQ(memory_message,
            "change torch.cuda.max_memory_allocated(...) to 0 (the CPU has no device memory to "
            "measure: a call becomes 0)");
}

}  // namespace
}  // namespace torchport::rules
