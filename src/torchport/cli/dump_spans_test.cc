// The `dev dump-spans` record: the kinds and spans the conformance harness compares with ast.
#include <gtest/gtest.h>
#include <torchport/cli/dump_spans.h>

#include <nlohmann/json.hpp>

namespace torchport::cli {
namespace {

TEST(DumpSpans, NodesInPreOrderWithCPythonSpans) {
  nlohmann::json j = nlohmann::json::parse(dump_spans_json("a.py", "x = f(a, k='s')\n"));
  EXPECT_EQ(j["path"], "a.py");
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["roundtrip"], true);
  nlohmann::json want = nlohmann::json::parse(R"([
    ["Assign", 1, 0, 1, 15], ["Name", 1, 0, 1, 1], ["Call", 1, 4, 1, 15],
    ["Name", 1, 4, 1, 5], ["Name", 1, 6, 1, 7], ["keyword", 1, 9, 1, 14],
    ["Constant", 1, 11, 1, 14]])");
  EXPECT_EQ(j["nodes"], want);
}

TEST(DumpSpans, OnlyLiteralConstantsAndOuterJoinedStr) {
  // None/True/... and the literal parts and format spec of an f-string are not dumped.
  nlohmann::json j = nlohmann::json::parse(dump_spans_json("a.py", "None, 1, f'a{b:>3}'\n"));
  nlohmann::json want = nlohmann::json::parse(R"([
    ["Constant", 1, 6, 1, 7], ["JoinedStr", 1, 9, 1, 19], ["Name", 1, 13, 1, 14]])");
  EXPECT_EQ(j["nodes"], want);
}

TEST(DumpSpans, WithitemAndMatchCase) {
  nlohmann::json j = nlohmann::json::parse(
      dump_spans_json("a.py", "with a as b: pass\nmatch x:\n    case 1:\n        y\n"));
  nlohmann::json want = nlohmann::json::parse(R"([
    ["With", 1, 0, 1, 17], ["withitem", 1, 5, 1, 11], ["Name", 1, 5, 1, 6],
    ["Name", 1, 10, 1, 11], ["Name", 2, 6, 2, 7], ["match_case", 3, 9, 4, 9],
    ["Constant", 3, 9, 3, 10], ["Name", 4, 8, 4, 9]])");
  EXPECT_EQ(j["nodes"], want);
}

TEST(DumpSpans, Errors) {
  nlohmann::json j = nlohmann::json::parse(dump_spans_json("b.py", "x = = 1\n"));
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["line"], 1);
  EXPECT_EQ(j["error"]["col"], 4);
  EXPECT_EQ(j["error"]["message"], "invalid syntax");
  nlohmann::json d = nlohmann::json::parse(dump_spans_json("c.py", "x = 1\ny = '\xff'\n"));
  EXPECT_EQ(d["ok"], false);
  EXPECT_EQ(d["error"]["line"], 2);
  EXPECT_NE(d["error"]["message"].get<std::string>().find("utf-8"), std::string::npos);
}

}  // namespace
}  // namespace torchport::cli
