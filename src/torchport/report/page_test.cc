#include <gtest/gtest.h>
#include <torchport/report/page.h>

#include <nlohmann/json.hpp>

namespace torchport::report {
namespace {

using Lines = std::vector<std::string>;
using Views = std::vector<std::string_view>;

Views views(const Lines& lines) { return {lines.begin(), lines.end()}; }

TEST(PageLines, SplitAtEveryLineBreakPythonKnows) {
  // \r\n is one break; \v \f \x1c-\x1e U+0085 U+2028 U+2029 are breaks too; no line after the
  // last break, an empty line between two.
  EXPECT_EQ(page_lines("a\r\nb\rc\nd\ve\fg\x1ch\x1di\x1ej\xc2\x85k\xe2\x80\xa8l\xe2\x80\xa9m\n\nn"),
            (Lines{"a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "l", "m", "", "n"}));
  EXPECT_EQ(page_lines("x\n"), (Lines{"x"}));
  EXPECT_EQ(page_lines(""), Lines{});
  EXPECT_EQ(page_lines("\n"), (Lines{""}));
  // A 0x85 that continues another character is no break: U+0145 is C5 85.
  EXPECT_EQ(page_lines("\xc5\x85y"), (Lines{"\xc5\x85y"}));
}

TEST(PageLines, IllFormedBytesAreOneReplacementEachMaximalSubpart) {
  const std::string r = "\xef\xbf\xbd";
  // A surrogate's encoding: ED then A0 is no valid second byte: three replacements, as
  // Python's bytes.decode("utf-8", "replace"); a truncated 3-byte sequence is one.
  EXPECT_EQ(page_lines("\xed\xa0\x80"
                       "a\xe2\x80\n\xf0\x9f\x98\x80\xff"),
            (Lines{r + r + r + "a" + r, "\xf0\x9f\x98\x80" + r}));
}

TEST(PageLines, BinaryFileHasNoLines) {
  EXPECT_FALSE(source_lines(std::string("ab\0c", 4)).has_value());
  EXPECT_EQ(source_lines("ab\nc"), (Lines{"ab", "c"}));
}

TEST(PageChunk, ChangedAndFlaggedLinesWithContext) {
  Lines before;
  for (int i = 1; i <= 20; ++i) before.push_back("line " + std::to_string(i));
  Lines after(before.begin(), before.begin() + 2);
  after.push_back("import torch_npu");
  after.insert(after.end(), before.begin() + 2, before.end());
  after[10] = "line 10 changed";
  const Views after_views = views(after);
  // An insertion after line 2, a change of line 10, a finding on line 18: each with 3 lines
  // around it, the lines between left out as counts.
  EXPECT_EQ(page_chunk_js(7, "a.py", views(before), &after_views, {18}),
            "tpChunk(7,{\"file\":\"a.py\",\"diff\":true,\"rows\":[\"line 1\",\"line 2\","
            "[\"+\",\"import torch_npu\"],\"line 3\",\"line 4\",\"line 5\",1,\"line 7\","
            "\"line 8\",\"line 9\",[\"~\",\"line 10\",\"line 10 changed\"],\"line 11\","
            "\"line 12\",\"line 13\",1,\"line 15\",\"line 16\",\"line 17\",\"line 18\","
            "\"line 19\",\"line 20\"]});\n");
}

TEST(PageChunk, AnalyzeShowsTheSourceAroundFindings) {
  Lines src;
  for (int i = 1; i <= 30; ++i) src.push_back("l" + std::to_string(i));
  std::string want = "tpChunk(0,{\"file\":\"b.py\",\"diff\":false,\"rows\":[11";
  for (int i = 12; i <= 18; ++i) want += ",\"l" + std::to_string(i) + "\"";
  want += ",12]});\n";
  EXPECT_EQ(page_chunk_js(0, "b.py", views(src), nullptr, {15}), want);
}

TEST(PageChunk, ScriptEndTagsAndLineSeparatorsCannotEndTheScript) {
  const std::string js =
      page_chunk_js(1, "e.py", Views{"x = \"</script><!-- \xe2\x80\xa8 \x01 \\\""}, nullptr, {1});
  EXPECT_EQ(js,
            "tpChunk(1,{\"file\":\"e.py\",\"diff\":false,\"rows\":["
            "\"x = \\\"<\\/script><\\!-- \\u2028 \\u0001 \\\\\\\"\"]});\n");
}

TEST(AlignLines, RemovalsAndAdditionsKeepBothSidesNumbered) {
  Lines before;
  for (int i = 1; i <= 12; ++i) before.push_back("b" + std::to_string(i));
  // 2 lines added after b1, b6 and b7 removed.
  Lines after = {"b1", "new a", "new b", "b2", "b3", "b4", "b5", "b8", "b9", "b10", "b11", "b12"};
  std::vector<AlignedLine> got = align_lines(views(before), views(after));
  std::string tags;
  for (const AlignedLine& l : got) {
    tags += l.tag;
    if (l.tag == '=') {
      EXPECT_EQ(before[l.old_line - 1], after[l.new_line - 1]);
    }
  }
  EXPECT_EQ(tags, "=++====--=====");
  EXPECT_EQ(got[1].new_line, 2u);
  EXPECT_EQ(got[1].old_line, 0u);
  EXPECT_EQ(got[7].old_line, 6u);
  EXPECT_EQ(got[7].new_line, 0u);
  EXPECT_EQ(got[9].old_line, 8u);
  EXPECT_EQ(got[9].new_line, 8u);
}

TEST(AlignLines, ALineReplacedByTwoIsAChangeAndAnAddition) {
  std::vector<AlignedLine> got = align_lines(Views{"a", "x", "c"}, Views{"a", "y", "z", "c"});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[1].tag, '~');
  EXPECT_EQ(got[2].tag, '+');
  EXPECT_EQ(got[2].new_line, 3u);
  EXPECT_EQ(got[3].old_line, 3u);
  EXPECT_EQ(got[3].new_line, 4u);
}

TEST(AlignLines, AChangedLineBeforeItsTwinIsAChangeNotAnAdditionAndARemoval) {
  // torch's rpc_test.py: the first of two "cuda:0" lines becomes "npu:0". "npu:0" added, then
  // the second "cuda:0" removed, is as short an edit script, but not what happened.
  const Lines before = {"f(", "a", "\"cuda:0\",", "\"cuda:0\",", "b", "x", ")"};
  const Lines after = {"f(", "A", "\"npu:0\",", "\"cuda:0\",", "b", "X", ")"};
  std::string tags;
  for (const AlignedLine& l : align_lines(views(before), views(after))) tags += l.tag;
  EXPECT_EQ(tags, "=~~==~=");
}

TEST(NotebookView, CodeCellsUnderTheirNumber) {
  const std::string nb = R"({"cells": [
    {"cell_type": "markdown", "source": ["# title\n"]},
    {"cell_type": "code", "source": ["import torch\n", "x = 1"]},
    {"cell_type": "code", "source": "y = 2\n"}]})";
  std::optional<NotebookView> v = notebook_view(nb);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->lines, (Lines{"# %% cell 2", "import torch", "x = 1", "# %% cell 3", "y = 2"}));
  EXPECT_EQ(v->first, (std::map<std::uint32_t, std::uint32_t>{{2, 2}, {3, 5}}));
  EXPECT_FALSE(notebook_view("not json").has_value());
  EXPECT_FALSE(notebook_view("{}").has_value());
}

