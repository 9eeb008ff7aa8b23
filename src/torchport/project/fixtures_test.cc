// The rule fixtures (tests/fixtures/rules/, rules/rules_fixture_test.cc has their format) run
// through the driver's own per-file phases, as `torchport migrate` runs a file: admit, parse,
// model, rules, conflicts and fixes, the output pass (TP310's second pass), the self-check. The
// expected output and the expected rows are the same hand-written files the rule-level harness
// reads; here the rows are the report's (report::Row), so a finding the driver drops, turns
// into another row or leaves unapplied shows.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/project/files.h>
#include <torchport/project/process.h>
#include <torchport/rules/engine.h>
#include <torchport/rules/fixture_cases_test_util.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace torchport::project {
namespace {

namespace fs = std::filesystem;

using rules::fixtures::Case;
using rules::fixtures::cases;
using rules::fixtures::slurp;

// <target>.options (rules_fixture_test.cc documents them).
struct FixtureOptions {
  Options opts;
  rules::CustomOps ops;
  std::string rules_file;
  std::string path;
};

FixtureOptions read_options(const Case& c) {
  FixtureOptions o;
  o.opts.rules.target = c.target;
  o.opts.jobs = 1;
  const fs::path p = c.dir / (c.target + ".options");
  if (!fs::exists(p)) return o;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);) {
    if (line == "specify_device") {
      o.opts.rules.specify_device = true;
    } else if (line.starts_with("torch_version=")) {
      o.opts.rules.torch_version = line.substr(14);
    } else if (line.starts_with("rules=")) {
      o.rules_file = line.substr(6);
    } else if (line.starts_with("custom_op=") && line.find(':') != std::string::npos) {
      const auto colon = line.find(':');
      o.ops.emplace(line.substr(10, colon - 10), line.substr(colon + 1));
    } else if (line == "distributed") {
      o.opts.distributed = true;
    } else if (line.starts_with("model_var=")) {
      o.opts.rules.model_var = line.substr(10);
    } else if (line == "keep_batch") {
      o.opts.rules.keep_batch = true;
    } else if (line.starts_with("path=")) {
      o.path = line.substr(5);
    } else if (!line.empty()) {
      ADD_FAILURE() << p << ": unknown option line: " << line;
    }
  }
  return o;
}

// The report's rows as a findings file writes them, one finding a line, in the report's order:
//
//   CODE LINE:COL OP API [unsafe] {label} | message
//
// CODE is the rule code (TP300), LINE:COL where the finding starts (1-based; the column counts
// UTF-8 bytes, as CPython's do), OP the operation (MODIFY, INSERT, UNSUPPORTED, UNKNOWN, ...),
// API the qualified API (it may hold spaces: "import torch_npu"). " [unsafe]" follows for a fix
// that changes behaviour or numerics, and " {label}" for what that fix changes. The message
// follows " | " exactly as a user reads it (a newline in it is written "\n"). Every field is
// compared: a changed message fails the fixture as a changed output does.
std::string escaped(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\n') {
      out += "\\n";
    } else {
      out += ch;
    }
  }
  return out;
}

std::string rows_text(const std::vector<report::Row>& rows) {
  std::string out;
  for (const report::Row& r : rows) {
    out += r.code + " " + std::to_string(r.start_line) + ":" + std::to_string(r.column) + " " +
           std::string(rules::to_string(r.op)) + " " + r.api;
    if (r.applicability == "unsafe") out += " [unsafe]";
    if (!r.changes.empty()) out += " {" + r.changes + "}";
    out += " | " + escaped(r.message) + "\n";
  }
  return out;
}

class DriverFixtures : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tp_fixtures_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One file through the driver's phases: its output (the input when unchanged) and its rows.
  std::pair<std::string, FileWork> run(const std::string& name, const std::string& bytes,
                                       const FixtureOptions& o, const catalogue::Catalogue& cat) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    const ProjectFile f{p, name, classify(name), bytes.size()};
    DistributedFiles dist;
    dist.main = name;
    const FileContext ctx{cat, o.opts, o.ops, dist, "", nullptr};
    FileWork w = process_file(f, ctx);
    std::string out = w.entry.changed ? w.output : bytes;
    return {std::move(out), std::move(w)};
  }

  // Every case through the driver: its output, and its rows.
  std::pair<std::string, FileWork> run_case(const Case& c, const FixtureOptions& o) {
    std::optional<catalogue::Catalogue> with_rules;
    if (!o.rules_file.empty()) {
      std::string error;
      with_rules = catalogue::Catalogue::builtin().with_rules(
          o.rules_file, slurp(c.dir / o.rules_file), c.target, o.opts.rules.specify_device, &error);
      EXPECT_TRUE(with_rules) << error;
    }
    const catalogue::Catalogue& cat = with_rules ? *with_rules : catalogue::Catalogue::builtin();
    const std::string input = slurp(c.input);
    const std::string name = o.path.empty() ? c.input.filename().string() : o.path;
    auto result = run(name, input, o, cat);
    // Migrating the output again changes nothing.
    auto [again, w2] = run(name, result.first, o, cat);
    EXPECT_EQ(again, result.first) << "not idempotent";
    return result;
  }

  fs::path dir_;
};

TEST_F(DriverFixtures, OutputsAndRowsMatchTheHandWrittenExpectations) {
  std::size_t n = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.dir.filename().string() + " --target " + c.target);
    const FixtureOptions o = read_options(c);
    auto [out, w] = run_case(c, o);
    EXPECT_EQ(w.entry.outcome, report::Outcome::Success) << w.entry.reason;
    EXPECT_EQ(out, slurp(c.dir / (c.target + c.input.extension().string())));
    EXPECT_EQ(rows_text(w.rows), slurp(c.dir / (c.target + ".findings")));
    if (fs::exists(c.dir / (c.target + ".min_torch"))) {
      std::string want = slurp(c.dir / (c.target + ".min_torch"));
      want.erase(want.find_last_not_of("\n") + 1);
      EXPECT_EQ(w.entry.min_torch, want);
    }
    ++n;
  }
  EXPECT_GT(n, 100u);
}

// Every registered code is pinned (code, place and message) by at least one fixture's expected
// findings, and every code a findings file names is registered. The test above makes the driver's
// rows equal those files, so a pinned code is also an emitted one.
TEST(FixtureCodes, EveryRegisteredCodeIsPinnedByAFixture) {
  std::set<std::string> pinned;
  for (const Case& c : cases()) {
    std::istringstream in(slurp(c.dir / (c.target + ".findings")));
    for (std::string line; std::getline(in, line);) {
      const std::string code = line.substr(0, line.find(' '));
      EXPECT_NE(rules::find_rule(code), nullptr)
          << c.dir.filename().string() << "/" << c.target << ".findings: unregistered " << code;
      EXPECT_NE(line.find(" | "), std::string::npos)
          << c.dir.filename().string() << "/" << c.target << ".findings: no message: " << line;
      pinned.insert(code);
    }
  }
  for (const rules::RuleInfo& info : rules::registry())
    EXPECT_TRUE(pinned.contains(std::string(info.code)))
        << info.code << " has no fixture whose findings pin it (tests/fixtures/rules/)";
}

}  // namespace
}  // namespace torchport::project
