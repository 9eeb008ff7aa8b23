// Conflicts between rules, resolved from what the findings declare (resolve.h): a rule never
// removes or edits another's finding.
#include <gtest/gtest.h>
#include <torchport/rules/context.h>
#include <torchport/rules/resolve.h>

#include <algorithm>
#include <string>

namespace torchport::rules {
namespace {

Finding rewrite(std::string code, std::uint32_t b, std::uint32_t e, std::string text) {
  Draft d = report(Operation::Modify, "api", "msg", b, e);
  d.fix = fix::Fix{{fix::Edit{b, e, std::move(text)}}, fix::Applicability::Safe};
  return finding(code, std::move(d));
}

std::vector<std::string> codes(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const Finding& f : fs) out.push_back(f.code);
  return out;
}

TEST(Resolve, TakenCodeCarriesTheRewritesInsideItToWhereTheFixMovesIt) {
  //                      0         1         2
  //                      012345678901234567890123456
  const std::string src = "n = torch.cuda.device_count()\n";
  std::vector<Finding> fs;
  fs.push_back(rewrite("TP100", 4, 14, "torch.npu"));  // inside the moved call
  fs.push_back(rewrite("TP999", 0, 1, "m"));           // outside: stays
  // The fix moves the call [4, 29) onto a line of its own at 0 and names it `k`.
  Draft d = report(Operation::Modify, "torch.cuda.device_count", "moved", 4, 29);
  d.fix = fix::Fix{{fix::Edit{0, 0, "k = \n"}, fix::Edit{4, 29, "k"}}, fix::Applicability::Safe};
  fs.push_back(finding("TP403", std::move(d).taking(4, 29, std::pair{std::size_t{0}, 4})));
  resolve_family(src, fs, 2);
  EXPECT_EQ(codes(fs), (std::vector<std::string>{"TP999", "TP403"}));
  EXPECT_EQ(fs[1].fix->edits[0].replacement, "k = torch.npu.device_count()\n");
  EXPECT_EQ(fs[1].fix->edits[1].replacement, "k");
}

TEST(Resolve, TakenCodeWithoutAPlaceTakesTheFindingsInsideItOnlyIncludingItsEdges) {
  const std::string src = "x.cuda(torch.cuda.current_device())";
  std::vector<Finding> fs;
  fs.push_back(rewrite("TP100", 7, 17, "torch.npu"));  // starts at the taken range's begin
  fs.push_back(rewrite("TP300", 0, 1, "y"));
  Draft d = report(Operation::Modify, ".cuda", "index dropped", 2, 35);
  d.fix = fix::Fix{{fix::Edit{7, 34, "\"npu\""}}, fix::Applicability::Safe};
  fs.push_back(finding("TP301", std::move(d).taking(7, 34)));
  resolve_family(src, fs, 2);
  EXPECT_EQ(codes(fs), (std::vector<std::string>{"TP300", "TP301"}));
  EXPECT_EQ(fs[1].fix->edits[0].replacement, "\"npu\"");  // nothing spliced in
}

TEST(Resolve, OnlyTheFindingsMadeBeforeATakeGoWithIt) {
  const std::string src = "abcdefghij";
  std::vector<Finding> fs;
  Draft d = report(Operation::Modify, "a", "b", 0, 10);
  d.fix = fix::Fix{{fix::Edit{0, 10, "z"}}, fix::Applicability::Safe};
  fs.push_back(finding("TP403", std::move(d).taking(0, 10)));
  fs.push_back(rewrite("TP100", 2, 3, "q"));  // made after it: the applier judges the overlap
  resolve_family(src, fs, 0);
  EXPECT_EQ(codes(fs), (std::vector<std::string>{"TP403", "TP100"}));
}

TEST(Resolve, AnArgumentListOpenedByADeletionLosesTheLeadingCommaOfWhatIsInsertedThere) {
  //                      0         1         2
  //                      0123456789012345678901234
  const std::string src = "torch.load(f, map_location)";
  std::vector<Finding> fs;
  Draft ins = report(Operation::Insert, "torch.load", "add map_location", 12, 12);
  ins.fix = fix::Fix{{fix::Edit{12, 12, ", map_location=dev"}}, fix::Applicability::Safe};
  fs.push_back(finding("TP300", std::move(ins)));
  Draft other = report(Operation::Insert, "x", "y", 30, 30);  // elsewhere: untouched
  other.fix = fix::Fix{{fix::Edit{30, 30, ", z"}}, fix::Applicability::Safe};
  fs.push_back(finding("TP999", std::move(other)));
  Draft del = report(Operation::Delete, "torch.load", "delete f", 11, 12);
  del.fix = fix::Fix{{fix::Edit{11, 26, ""}}, fix::Applicability::Safe};
  del.opens_arguments = std::pair{std::uint32_t{12}, std::uint32_t{26}};
  fs.push_back(finding("TP800", std::move(del)));
  resolve_family(src, fs, 2);
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].fix->edits[0].replacement, "map_location=dev");
  EXPECT_EQ(fs[1].fix->edits[0].replacement, ", z");
}

TEST(Resolve, ADroppedRangeTakesOnlyFindingsWhoseEditsAreInsideItAndInsertionsStrictlyInside) {
  const std::string src = "f(a, device_ids=[torch.cuda.current_device()])";
  std::vector<Finding> fs;
  fs.push_back(rewrite("TP100", 17, 27, "torch.npu"));  // inside
  fs.push_back(rewrite("TP999", 5, 5, "x"));            // an insertion at the range's edge
  Draft d = report(Operation::Delete, "device_ids", "dropped", 3, 46);
  d.fix = fix::Fix{{fix::Edit{3, 46, ""}}, fix::Applicability::Unsafe};
  fs.push_back(finding("TP402", std::move(d).dropping(5, 46)));
  resolve_family(src, fs, 2);
  EXPECT_EQ(codes(fs), (std::vector<std::string>{"TP999", "TP402"}));
}

TEST(Resolve, WhatACodeIsAboutIsDeclaredInTheRegistryWhichIsInCodeOrder) {
  const auto reg = registry();
  EXPECT_TRUE(std::is_sorted(reg.begin(), reg.end(),
                             [](const RuleInfo& a, const RuleInfo& b) { return a.code < b.code; }));
  for (const RuleInfo& r : reg) EXPECT_EQ(find_rule(r.code), &r) << r.code;
  EXPECT_EQ(find_rule("TP000"), nullptr);
  EXPECT_EQ(subject_of(rewrite("TP960", 0, 1, "")), Subject::TorchVersion);
  EXPECT_EQ(subject_of(rewrite("TP210", 0, 1, "")), Subject::TargetLimit);
  EXPECT_EQ(subject_of(rewrite("TP300", 0, 1, "")), Subject::Cuda);
  EXPECT_TRUE(renames_in_place(rewrite("TP100", 0, 1, "")));
  EXPECT_FALSE(renames_in_place(rewrite("TP300", 0, 1, "")));
  EXPECT_FALSE(renames_in_place(finding("TP100", report(Operation::Unknown, "a", "b", 0, 1))));
}

}  // namespace
}  // namespace torchport::rules
