#include <gtest/gtest.h>
#include <torchport/report/report.h>
#include <torchport/report/report_json_test_util.h>

#include <nlohmann/json.hpp>

namespace torchport::report {
namespace {

using rules::Operation;

Report sample() {
  Report r;
  r.command = "migrate";
  r.target = "npu";
  r.input = "proj";
  r.rows = {
      {"train.py", 3, 3, 5, Operation::Modify, "TP100", "torch.cuda.synchronize",
       "change function torch.cuda.synchronize to torch_npu.npu.synchronize", true, "safe", ""},
      {"train.py", 1, 1, 1, Operation::Insert, "TP001", "torch_npu", "insert import torch_npu",
       true, "safe", ""},
      {"model/net.py", 7, 9, 1, Operation::Unsupported, "TP300", "flash_attn",
       "flash_attn is CUDA-only, use SDPA", false, "", ""},
      {"model/net.py", 12, 12, 9, Operation::Unknown, "TP900", "torch.foo", "-", false, "", ""},
  };
  r.files = {{"train.py", Outcome::Success, "", true, true, 2, ""},
             {"bad.py", Outcome::Failure, "bad.py:2:5: invalid syntax", true, false, 0, ""},
             {"README.md", Outcome::Skip, "not Python: copied", false, false, 0, ""}};
  r.cuda_ops = {{"csrc/ops.cpp", "my_ops.fused_add"}};
  return r;
}

TEST(Rows, FilesRowsAreOneSequenceInTheOrderTheyJoined) {
  // Each file's rows join whole; files without rows leave no gap, and every reader (range-for,
  // size, [], a count, a writer) sees one sequence.
  auto row = [](std::string file, std::uint32_t line, Operation op) {
    Row r;
    r.file = std::move(file);
    r.start_line = r.end_line = line;
    r.op = op;
    r.api = "torch.cuda.f" + std::to_string(line);
    return r;
  };
  Report r;
  r.rows.append({});
  r.rows.append({row("a.py", 1, Operation::Modify), row("a.py", 7, Operation::Unknown)});
  r.rows.append({});
  r.rows.append({row("b.py", 2, Operation::Unknown)});
  r.rows.push_back(row("c.py", 3, Operation::Unsupported));
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_FALSE(r.rows.empty());
  std::vector<std::string> seen;
  for (const Row& x : r.rows) seen.push_back(x.file + ":" + std::to_string(x.start_line));
  EXPECT_EQ(seen, (std::vector<std::string>{"a.py:1", "a.py:7", "b.py:2", "c.py:3"}));
  EXPECT_EQ(r.rows[2].file, "b.py");
  EXPECT_EQ(r.rows[3].file, "c.py");
  EXPECT_THROW((void)r.rows[4], std::out_of_range);
  EXPECT_EQ(r.count(Operation::Unknown), 2u);
  EXPECT_EQ(std::distance(r.rows.begin(), r.rows.end()), 4);
  EXPECT_EQ(unknown_api_csv(r),
            "File,Start Line,End Line,OP,Tips\na.py,7,7,torch.cuda.f7,\nb.py,2,2,torch.cuda.f2,\n");

  Report none;
  none.rows.append({});
  EXPECT_TRUE(none.rows.empty());
  EXPECT_EQ(none.rows.begin(), none.rows.end());
}

TEST(Csv, ANotebookRowPutsItsCellInTheFileColumn) {
  Report r;
  r.command = "migrate";
  Row row{"nb dir/demo.ipynb",     2,    2,      9, Operation::Modify, "TP300", "torch.device",
          "replace device string", true, "safe", ""};
  row.cell = 3;
  r.rows = {row};
  EXPECT_EQ(change_list_csv(r),
            "File,Start Line,End Line,Operation Type,Message\n"
            "nb dir/demo.ipynb:cell3,2,2,MODIFY,replace device string\n");
  EXPECT_EQ(findings_text(r),
            "nb dir/demo.ipynb:cell3:2:9: TP300 [MODIFY] torch.device: "
            "replace device string\n");
  const auto j = testing::expand_report_json(report_json(r));
  EXPECT_EQ(j["findings"][0]["file"], "nb dir/demo.ipynb");
  EXPECT_EQ(j["findings"][0]["cell"], 3);
  EXPECT_EQ(j["findings"][0]["start_line"], 2);
  EXPECT_EQ(testing::expand_report_json(report_json_reference(r))["findings"][0]["cell"], 3);
  // A row of any other file has cell 0, which the reader leaves out.
  EXPECT_FALSE(testing::expand_report_json(report_json(sample()))["findings"][0].contains("cell"));
}

TEST(Csv, QuotesAndGuardsCells) {
  EXPECT_EQ(csv_cell("plain"), "plain");
  EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_cell("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
  EXPECT_EQ(csv_cell("-1+1"), "'-1+1");
  EXPECT_EQ(csv_cell("-"), "-") << "Ascend's 'no tip' marker stays as it is";
}

TEST(Csv, ChangeListHasAscendColumnsAndSkipsUnknown) {
  EXPECT_EQ(change_list_csv(sample()),
            "File,Start Line,End Line,Operation Type,Message\n"
            "train.py,3,3,MODIFY,change function torch.cuda.synchronize to "
            "torch_npu.npu.synchronize\n"
            "train.py,1,1,INSERT,insert import torch_npu\n"
            "model/net.py,7,9,UNSUPPORTED,\"flash_attn is CUDA-only, use SDPA\"\n");
}

TEST(Csv, UnsupportedAndUnknownLists) {
  EXPECT_EQ(unsupported_api_csv(sample()),
            "File,Start Line,End Line,OP,Tips\n"
            "model/net.py,7,9,flash_attn,\"flash_attn is CUDA-only, use SDPA\"\n");
  EXPECT_EQ(unknown_api_csv(sample()),
            "File,Start Line,End Line,OP,Tips\nmodel/net.py,12,12,torch.foo,-\n");
  EXPECT_EQ(cuda_op_list_csv(sample()), "File,Api\ncsrc/ops.cpp,my_ops.fused_add\n");
  EXPECT_EQ(unknown_api_csv(Report{}), "File,Start Line,End Line,OP,Tips\n");
}

TEST(Json, CarriesSummaryFilesAndFindings) {
  auto j = testing::expand_report_json(report_json(sample()));
  EXPECT_EQ(j["target"], "npu");
  EXPECT_EQ(j["summary"]["files"], 3);
  EXPECT_EQ(j["summary"]["failure"], 1);
  EXPECT_EQ(j["summary"]["modify"], 1);
  EXPECT_EQ(j["summary"]["unsupported"], 1);
  EXPECT_EQ(j["summary"]["unknown"], 1);
  EXPECT_EQ(j["files"][1]["reason"], "bad.py:2:5: invalid syntax");
  EXPECT_EQ(j["findings"].size(), 4u);
  EXPECT_EQ(j["findings"][2]["operation"], "UNSUPPORTED");
  EXPECT_EQ(j["findings"][0]["applied"], true);
  EXPECT_EQ(j["cuda_ops"][0]["api"], "my_ops.fused_add");
  EXPECT_EQ(j["findings"][3]["file"], "model/net.py");
  EXPECT_EQ(j["findings"][3]["start_line"], 12);
  EXPECT_EQ(j["findings"][3]["column"], 9);
  EXPECT_EQ(j["findings"][3]["code"], "TP900");
  EXPECT_EQ(j["findings"][3]["message"], "-");
  EXPECT_EQ(j["findings"][3]["applied"], false);
  EXPECT_EQ(j["files"][0]["changed"], true);
  EXPECT_EQ(j["files"][2]["outcome"], "Skip");
  EXPECT_FALSE(j["files"][0].contains("reason"));
}

TEST(Json, StoresEachStringOnceAndFindingsAsRows) {
  Report r = sample();
  const std::string message =
      "not in the supported list of upstream ascend-msfmktransplt/supported_op_<v>.json";
  for (std::uint32_t line = 20; line < 1020; ++line)
    r.rows.push_back({"model/net.py", line, line, 5, Operation::Unknown, "TP950",
                      line % 2 ? "torch.odd" : "torch.even", message, false, "", ""});
  const std::string text = report_json(r);
  // Each string once: the message of 1,000 findings, the file of 1,002, a code of 1,000.
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count('"' + message + '"'), 1u);
  EXPECT_EQ(count("\"model/net.py\""), 1u);
  EXPECT_EQ(count("\"TP950\""), 1u);
  EXPECT_EQ(count("\"torch.odd\""), 1u);
  // A finding is a row of numbers on its own line: 1,004 rows in well under 40 bytes each.
  EXPECT_LT(text.size(), 1004u * 40u) << text.size();
  const auto raw = nlohmann::json::parse(text);
  EXPECT_EQ(raw["format_version"], 2);
  EXPECT_EQ(raw["strings"][0], "");  // "" is 0: an absent reason, applicability, ...
  EXPECT_EQ(raw["findings"].size(), 1004u);
  EXPECT_EQ(raw["columns"]["findings"][7], "api");
  const auto& last = raw["findings"][1003];
  EXPECT_EQ(raw["strings"][last[7].get<std::size_t>()], "torch.odd");  // line 1019
  EXPECT_EQ(last[2], 1019);
  EXPECT_EQ(last[10], 0);  // no applicability
  // Expanded, the rows are the findings as they were made.
  const auto j = testing::expand_report_json(text);
  EXPECT_EQ(j["findings"][4]["api"], "torch.even");
  EXPECT_EQ(j["findings"][4]["message"], message);
  EXPECT_EQ(j["findings"][4]["operation"], "UNKNOWN");
  EXPECT_EQ(j["findings"][1003]["start_line"], 1019);
  EXPECT_EQ(j["summary"]["unknown"], 1001);
}

TEST(Report, BehaviourChangingFixesAreLabelled) {
  Report r = sample();
  r.rows[0].applicability = "unsafe";
  r.rows[0].changes = "changes behaviour: a value replaced by a constant";
  r.rows[1].changes = "numerics: autocast dtype pinned";
  const std::string csv = change_list_csv(r);
  EXPECT_NE(csv.find(",[unsafe fix: changes behaviour: a value replaced by a constant] change "
                     "function torch.cuda.synchronize"),
            std::string::npos)
      << csv;
  EXPECT_NE(csv.find(",[numerics: autocast dtype pinned] insert import torch_npu"),
            std::string::npos)
      << csv;
  auto j = testing::expand_report_json(report_json(r));
  EXPECT_EQ(j["findings"][0]["applicability"], "unsafe");
  EXPECT_EQ(j["findings"][0]["changes"], "changes behaviour: a value replaced by a constant");
  EXPECT_EQ(j["findings"][1]["applicability"], "safe");
  EXPECT_FALSE(j["findings"][2].contains("applicability"));  // no fix
  EXPECT_FALSE(j["findings"][2].contains("changes"));
  // Both JSON writers agree on the new fields.
  EXPECT_EQ(report_json(r), report_json_reference(r));
}

TEST(Json, FastWriterMatchesNlohmann) {
  Report r = sample();
  r.min_torch = "2.6";
  r.files[0].min_torch = "2.6";
  r.rows[1].message =
      std::string("ctl \x01\x1f\x7f tab\t nl\n cr\r ff\f bs\b q\" \\ caf\xc3\xa9 ") +
      "\xe2\x82\xac \xf0\x9f\x98\x80";
  EXPECT_EQ(report_json(r), report_json_reference(r));
  EXPECT_EQ(report_json(Report{}), report_json_reference(Report{}));
  Report bad = sample();
  // Not UTF-8 (a file name can be anything): the JSON stays valid, the bad bytes become U+FFFD.
  bad.rows[0].api = "\xed\xa0\x80";  // a surrogate
  EXPECT_EQ(testing::expand_report_json(report_json(bad))["findings"][0]["api"],
            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd")
      << "each bad byte of the surrogate becomes U+FFFD";
  bad.rows[0].api = "\xc3";  // truncated
  EXPECT_TRUE(nlohmann::json::parse(report_json(bad)).is_object());
}

TEST(Text, LogLineAndSummaryTable) {
  Report r = sample();
  EXPECT_EQ(log_line(r.rows[0]),
            "train.py: line: 3 ~ 3   Operation Type: MODIFY   Message: change function "
            "torch.cuda.synchronize to torch_npu.npu.synchronize");
  r.min_torch = "2.9";
  EXPECT_EQ(summary_table(r),
            "+---------------------+------------+\n"
            "| files               | statistics |\n"
            "+---------------------+------------+\n"
            "| change_list.csv     |          3 |\n"
            "| unsupported_api.csv |          1 |\n"
            "| unknown_api.csv     |          1 |\n"
            "| cuda_op_list.csv    |          1 |\n"
            "+---------------------+------------+\n"
            "3 files (2 Python): 1 success, 1 failure, 1 skipped; 1 changed\n"
            "the output needs torch >= 2.9\n");
  r.command = "analyze";  // nothing is changed by analyze: not counted
  EXPECT_NE(summary_table(r).find("1 skipped\nthe output"), std::string::npos) << summary_table(r);
  // analyze without -o writes no CSV: the table says what it counted, not file names.
  EXPECT_EQ(summary_table(r, false),
            "+------------------+------------+\n"
            "| findings         | count      |\n"
            "+------------------+------------+\n"
            "| changes          |          3 |\n"
            "| unsupported APIs |          1 |\n"
            "| unknown APIs     |          1 |\n"
            "| custom CUDA ops  |          1 |\n"
            "+------------------+------------+\n"
            "3 files (2 Python): 1 success, 1 failure, 1 skipped\n"
            "the output needs torch >= 2.9\n");
}

TEST(Text, FindingsAreLocatedPathLineCol) {
  std::string t = findings_text(sample());
  EXPECT_NE(t.find("bad.py:2:5: invalid syntax\n"), std::string::npos);
  EXPECT_NE(t.find("model/net.py:7:1: TP300 [UNSUPPORTED] flash_attn: flash_attn is CUDA-only"),
            std::string::npos);
}

TEST(Version, MaxComparesNumerically) {
  EXPECT_EQ(max_version("2.9", "2.10"), "2.10");
  EXPECT_EQ(max_version("2.6", ""), "2.6");
  EXPECT_EQ(max_version("", "2.7"), "2.7");
  EXPECT_EQ(max_version("2.13", "2.6"), "2.13");
}

TEST(Report, AdviceCsvsHaveAscendColumnsAndNaForProjectRows) {
  Report r;
  r.has_advice = true;
  r.advice.push_back({"a/train.py", 3, 4, rules::Advice::Kind::Precision, "torch.matmul", "",
                      "may differ, see x", ""});
  r.advice.push_back({"", 0, 0, rules::Advice::Kind::Performance, "TASK_QUEUE_ENABLE", "",
                      "project-level (no file or line): set it", ""});
  r.advice.push_back({"a/m.py", 7, 7, rules::Advice::Kind::Affinity, "torch.roll", "torch", "",
                      "torch_npu.contrib.function.roll"});
  EXPECT_EQ(
      api_precision_advice_csv(r),
      "File,Start Line,End Line,OP,Tips\na/train.py,3,4,torch.matmul,\"may differ, see x\"\n");
  EXPECT_EQ(
      api_performance_advice_csv(r),
      "File,Start Line,End Line,OP,Tips\nNA,NA,NA,TASK_QUEUE_ENABLE,project-level (no file or "
      "line): set it\n");
  EXPECT_EQ(affinity_api_call_csv(r),
            "File,Start Line,End Line,Api Type,Api Call Name,Affinity Api Name\n"
            "a/m.py,7,7,torch,torch.roll,torch_npu.contrib.function.roll\n");
  EXPECT_EQ(report_json(r), report_json_reference(r));
  const auto j = testing::expand_report_json(report_json(r));
  ASSERT_EQ(j["advice"].size(), 3u) << report_json(r);
  EXPECT_EQ(j["advice"][1]["kind"], "performance");
  EXPECT_EQ(j["advice"][1]["start_line"], 0);  // project-level: no site
  EXPECT_EQ(j["advice"][1]["tips"], "project-level (no file or line): set it");
  EXPECT_EQ(j["advice"][2]["affinity_api"], "torch_npu.contrib.function.roll");
  EXPECT_EQ(j["advice"][0]["file"], "a/train.py");
  EXPECT_EQ(j["advice"][0]["end_line"], 4);
  EXPECT_NE(summary_table(r).find("affinity_api_call.csv"), std::string::npos);
  r.has_advice = false;  // a target without advice lists: no "advice" key, no table rows
  EXPECT_EQ(report_json(r).find("\"advice\""), std::string::npos);
  EXPECT_EQ(summary_table(r).find("advice"), std::string::npos);
}

}  // namespace
}  // namespace torchport::report
