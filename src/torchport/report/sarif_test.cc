#include <gtest/gtest.h>
#include <torchport/report/sarif.h>

#include <nlohmann/json.hpp>

namespace torchport::report {
namespace {

using rules::Operation;

Report sample() {
  Report r;
  r.command = "analyze";
  r.target = "npu";
  r.input = "/work/my proj";
  r.rows = {
      {"train.py", 3, 3, 5, Operation::Modify, "TP100", "torch.cuda.synchronize",
       "change function torch.cuda.synchronize to torch_npu.npu.synchronize", false, "safe", ""},
      {"model/net, v2.py", 7, 9, 1, Operation::Unsupported, "TP002", "flash_attn",
       "flash_attn is CUDA-only: 100% of\nits kernels", false, "", ""},
      {"model/net.py", 12, 12, 9, Operation::Unknown, "TP998", "torch.foo", "-", false, "", ""},
  };
  r.files = {{"train.py", Outcome::Success, "", true, false, 1, ""},
             {"bad.py", Outcome::Failure, "bad.py:2:5: invalid syntax (copied unchanged)", true,
              false, 0, ""}};
  return r;
}

TEST(Sarif, ANotebookResultNamesItsCellAndClaimsNoRegionOfTheFile) {
  Report r = sample();
  Row row{"nb.ipynb", 2,     2,      5, Operation::Modify, "TP100", "torch.cuda.synchronize",
          "changed",  false, "safe", ""};
  row.cell = 3;
  r.rows = {row};
  nlohmann::json log = nlohmann::json::parse(sarif_json(r));
  const auto& loc = log["runs"][0]["results"][0]["locations"][0];
  EXPECT_EQ(loc["physicalLocation"]["artifactLocation"]["uri"], "nb.ipynb");
  EXPECT_FALSE(loc["physicalLocation"].contains("region"));
  EXPECT_EQ(loc["logicalLocations"][0]["name"], "cell3");
  EXPECT_EQ(loc["logicalLocations"][0]["fullyQualifiedName"], "nb.ipynb:cell3:2:5");
  EXPECT_EQ(loc["properties"]["cell"], 3);
  EXPECT_EQ(loc["properties"]["startLine"], 2);
  EXPECT_EQ(log["runs"][0]["results"][0]["message"]["text"],
            "cell 3, line 2, column 5: torch.cuda.synchronize: changed");
  const std::string gh = github_annotations(r, "");
  EXPECT_NE(gh.find("::notice file=nb.ipynb,title="), std::string::npos) << gh;
  EXPECT_NE(gh.find("::cell 3, line 2: torch.cuda.synchronize: changed"), std::string::npos) << gh;
}

TEST(Sarif, LevelsFollowTheOperation) {
  EXPECT_EQ(level(Operation::Unsupported), "error");
  EXPECT_EQ(level(Operation::Unknown), "warning");
  EXPECT_EQ(level(Operation::Modify), "note");
  EXPECT_EQ(level(Operation::Insert), "note");
  EXPECT_EQ(level(Operation::Delete), "note");
}

TEST(Sarif, OneResultPerRowAndANotificationPerFailedFile) {
  nlohmann::json log = nlohmann::json::parse(sarif_json(sample()));
  EXPECT_EQ(log["version"], "2.1.0");
  const auto& run = log["runs"][0];
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///work/my%20proj/");
  ASSERT_EQ(run["results"].size(), 3u);
  const auto& rules = run["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), 3u);  // TP002, TP100, TP998 in code order
  EXPECT_EQ(rules[0]["id"], "TP002");
  EXPECT_EQ(rules[0]["name"], "cuda-only-package");  // the registry's entry for TP002
  EXPECT_FALSE(rules[2].contains("name")) << "TP998 is not in the registry";
  EXPECT_EQ(rules[1]["shortDescription"]["text"],
            "torch.cuda.*, torch.backends.cudnn/cuda and other catalogued APIs");
  const auto& second = run["results"][1];
  EXPECT_EQ(second["ruleId"], "TP002");
  EXPECT_EQ(second["ruleIndex"], 0);
  EXPECT_EQ(second["level"], "error");
  const auto& loc = second["locations"][0]["physicalLocation"];
  EXPECT_EQ(loc["artifactLocation"]["uri"], "model/net,%20v2.py");
  EXPECT_EQ(loc["region"]["startLine"], 7);
  EXPECT_EQ(loc["region"]["endLine"], 9);
  EXPECT_EQ(loc["region"]["startColumn"], 1);
  const auto& inv = run["invocations"][0];
  EXPECT_EQ(inv["executionSuccessful"], false);
  const auto& note = inv["toolExecutionNotifications"][0];
  EXPECT_EQ(note["message"]["text"], "invalid syntax (copied unchanged)");
  EXPECT_EQ(note["locations"][0]["physicalLocation"]["region"]["startLine"], 2);
  EXPECT_EQ(note["locations"][0]["physicalLocation"]["region"]["startColumn"], 5);
}

TEST(GithubAnnotations, EscapePropertiesAndMessages) {
  std::string out = github_annotations(sample(), "src/");
  EXPECT_EQ(out,
            "::error file=src/bad.py,line=2,col=5,title=torchport%3A file not migrated::invalid "
            "syntax (copied unchanged)\n"
            "::notice file=src/train.py,line=3,col=5,title=torchport TP100 [MODIFY] "
            "(npu)::torch.cuda.synchronize: change function torch.cuda.synchronize to "
            "torch_npu.npu.synchronize\n"
            "::error file=src/model/net%2C v2.py,line=7,endLine=9,col=1,title=torchport TP002 "
            "[UNSUPPORTED] (npu)::flash_attn: flash_attn is CUDA-only: 100%25 of%0Aits kernels\n"
            "::warning file=src/model/net.py,line=12,col=9,title=torchport TP998 [UNKNOWN] "
            "(npu)::torch.foo: -\n");
}

}  // namespace
}  // namespace torchport::report
