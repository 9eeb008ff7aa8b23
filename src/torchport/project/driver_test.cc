#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/project/driver.h>
#include <torchport/project/files.h>
#include <torchport/report/report_json_test_util.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace torchport::project {
namespace {

namespace fs = std::filesystem;

class Driver : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tp_driver_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "proj");
    fs::create_directories(root_ / "out");
  }
  void TearDown() override { fs::remove_all(root_); }

  void put(const std::string& rel, const std::string& bytes) {
    fs::path p = root_ / "proj" / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
  }
  static std::string get(const fs::path& p) {
    std::string s, err;
    EXPECT_TRUE(read_file(p, s, err)) << p << ": " << err;
    return s;
  }
  /// Every file under `dir` with its bytes, for before/after comparisons.
  static std::map<std::string, std::string> snapshot(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) out[fs::relative(e.path(), dir).generic_string()] = get(e.path());
    return out;
  }
  Options opts(const std::string& target = "npu") {
    Options o;
    o.input = root_ / "proj";
    o.outdir = root_ / "out";
    o.rules.target = target;
    o.jobs = 2;
    return o;
  }
  RunResult go(const Options& o) { return run(o, catalogue::Catalogue::builtin(), nullptr); }
  fs::path result() { return root_ / "out" / "proj_npu"; }

  fs::path root_;
};

TEST_F(Driver, MirrorsTheTreeAndCopiesNonPythonFilesUnchanged) {
  std::string binary("\x00\x01\xff\xfe data", 9);
  put("README.md", "# cuda everywhere\n");
  put("assets/blob.bin", binary);
  put("pkg/__init__.py", "");
  fs::create_directories(root_ / "proj" / "empty_dir");
  fs::create_symlink("README.md", root_ / "proj" / "link.md");
  RunResult r = go(opts());
  ASSERT_EQ(r.exit_code, 0) << r.error;
  EXPECT_EQ(r.result_dir, result());
  EXPECT_EQ(get(result() / "README.md"), "# cuda everywhere\n");
  EXPECT_EQ(get(result() / "assets/blob.bin"), binary);
  EXPECT_TRUE(fs::exists(result() / "pkg/__init__.py"));
  EXPECT_TRUE(fs::is_directory(result() / "empty_dir"));
  ASSERT_TRUE(fs::is_symlink(result() / "link.md")) << "links are recreated, not followed";
  EXPECT_EQ(fs::read_symlink(result() / "link.md"), "README.md");
  for (const char* f : {"change_list.csv", "unsupported_api.csv", "unknown_api.csv",
                        "cuda_op_list.csv", "report.json", "torchport.log"})
    EXPECT_TRUE(fs::exists(result() / "torchport-report" / f)) << f;
  // No temporary directory is left next to the result.
  for (auto& e : fs::directory_iterator(root_ / "out"))
    EXPECT_EQ(e.path().filename(), "proj_npu") << e.path();
}