Report sample() {
  Report r;
  r.command = "migrate";
  r.target = "npu";
  r.input = "/p";
  r.output = "/o/p_npu";
  r.files = {{"a.py", Outcome::Success, "", true, true, 2, ""},
             {"nb.ipynb", Outcome::Success, "", false, false, 1, ""},
             {"bad.py", Outcome::Failure, "bad.py:1:1: invalid syntax", true, false, 0, ""}};
  r.rows = {
      {"a.py", 1, 1, 1, rules::Operation::Insert, "TP900", "torch_npu", "insert import", true,
       "safe", ""},
      {"a.py", 3, 3, 5, rules::Operation::Unsupported, "TP002", "flash_attn", "no", false, "", ""},
      {"nb.ipynb", 2, 2, 1, rules::Operation::Unknown, "TP950", "torch.foo", "no", false, "", ""}};
  r.rows[2].cell = 3;
  return r;
}

nlohmann::json page_data(const std::string& html) {
  const std::string open = "<script id=\"tp-data\" type=\"application/json\">";
  const std::size_t b = html.find(open) + open.size();
  return nlohmann::json::parse(html.substr(b, html.find("</script>", b) - b));
}

TEST(PageIndex, FilesAndRowsReferToInternedStrings) {
  const Report r = sample();
  const std::map<std::uint32_t, std::uint32_t> cells{{3, 10}};
  PageIndex index;
  index.chunks = {0, 1, -1};
  index.cells = {nullptr, &cells, nullptr};
  index.csvs = {"change_list.csv"};
  index.targets = {page_target(r)};
  index.targets[0].href = "../../p_npu/torchport-report/index.html";
  const std::string html = page_index_html(r, index);
  EXPECT_EQ(html.find("/*DATA*/"), std::string::npos);
  const nlohmann::json d = page_data(html);
  const nlohmann::json& s = d["strings"];
  EXPECT_EQ(d["command"], "migrate");
  EXPECT_EQ(d["summary"]["files"], 3);
  EXPECT_EQ(d["summary"]["unsupported"], 1);
  ASSERT_EQ(d["rows"].size(), 3u);
  // [file, page line, column, operation, code, api, message, applied (, cell, line)]
  EXPECT_EQ(d["rows"][1][0], 0);
  EXPECT_EQ(s[d["rows"][1][3].get<int>()], "UNSUPPORTED");
  EXPECT_EQ(s[d["rows"][1][5].get<int>()], "flash_attn");
  // The notebook's row: cell 3 starts at page line 10, its line 2 is page line 11.
  EXPECT_EQ(d["rows"][2],
            nlohmann::json::parse(R"([1, 11, 1, )" + std::to_string(d["rows"][2][3].get<int>()) +
                                  "," + std::to_string(d["rows"][2][4].get<int>()) + "," +
                                  std::to_string(d["rows"][2][5].get<int>()) + "," +
                                  std::to_string(d["rows"][2][6].get<int>()) + ", 0, 3, 2]"));
  // [file, outcome, reason, changed, errors, warnings, notes, chunk]
  EXPECT_EQ(d["files"][0][0], "a.py");
  EXPECT_EQ(d["files"][0][3], 1);
  EXPECT_EQ(d["files"][0][4], 1);
  EXPECT_EQ(d["files"][0][6], 1);
  EXPECT_EQ(s[d["files"][2][1].get<int>()], "Failure");
  EXPECT_EQ(s[d["files"][2][2].get<int>()], "bad.py:1:1: invalid syntax");
  EXPECT_EQ(d["files"][2][7], -1);
  EXPECT_EQ(d["third_party"], nlohmann::json::parse(R"(["flash_attn"])"));
  EXPECT_EQ(d["targets"][0]["unsupported"], 1);
  EXPECT_EQ(d["targets"][0]["third_party"], 1);
}

