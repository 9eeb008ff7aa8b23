// Rule fixtures: tests/fixtures/rules/<case>/input.py with, per target, the expected output
// <target>.py and the expected findings <target>.findings ("LINE OP API" per line, in source
// order; a fix that changes behaviour adds " [unsafe]" and its label in braces). Unexpected
// findings fail the test, as clang-tidy's CHECK-MESSAGES do. Each output is also re-parsed and
// migrated again, which must change nothing (idempotence). A project file (input.sh, input.txt,
// input.cu, ...) goes through check_other() under the name its <target>.options gives
// (path=requirements.txt). A directory without an expected output, an output without its findings
// file, and a registered code without a fixture fail the test.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
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

std::string findings_text(const std::string& text, const FileResult& r) {
  std::string out;
  for (const Finding& f : r.findings) {
    const auto line = 1 + std::count(text.begin(), text.begin() + f.begin, '\n');
    out += std::to_string(line) + " " + std::string(to_string(f.op)) + " " + f.api;
    // The label of a fix that changes numerics or behaviour, "unsafe" when it is one.
    if (f.fix && f.fix->applicability == fix::Applicability::Unsafe) out += " [unsafe]";
    if (!f.changes.empty()) out += " {" + f.changes + "}";
    out += "\n";
  }
  return out;
}

struct Case {
  fs::path dir;
  std::string target;
  fs::path input;  ///< input.py, or input.<ext> for a project file (see <target>.options path=)
};

fs::path fixtures_root() { return fs::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures" / "rules"; }

// The one input.* file of a fixture directory ("" when there is none or several).
fs::path input_of(const fs::path& dir) {
  fs::path found;
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().stem() == "input") {
      found = f.path();
      ++n;
    }
  }
  return n == 1 ? found : fs::path();
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const fs::path root = fixtures_root();
  if (!fs::exists(root)) return out;
  for (const auto& d : fs::directory_iterator(root)) {
    if (!d.is_directory()) continue;
    const fs::path input = input_of(d.path());
    if (input.empty()) continue;  // reported by FixtureDirectoriesAreComplete
    for (const auto& f : fs::directory_iterator(d.path())) {
      if (f.path().extension() == input.extension() && f.path().stem() != "input") {
        out.push_back({d.path(), f.path().stem().string(), input});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Case& a, const Case& b) {
    return std::tie(a.dir, a.target) < std::tie(b.dir, b.target);
  });
  return out;
}

// <target>.options, one per line: "specify_device", "torch_version=X.Y", "rules=FILE" (a
// --rules file of the fixture directory), "custom_op=NAME:FILE" (project information: a custom
// CUDA operator and the file defining it), "path=NAME" (the name a non-Python input is checked
// under, e.g. requirements.txt), "distributed" (--distributed on this file), "model_var=NAME",
// "keep_batch" (--per-rank-batch keep).
struct FixtureOptions {
  bool distributed = false;
  std::string model_var = "model";
  bool keep_batch = false;
  bool specify_device = false;
  std::string torch_version;
  std::string rules;
  CustomOps custom_ops;
  std::string path;
};

FixtureOptions read_options(const Case& c) {
  FixtureOptions o;
  const fs::path p = c.dir / (c.target + ".options");
  if (!fs::exists(p)) return o;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);) {
    if (line == "specify_device") {
      o.specify_device = true;
    } else if (line.starts_with("torch_version=")) {
      o.torch_version = line.substr(14);
    } else if (line.starts_with("rules=")) {
      o.rules = line.substr(6);
    } else if (line.starts_with("custom_op=") && line.find(':') != std::string::npos) {
      const auto colon = line.find(':');
      o.custom_ops.emplace(line.substr(10, colon - 10), line.substr(colon + 1));
    } else if (line == "distributed") {
      o.distributed = true;
    } else if (line.starts_with("model_var=")) {
      o.model_var = line.substr(10);
    } else if (line == "keep_batch") {
      o.keep_batch = true;
    } else if (line.starts_with("path=")) {
      o.path = line.substr(5);
    } else if (!line.empty()) {
      ADD_FAILURE() << p << ": unknown option line: " << line;
    }
  }
  return o;
}

FileResult migrate(const std::string& name, const std::string& text, const std::string& target,
                   bool specify_device = false, const std::string& torch_version = "",
                   const catalogue::Catalogue& cat = catalogue::Catalogue::builtin(),
                   const CustomOps* custom_ops = nullptr, const FixtureOptions* fo = nullptr) {
  syntax::Tree tree = syntax::parse(name, text);
  EXPECT_TRUE(tree.ok()) << name;
  Options o;
  if (fo) {
    o.distributed = fo->distributed;
    o.model_var = fo->model_var;
    o.keep_batch = fo->keep_batch;
  }
  o.target = target;
  o.specify_device = specify_device;
  o.torch_version = torch_version;
  o.custom_ops = custom_ops;
  return check(tree, cat, o);
}