TEST_F(Driver, RewritesOnlyTheEditedBytesAndKeepsEncodingAndLineEndings) {
  std::string src =
      "# -*- coding: latin-1 -*-\r\nimport torch\r\n# caf\xe9 cuda\r\ntorch.cuda.synchronize()\r\n";
  put("train.py", src);
  RunResult r = go(opts());
  ASSERT_EQ(r.exit_code, 0) << r.error;
  std::string out = get(result() / "train.py");
  // The comment (with a latin-1 byte and the word cuda) and the CRLF endings are untouched.
  EXPECT_NE(out.find("# caf\xe9 cuda\r\n"), std::string::npos) << out;
  EXPECT_NE(out.find("torch_npu.npu.synchronize()\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("torch.cuda"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("# -*- coding: latin-1 -*-\r\n", 0), 0u);
  ASSERT_EQ(r.report.files.size(), 1u);
  EXPECT_TRUE(r.report.files[0].changed);
}

TEST_F(Driver, TheInputIsNeverModified) {
  put("train.py", "import torch\nx = torch.zeros(2).cuda()\ntorch.cuda.synchronize()\n");
  put("data/config.yaml", "device: cuda\n");
  auto before = snapshot(root_ / "proj");
  ASSERT_EQ(go(opts()).exit_code, 0);
  EXPECT_EQ(snapshot(root_ / "proj"), before);
}

TEST_F(Driver, BadFilesAreReportedWithPathLineColAndStillCopied) {
  std::string py2 = "print 'hello'\n";
  std::string broken = "def f(:\n    pass\n";
  std::string undecodable = "x = '\xff\xfe'\n";
  put("py2.py", py2);
  put("pkg/broken.py", broken);
  put("latin.py", undecodable);
  put("ok.py", "x = 1\n");
  RunResult r = go(opts());
  EXPECT_EQ(r.exit_code, kExitIncomplete) << "failures are reported in the exit status";
  EXPECT_EQ(get(result() / "py2.py"), py2);
  EXPECT_EQ(get(result() / "pkg/broken.py"), broken);
  EXPECT_EQ(get(result() / "latin.py"), undecodable);
  std::map<std::string, report::FileEntry> by;
  for (const auto& f : r.report.files) by[f.file] = f;
  EXPECT_EQ(by["ok.py"].outcome, report::Outcome::Success);
  EXPECT_EQ(by["pkg/broken.py"].outcome, report::Outcome::Failure);
  EXPECT_EQ(by["pkg/broken.py"].reason.rfind("pkg/broken.py:1:", 0), 0u)
      << by["pkg/broken.py"].reason;
  EXPECT_EQ(by["py2.py"].reason.rfind("py2.py:1:", 0), 0u) << by["py2.py"].reason;
  EXPECT_EQ(by["latin.py"].reason.rfind("latin.py:1:6: cannot decode", 0), 0u)
      << by["latin.py"].reason;
  auto j = nlohmann::json::parse(get(result() / "torchport-report/report.json"));
  EXPECT_EQ(j["summary"]["failure"], 3);
  EXPECT_EQ(j["summary"]["not_migrated"], 3);
  EXPECT_EQ(get(result() / "torchport-report/not_migrated.csv").substr(0, 30),
            "File,Outcome,Reason\nlatin.py,F")
      << "one row per file, in path order (latin.py first)";
}

TEST_F(Driver, AFileOverTheSizeLimitIsNotMigratedAndMakesTheRunIncomplete) {
  std::string big = "import torch\n";
  for (int i = 0; i < 100; ++i) big += "x = torch.zeros(1).cuda()\n";
  put("big.py", big);
  put("small.py", "import torch\ny = torch.zeros(1).cuda()\n");
  Options o = opts();
  o.max_bytes = 1000;
  RunResult r = go(o);
  EXPECT_EQ(r.exit_code, kExitIncomplete);
  EXPECT_EQ(get(result() / "big.py"), big) << "copied unchanged";
  EXPECT_NE(get(result() / "small.py").find(".npu()"), std::string::npos);
  std::string csv = get(result() / "torchport-report/not_migrated.csv");
  EXPECT_NE(csv.find("big.py,Skip,\"big.py: 2613 bytes, "), std::string::npos) << csv;
  EXPECT_NE(csv.find("larger than --max-file-size (1000 bytes)"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("small.py"), std::string::npos) << csv;
  EXPECT_EQ(r.report.count_not_migrated(), 1u);
  EXPECT_NE(report::summary_table(r.report).find("INCOMPLETE: 1 file(s) not migrated"),
            std::string::npos);
}

TEST_F(Driver, TheSizeLimitAppliesToFilesThatAreNotReadToo) {
  // discover does not measure a header no rule reads: admit_file does, for the limit.
  put("big.h", "#pragma once\n" + std::string(1200, '/') + "\n");
  put("small.h", "#pragma once\n");
  Options o = opts();
  o.max_bytes = 1000;
  RunResult r = go(o);
  EXPECT_EQ(r.exit_code, kExitIncomplete);
  std::string csv = get(result() / "torchport-report/not_migrated.csv");
  EXPECT_NE(csv.find("big.h,Skip,\"big.h: 1214 bytes, larger than --max-file-size (1000 bytes)"),
            std::string::npos)
      << csv;
  EXPECT_EQ(csv.find("small.h"), std::string::npos) << csv;
  EXPECT_EQ(r.report.count_not_migrated(), 1u);
}

TEST_F(Driver, WithoutALimitALargeFileIsMigrated) {
  std::string big = "import torch\n";
  while (big.size() < (11u << 20)) big += "x = torch.zeros(1).cuda()  # padding padding\n";
  put("big.py", big);
  RunResult r = go(opts());
  EXPECT_EQ(r.exit_code, kExitOk) << r.error;
  EXPECT_NE(get(result() / "big.py").find(".npu()"), std::string::npos);
}

TEST_F(Driver, DefaultExclusionsAreNotCopiedAndAreLogged) {
  put("a.py", "x = 1\n");
  put(".git/config", "[core]\n");
  put("__pycache__/a.cpython-311.pyc", "x");
  put("env/pyvenv.cfg", "home = /usr\n");
  put("env/lib/m.py", "import torch\ntorch.cuda.synchronize()\n");
  put("pkg/build/b.py", "x = 1\n");
  put("pkg.egg-info/PKG-INFO", "x");
  RunResult r = go(opts());
  ASSERT_EQ(r.exit_code, kExitOk) << r.error;
  EXPECT_FALSE(fs::exists(result() / ".git"));
  EXPECT_FALSE(fs::exists(result() / "__pycache__"));
  EXPECT_FALSE(fs::exists(result() / "env"));
  EXPECT_FALSE(fs::exists(result() / "pkg" / "build"));
  EXPECT_FALSE(fs::exists(result() / "pkg.egg-info"));
  ASSERT_EQ(r.report.files.size(), 1u);
  std::string log = get(result() / "torchport-report/torchport.log");
  EXPECT_NE(log.find("excluded by default (--include-excluded keeps them): .git/, __pycache__/, "
                     "env/, pkg.egg-info/, pkg/build/"),
            std::string::npos)
      << log;
  Options all = opts();
  all.default_excludes = false;
  all.force = true;
  RunResult r2 = go(all);
  ASSERT_EQ(r2.exit_code, kExitOk) << r2.error;
  EXPECT_TRUE(fs::exists(result() / ".git" / "config"));
  EXPECT_NE(get(result() / "env/lib/m.py").find("npu"), std::string::npos);
}

/// The log without the timestamps that start its lines.
std::string unstamped(const std::string& log) {
  std::string out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) out += line.substr(line.find(" [")) + "\n";
  return out;
}

TEST_F(Driver, TheLogKeepsWarningsAndTheSummaryAndGivesEveryFileAndFindingAtVerbose) {
  put("a.py", "import torch\ntorch.cuda.synchronize()\nimport flash_attn\n");
  put("b.py", "x = 1\n");
  put("big.py", "import torch\n" + std::string(1200, '#') + "\n");
  Options o = opts();
  o.max_bytes = 1000;
  RunResult r = go(o);
  ASSERT_EQ(r.exit_code, kExitIncomplete) << r.error;
  const std::string input = (root_ / "proj").string();
  EXPECT_EQ(
      unstamped(get(result() / "torchport-report/torchport.log")),
      " [INFO] torchport " TORCHPORT_VERSION
      " migrate --target npu\n"
      " [INFO] input: " +
          input +
          "\n"
          " [WARNING] big.py: Skip: big.py: 1214 bytes, larger than --max-file-size (1000 "
          "bytes): copied unchanged\n"
          " [INFO] findings: 2 changes (change_list.csv), 1 unsupported (unsupported_api.csv), 0 "
          "unknown (unknown_api.csv); a line per file and per finding: --verbose\n"
          " [INFO] done: 3 files, 0 failure(s), 1 not migrated\n");
  o.verbose_log = true;
  o.force = true;
  ASSERT_EQ(go(o).exit_code, kExitIncomplete);
  const std::string verbose = unstamped(get(result() / "torchport-report/torchport.log"));
  EXPECT_NE(verbose.find(" [INFO] [Progress: 33.33%] a.py: Success\n"), std::string::npos)
      << verbose;
  EXPECT_NE(verbose.find(" [INFO] [Progress: 66.67%] b.py: Success\n"), std::string::npos)
      << verbose;
  EXPECT_NE(verbose.find(" [WARNING] [Progress: 33.33%] a.py: line: 3 ~ 3   Operation Type: "
                         "UNSUPPORTED"),
            std::string::npos)
      << verbose;
  EXPECT_NE(verbose.find("unknown (unknown_api.csv)\n [INFO] done: 3 files"), std::string::npos)
      << verbose;
}

TEST_F(Driver, ALinkToAPythonFileOutsideTheInputIsReportedAsNotMigrated) {
  put("a.py", "x = 1\n");
  std::ofstream(root_ / "outside.py") << "import torch\ntorch.cuda.synchronize()\n";
  fs::create_symlink(root_ / "outside.py", root_ / "proj" / "ext.py");
  fs::create_symlink("a.py", root_ / "proj" / "inner.py");
  fs::create_symlink("loop_b", root_ / "proj" / "loop_a.py");
  fs::create_symlink("loop_a.py", root_ / "proj" / "loop_b");
  RunResult r = go(opts());
  EXPECT_EQ(r.exit_code, kExitIncomplete) << r.error;
  std::map<std::string, report::FileEntry> by;
  for (const auto& f : r.report.files) by[f.file] = f;
  EXPECT_TRUE(by["ext.py"].not_migrated);
  EXPECT_NE(by["ext.py"].reason.find("outside the input"), std::string::npos);
  EXPECT_FALSE(by["inner.py"].not_migrated) << "its target is migrated as a.py";
  EXPECT_FALSE(by["loop_a.py"].not_migrated);
  EXPECT_NE(by["loop_a.py"].reason.find("does not resolve"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(result() / "loop_a.py"));
}

TEST_F(Driver, RefusesAnOutdirInsideTheInput) {
  put("a.py", "x = 1\n");
  Options o = opts();
  o.outdir = root_ / "proj" / "out";
  RunResult r = go(o);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.error.find("is inside INPUT"), std::string::npos) << r.error;
  EXPECT_FALSE(fs::exists(root_ / "proj" / "out"));
}

TEST_F(Driver, RefusesToOverwriteAResultWithoutForce) {
  put("a.py", "x = 1\n");
  ASSERT_EQ(go(opts()).exit_code, 0);
  std::ofstream(result() / "stale.txt") << "old";
  RunResult again = go(opts());
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.error.find("already exists (use --force"), std::string::npos) << again.error;
  EXPECT_TRUE(fs::exists(result() / "stale.txt"));
  Options o = opts();
  o.force = true;
  ASSERT_EQ(go(o).exit_code, 0);
  EXPECT_FALSE(fs::exists(result() / "stale.txt")) << "--force replaces the whole result";
  EXPECT_TRUE(fs::exists(result() / "a.py"));
}

TEST_F(Driver, RefusesBadTargetsVersionsAndInputs) {
  put("a.py", "x = 1\n");
  RunResult r = go(opts("tpu"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.error,
            "unknown target 'tpu' (expected one of: npu, mlu, musa, xpu, mps, hpu, cpu, "
            "accelerator)");
  // A vendor's or product's name points to its target.
  EXPECT_EQ(go(opts("Ascend")).error,
            "unknown target 'Ascend': did you mean npu (Huawei Ascend NPU)? (expected one of: npu, "
            "mlu, musa, xpu, mps, hpu, cpu, accelerator)");
  EXPECT_EQ(go(opts("gaudi")).error.substr(0, 61),
            "unknown target 'gaudi': did you mean hpu (Intel Gaudi (HPU))?");
  EXPECT_NE(go(opts("intel"))
                .error.find("did you mean xpu (Intel GPU (XPU)) or hpu (Intel Gaudi "
                            "(HPU))?"),
            std::string::npos);
  Options o = opts("accelerator");
  o.rules.torch_version = "2.5";
  EXPECT_EQ(go(o).error, "target accelerator needs torch >= 2.6 (--torch-version 2.5)");
  o.rules.torch_version = "two";
  EXPECT_EQ(go(o).error, "--torch-version 'two': expected X.Y, e.g. 2.6");
  Options missing = opts();
  missing.input = root_ / "nope";
  EXPECT_EQ(go(missing).error, (root_ / "nope").string() + ": no such file or directory");
  EXPECT_FALSE(fs::exists(result()));
}

TEST_F(Driver, ASingleFileInputGoesToStemTarget) {
  put("train.py", "import torch\ntorch.cuda.synchronize()\n");
  Options o = opts();
  o.input = root_ / "proj" / "train.py";
  RunResult r = go(o);
  ASSERT_EQ(r.exit_code, 0) << r.error;
  EXPECT_EQ(r.result_dir, root_ / "out" / "train_npu");
  EXPECT_NE(get(root_ / "out/train_npu/train.py").find("torch_npu.npu.synchronize()"),
            std::string::npos);
}

TEST_F(Driver, InplaceRewritesAtomicallyAndKeepsBackups) {
  std::string src = "import torch\ntorch.cuda.synchronize()\n";
  put("train.py", src);
  put("same.py", "x = 1\n");
  Options o = opts();
  o.inplace = true;
  o.outdir.clear();
  RunResult r = go(o);
  ASSERT_EQ(r.exit_code, 0) << r.error;
  fs::path backup = root_ / "proj.torchport-backup";
  EXPECT_EQ(get(backup / "train.py"), src);
  EXPECT_FALSE(fs::exists(backup / "same.py")) << "only changed files are backed up";
  EXPECT_NE(get(root_ / "proj/train.py").find("torch_npu.npu.synchronize()"), std::string::npos);
  EXPECT_TRUE(fs::exists(backup / "torchport-report/change_list.csv"));
  // No temporary file is left in the project.
  for (auto& e : fs::recursive_directory_iterator(root_ / "proj"))
    EXPECT_EQ(e.path().string().find("torchport-tmp"), std::string::npos) << e.path();
  // A second run would overwrite the backups: refused without --force.
  RunResult again = go(o);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.error.find("already exists"), std::string::npos);
}

TEST_F(Driver, ReportsDoNotDependOnTheNumberOfJobs) {
  for (int i = 0; i < 24; ++i)
    put("m" + std::to_string(i) + ".py",
        "import torch\nx = torch.ones(1).cuda()\ntorch.cuda.synchronize()\n");
  Options o = opts();
  o.jobs = 1;
  o.analyze_only = true;
  o.outdir.clear();
  RunResult one = go(o);
  o.jobs = 8;
  RunResult many = go(o);
  EXPECT_EQ(report::change_list_csv(one.report), report::change_list_csv(many.report));
  EXPECT_GE(one.report.rows.size(), 48u);
}

TEST_F(Driver, AnalyzeWritesNoOutputTreeAndGatesOnFindings) {
  put("clean.py", "import torch\nx = torch.ones(1)\n");
  Options o = opts();
  o.analyze_only = true;
  o.outdir.clear();
  RunResult clean = go(o);
  EXPECT_EQ(clean.exit_code, 0);
  EXPECT_TRUE(clean.report.rows.empty());
  put("dirty.py", "import torch\ntorch.cuda.synchronize()\n");
  o.outdir = root_ / "reports";
  RunResult dirty = go(o);
  EXPECT_EQ(dirty.exit_code, 1);
  EXPECT_TRUE(fs::exists(root_ / "reports/change_list.csv"));
  EXPECT_FALSE(fs::exists(result()));
  EXPECT_EQ(get(root_ / "proj/dirty.py"), "import torch\ntorch.cuda.synchronize()\n");
}

TEST_F(Driver, CallsToCustomCudaOperatorsAreReportedUnsupported) {
  put("csrc/ops.cu",
      "#include <torch/extension.h>\n"
      "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
      "  m.def(\"fused_add\", &fused_add);\n"
      "}\n");
  put("use.py", "import my_ext\n\nz = 1\ny = my_ext.fused_add(1, 2)\nfused_addition(3)\n");
  RunResult r = go(opts());
  ASSERT_EQ(r.exit_code, 0) << r.error;
  ASSERT_EQ(r.report.cuda_ops.size(), 1u);
  EXPECT_EQ(r.report.cuda_ops[0].file, "csrc/ops.cu");
  EXPECT_EQ(r.report.cuda_ops[0].api, "fused_add");
  std::vector<report::Row> calls;
  for (const report::Row& row : r.report.rows)
    if (row.file == "use.py") calls.push_back(row);
  ASSERT_EQ(calls.size(), 1u) << "fused_addition is another name";
  EXPECT_EQ(calls[0].op, rules::Operation::Unsupported);
  EXPECT_EQ(calls[0].start_line, 4u);
  EXPECT_EQ(calls[0].api, "my_ext.fused_add");
  EXPECT_NE(calls[0].message.find("defined in csrc/ops.cu"), std::string::npos);
  EXPECT_EQ(get(result() / "use.py"), get(root_ / "proj/use.py")) << "left in place";
}

TEST_F(Driver, GeneralTorchCallsAreJudgedByTheVendorListOfTheVersion) {
  put("m.py",
      "import torch\n"
      "from torch.utils import mobile_optimizer as mo\n"
      "x = torch.zeros(2)\n"
      "m = mo.optimize_for_mobile(None)\n"
      "torch.not_a_real_api(1)\n");
  Options o = opts();
  o.analyze_only = true;
  o.outdir.clear();
  o.rules.torch_version = "2.8";
  RunResult r = go(o);
  std::map<std::string, report::Row> by;
  for (const report::Row& row : r.report.rows) by[row.api] = row;
  EXPECT_EQ(by.count("torch.zeros"), 0u) << "in Ascend's supported list";
  ASSERT_EQ(by.count("torch.utils.mobile_optimizer.optimize_for_mobile"), 1u);
  const report::Row& u = by["torch.utils.mobile_optimizer.optimize_for_mobile"];
  EXPECT_EQ(u.op, rules::Operation::Unsupported);
  EXPECT_EQ(u.start_line, 4u);
  EXPECT_NE(u.message.find("op_list_<v>.json"), std::string::npos) << u.message;
  EXPECT_NE(u.message.find("(torch 2.8)"), std::string::npos) << u.message;
  ASSERT_EQ(by.count("torch.not_a_real_api"), 1u);
  EXPECT_EQ(by["torch.not_a_real_api"].op, rules::Operation::Unknown);
  // Targets without a vendor list are not judged this way.
  o.rules.target = "xpu";
  o.rules.torch_version.clear();
  for (const report::Row& row : go(o).report.rows) EXPECT_NE(row.code, "TP950") << row.api;
}

TEST_F(Driver, FileNameThatIsNotUtf8IsAReportRow) {
  // POSIX file names are bytes: a latin-1 name must not abort the run (the reports are UTF-8).
  put("caf\xe9.py", "import torch\nx = torch.zeros(1).cuda()\n");
  put("ok.py", "import torch\n");
  RunResult r = go(opts());
  ASSERT_EQ(r.exit_code, 0) << r.error;
  // The file itself is migrated under its own name.
  EXPECT_NE(get(result() / "caf\xe9.py").find(".npu()"), std::string::npos);
  auto j = report::testing::expand_report_json(get(result() / "torchport-report" / "report.json"));
  bool row = false;
  for (const auto& f : j["files"]) {
    if (f["file"] == "caf\\xe9.py") {
      row = true;
      EXPECT_NE(f["reason"].get<std::string>().find("not valid UTF-8"), std::string::npos);
    }
  }
  EXPECT_TRUE(row) << j["files"].dump();
  bool finding = false;
  for (const auto& f : j["findings"]) finding |= f["file"] == "caf\\xe9.py";
  EXPECT_TRUE(finding);
  EXPECT_NE(get(result() / "torchport-report" / "change_list.csv").find("caf\\xe9.py"),
            std::string::npos);
  // Nothing temporary is left behind.
  for (auto& e : fs::directory_iterator(root_ / "out"))
    EXPECT_EQ(e.path().filename(), "proj_npu") << e.path();
  // analyze (no output tree) too.
  Options a = opts();
  a.analyze_only = true;
  RunResult ra = go(a);
  EXPECT_EQ(ra.exit_code, 1) << "findings, not a crash: " << ra.error;
  ASSERT_EQ(ra.report.files.size(), 2u);
  EXPECT_EQ(ra.report.files[0].file, "caf\\xe9.py");
}

// The device values of one module reach another's device positions (flow/project_values.h):
// an index imported from a config module and an option of an opts module are rewritten where
// they are used, and a backend option whose default its own file rewrites is no row.
TEST_F(Driver, DeviceValuesCrossTheProjectsModules) {
  put("pkg/__init__.py", "");
  put("pkg/config.py", "GPU_ID = 0\n");
  put("pkg/opts.py",
      "def add(parser):\n"
      "    parser.add_argument('--gpu', type=int, default=0)\n"
      "    parser.add_argument('--dist-backend', default='nccl')\n");
  put("pkg/train.py",
      "import torch\n"
      "import torch.distributed as dist\n"
      "from .config import GPU_ID\n"
      "def main(args, model):\n"
      "    dist.init_process_group(backend=args.dist_backend)\n"
      "    model.to(GPU_ID)\n"
      "    model.to(args.gpu)\n");
  for (const std::string target : {"npu", "cpu"}) {
    Options o = opts(target);
    o.force = true;
    RunResult r = go(o);
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const fs::path out = root_ / "out" / ("proj_" + target);
    const std::string train = get(out / "pkg/train.py");
    const std::string opts_py = get(out / "pkg/opts.py");
    if (target == "npu") {
      EXPECT_NE(train.find("model.to(torch.device(\"npu\", GPU_ID))"), std::string::npos) << train;
      EXPECT_NE(train.find("model.to(torch.device(\"npu\", args.gpu))"), std::string::npos)
          << train;
      EXPECT_NE(opts_py.find("default='hccl'"), std::string::npos) << opts_py;
    } else {
      EXPECT_EQ(train.find("model.to(GPU_ID)"), std::string::npos) << train;
      EXPECT_NE(train.find("    model.to(\"cpu\")\n    model.to(\"cpu\")\n"), std::string::npos)
          << train;
      EXPECT_NE(opts_py.find("default='gloo'"), std::string::npos) << opts_py;
    }
    const std::string report = get(out / "torchport-report/report.json");
    EXPECT_EQ(report.find("cannot resolve"), std::string::npos) << report;
  }
}

}  // namespace
}  // namespace torchport::project