TEST(PageTarget, OtherRunsReportJsonFormat2) {
  const std::string json = R"({"format_version": 2, "target": "mlu", "input": "/p",
    "summary": {"changed": 2, "insert": 1, "modify": 3, "delete": 0, "unsupported": 4,
                "unknown": 5, "cuda_ops": 0},
    "columns": {"findings": ["file", "cell", "start_line", "end_line", "column", "operation",
                             "code", "api", "message", "applied", "applicability", "changes"]},
    "findings": [[1,0,1,1,1,2,3,4,0,0,0,0], [1,0,2,2,1,2,3,4,0,0,0,0], [1,0,3,3,1,2,3,5,0,0,0,0]],
    "strings": ["", "a.py", "UNSUPPORTED", "TP002", "apex", "flash_attn"]})";
  std::optional<PageTarget> t = page_target_of_json(json, "/p");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->target, "mlu");
  EXPECT_EQ(t->changes, 4u);
  EXPECT_EQ(t->unknown, 5u);
  EXPECT_EQ(t->third_party, 2u);  // apex and flash_attn
  EXPECT_FALSE(page_target_of_json(json, "/other").has_value());
  EXPECT_FALSE(page_target_of_json("{", "/p").has_value());
}

}  // namespace
}  // namespace torchport::report