// The driver's second pass (TP310) on the first pass's output `out`: its fixes are applied to
// `out`, its findings join `r` at the original's offsets (their fixes, on `out`, are dropped).
void second_pass(const std::string& input, std::string& out, FileResult& r,
                 const std::string& target, const std::string& torch_version,
                 const catalogue::Catalogue& cat) {
  std::vector<fix::Fix> first;
  for (const Finding& f : r.findings)
    if (f.fix) first.push_back(*f.fix);
  const fix::ApplyResult a1 = fix::apply_fixes(input, first, fix::Applicability::Unsafe);
  syntax::Tree t2 = syntax::parse("output.py", out);
  ASSERT_TRUE(t2.ok()) << out;
  const semantic::Model m2(t2);
  Options o;
  o.target = target;
  o.torch_version = torch_version;
  std::vector<Finding> fs = port_device_idiom(t2, m2, cat, o);
  if (fs.empty()) return;
  FileResult r2;
  r2.findings = fs;
  out = apply_fixes(out, r2);
  for (Finding& f : fs) {
    const std::uint32_t b = fix::to_original(f.begin, a1.edits);
    f.end = fix::to_original(std::max(f.begin, f.end), a1.edits, true);
    f.begin = b;
    f.fix.reset();
    r.findings.push_back(std::move(f));
  }
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.begin < b.begin; });
}

// Runs one fixture case: the findings, and the output text.
std::pair<FileResult, std::string> run_case(const Case& c, const FixtureOptions& o) {
  const std::string input = slurp(c.input);
  if (c.input.extension() != ".py") {
    Options ro;
    ro.target = c.target;
    FileResult r = check_other(o.path.empty() ? c.input.filename().string() : o.path, input, ro);
    std::string out = apply_fixes(input, r);
    return {std::move(r), std::move(out)};
  }
  std::optional<catalogue::Catalogue> with_rules;
  if (!o.rules.empty()) {
    std::string error;
    with_rules = catalogue::Catalogue::builtin().with_rules(o.rules, slurp(c.dir / o.rules),
                                                            c.target, o.specify_device, &error);
    EXPECT_TRUE(with_rules) << error;
  }
  const catalogue::Catalogue& cat = with_rules ? *with_rules : catalogue::Catalogue::builtin();
  const CustomOps* ops = o.custom_ops.empty() ? nullptr : &o.custom_ops;
  FileResult r =
      migrate("input.py", input, c.target, o.specify_device, o.torch_version, cat, ops, &o);
  std::string out = apply_fixes(input, r);
  second_pass(input, out, r, c.target, o.torch_version, cat);
  // The output parses, and migrating it again changes nothing.
  FileResult again =
      migrate("output.py", out, c.target, o.specify_device, o.torch_version, cat, ops, &o);
  EXPECT_EQ(apply_fixes(out, again), out) << "not idempotent";
  return {std::move(r), std::move(out)};
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

// Every registered code is emitted, and checked, by at least one fixture; no fixture emits a
// code that is not registered.
TEST(RuleFixtures, EveryRegisteredCodeHasAFixture) {
  std::set<std::string> seen;
  for (const Case& c : cases()) {
    FileResult r = run_case(c, read_options(c)).first;
    for (const Finding& f : r.findings) {
      EXPECT_NE(find_rule(f.code), nullptr)
          << c.dir.filename().string() << " --target " << c.target << ": unregistered " << f.code;
      seen.insert(f.code);
    }
  }
  for (const RuleInfo& info : registry())
    EXPECT_TRUE(seen.contains(std::string(info.code))) << info.code << " has no fixture";
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

TEST(RuleFixtures, OutputsAndFindingsMatchTheHandWrittenExpectations) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.dir.filename().string() + " --target " + c.target);
    const FixtureOptions o = read_options(c);
    const std::string input = slurp(c.input);
    auto [r, out] = run_case(c, o);
    EXPECT_EQ(out, slurp(c.dir / (c.target + c.input.extension().string())));
    EXPECT_EQ(findings_text(input, r), slurp(c.dir / (c.target + ".findings")));
    if (fs::exists(c.dir / (c.target + ".min_torch"))) {
      std::string want = slurp(c.dir / (c.target + ".min_torch"));
      want.erase(want.find_last_not_of("\n") + 1);
      EXPECT_EQ(r.min_torch_version, want);
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
