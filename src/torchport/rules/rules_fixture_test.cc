// The rule fixtures' layout: tests/fixtures/rules/<case>/input.py (or input.<ext> for a project
// file, checked under the name its <target>.options path= gives) with, per target, the expected
// output <target>.py and the expected findings <target>.findings (one finding a line, in the
// report's order: "CODE LINE:COL OP API [unsafe] {label} | message"; project/fixtures_test.cc
// documents the fields). They run through the driver's own phases in project/fixtures_test.cc,
// which also checks that every registered code is pinned by a fixture. Here: a directory without an
// expected output, or an output without its findings file, fails; the family table's order; and the
// example project.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/rules/fixture_cases_test_util.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace torchport::rules {
namespace {

namespace fs = std::filesystem;
using fixtures::Case;
using fixtures::cases;
using fixtures::fixtures_root;
using fixtures::input_of;
using fixtures::slurp;

// Applies the fixes: sorted by offset, overlapping edits after the first are skipped.
// The driver's way (fix::apply_fixes); a fix that overlaps another or is invalid fails the test,
// since the driver would turn it into an UNSUPPORTED row the fixture does not show.
std::string apply_fixes(const std::string& text, const FileResult& r) {
  std::vector<fix::Fix> fixes;
  for (const Finding& f : r.findings) {
    if (f.fix) fixes.push_back(*f.fix);
  }
  // migrate's default: the unsafe (behaviour-changing, labelled) fixes are applied too.
  fix::ApplyResult applied = fix::apply_fixes(text, fixes, fix::Applicability::Unsafe);
  for (std::size_t i = 0; i < fixes.size(); ++i) {
    EXPECT_TRUE(applied.outcomes[i] == fix::FixOutcome::Applied ||
                applied.outcomes[i] == fix::FixOutcome::Duplicate ||
                applied.outcomes[i] == fix::FixOutcome::NotApplicable)
        << "fix " << i << " at byte " << fixes[i].edits.front().begin << " was not applied";
  }
  return applied.text;
}

FileResult migrate(const std::string& name, const std::string& text, const std::string& target) {
  syntax::Tree tree = syntax::parse(name, text);
  EXPECT_TRUE(tree.ok()) << name;
  Options o;
  o.target = target;
  return check(tree, catalogue::Catalogue::builtin(), o);
}

// Every fixture directory has exactly one input and at least one expected output, and every
// expected output has its findings file: a fixture cannot pass by checking nothing.
TEST(RuleFixtures, FixtureDirectoriesAreComplete) {
  for (const auto& d : fs::directory_iterator(fixtures_root())) {
    if (!d.is_directory()) continue;
    const std::string name = d.path().filename().string();
    const fs::path input = input_of(d.path());
    if (input.empty()) {
      ADD_FAILURE() << name << ": no input file (or several named input.*)";
      continue;
    }
    const std::string ext = input.extension().string();
    int outputs = 0;
    for (const auto& f : fs::directory_iterator(d.path())) {
      const fs::path& p = f.path();
      if (p.extension() == ext && p.stem() != "input") {
        ++outputs;
        EXPECT_TRUE(fs::exists(d.path() / (p.stem().string() + ".findings")))
            << name << "/" << p.filename().string() << " has no findings file";
      }
      if (p.extension() == ".findings") {
        EXPECT_TRUE(fs::exists(d.path() / (p.stem().string() + ext)))
            << name << "/" << p.filename().string() << " has no expected output";
      }
    }
    EXPECT_GT(outputs, 0) << name << ": no expected output (<target>" << ext << ")";
  }
}

// The family table: every code's family exists, and every family runs after the ones it names.
TEST(RuleRegistry, FamiliesDeclareTheirOrder) {
  std::vector<std::string_view> order;
  for (const FamilyInfo* f : families()) order.push_back(f->name);
  for (const RuleInfo& info : registry())
    EXPECT_NE(std::find(order.begin(), order.end(), info.family), order.end()) << info.code;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const FamilyInfo& f = *families()[i];
    for (std::string_view a : f.after) {
      if (a.empty()) continue;
      auto it = std::find(order.begin(), order.end(), a);
      ASSERT_NE(it, order.end()) << f.name << " runs after unknown family " << a;
      EXPECT_LT(it - order.begin(), static_cast<long>(i)) << f.name << " must run after " << a;
    }
    if (!(f.needs & NeedFindings)) {
      for (std::size_t j = 0; j < i; ++j) {
        EXPECT_FALSE(families()[j]->needs & NeedFindings) << f.name << " after " << order[j];
      }
    }
  }
  // Python-file families run from check(), the output pass's (PythonOutput) from
  // check_output(), the others from check_other().
  for (const FamilyInfo* f : families())
    EXPECT_EQ(f->run != nullptr, f->input != Input::OtherFile) << f->name;
}

TEST(RuleFixtures, ThereAreFixturesForEveryTarget) {
  std::set<std::string> targets;
  for (const Case& c : cases()) targets.insert(c.target);
  for (const char* t : {"npu", "mlu", "musa", "xpu", "cpu", "accelerator"}) {
    EXPECT_TRUE(targets.contains(t)) << "no fixture for " << t;
  }
}

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
