#include <gtest/gtest.h>
#include <torchport/fix/apply.h>

namespace torchport::fix {
namespace {

Fix one(std::uint32_t b, std::uint32_t e, std::string r, Applicability a = Applicability::Safe) {
  return Fix{{Edit{b, e, std::move(r)}}, a};
}

TEST(Apply, ReplacesOnlyTheEditedBytes) {
  std::string src = "x = torch.cuda.synchronize()\r\ny = 1  # cuda\n";
  //                     ^4        ^14
  auto r = apply_fixes(src, {one(4, 14, "torch_npu.npu")});
  EXPECT_EQ(r.text, "x = torch_npu.npu.synchronize()\r\ny = 1  # cuda\n");
  EXPECT_EQ(r.applied(), 1u);
}

TEST(Apply, OrderOfInputDoesNotMatterForDisjointEdits) {
  std::string src = "a.cuda(); b.cuda()";
  auto r1 = apply_fixes(src, {one(2, 6, "npu"), one(12, 16, "npu")});
  auto r2 = apply_fixes(src, {one(12, 16, "npu"), one(2, 6, "npu")});
  EXPECT_EQ(r1.text, "a.npu(); b.npu()");
  EXPECT_EQ(r2.text, r1.text);
}

TEST(Apply, OverlappingFixIsSkippedWholeAndTheEarlierWins) {
  std::string src = "torch.cuda.amp.autocast()";
  Fix wide = one(0, 23, "torch.amp.autocast");
  Fix narrow{{Edit{6, 10, "npu"}, Edit{24, 24, "device_type='npu'"}}, Applicability::Safe};
  auto r = apply_fixes(src, {narrow, wide});
  // wide starts at 0, narrow at 6: wide is taken first and narrow overlaps it.
  EXPECT_EQ(r.text, "torch.amp.autocast()");
  EXPECT_EQ(r.outcomes[0], FixOutcome::Overlap);
  EXPECT_EQ(r.outcomes[1], FixOutcome::Applied);
  // The second edit of the skipped fix was not applied either.
  EXPECT_EQ(r.text.find("device_type"), std::string::npos);
}

TEST(Apply, TiesAtTheSameOffsetGoToTheFirstInInputOrder) {
  std::string src = "cuda";
  auto r = apply_fixes(src, {one(0, 4, "npu"), one(0, 4, "mlu")});
  EXPECT_EQ(r.text, "npu");
  EXPECT_EQ(r.outcomes[1], FixOutcome::Overlap);
}

TEST(Apply, InsertionsAtTheBoundaryOfAReplacementAreNotOverlaps) {
  std::string src = "import torch\nx.cuda()\n";
  auto r = apply_fixes(src, {one(13, 13, "import torch_npu\n"), one(15, 19, "npu")});
  EXPECT_EQ(r.text, "import torch\nimport torch_npu\nx.npu()\n");
  // An insertion strictly inside a replaced range is an overlap.
  auto r2 = apply_fixes(src, {one(13, 21, "y"), one(16, 16, "!")});
  EXPECT_EQ(r2.outcomes[1], FixOutcome::Overlap);
  EXPECT_EQ(r2.text, "import torch\ny\n");
}

TEST(Apply, SeveralInsertionsAtOneOffsetKeepTheirOrder) {
  auto r = apply_fixes("ab", {one(1, 1, "1"), one(1, 1, "2"), one(1, 1, "3")});
  EXPECT_EQ(r.text, "a123b");
}

TEST(Apply, IdenticalEditsFromTwoRulesAreAppliedOnce) {
  auto r = apply_fixes("import torch\n",
                       {one(13, 13, "import torch_npu\n"), one(13, 13, "import torch_npu\n")});
  EXPECT_EQ(r.text, "import torch\nimport torch_npu\n");
  EXPECT_EQ(r.outcomes[1], FixOutcome::Duplicate);
}

TEST(Apply, UnsafeAndDisplayOnlyFixesNeedPermission) {
  std::vector<Fix> fixes = {one(0, 1, "A", Applicability::Unsafe),
                            one(1, 2, "B", Applicability::DisplayOnly), one(2, 3, "C")};
  EXPECT_EQ(apply_fixes("abc", fixes, Applicability::Safe).text, "abC");
  EXPECT_EQ(apply_fixes("abc", fixes, Applicability::Unsafe).text, "AbC");
  EXPECT_EQ(apply_fixes("abc", fixes, Applicability::Safe).outcomes[0], FixOutcome::NotApplicable);
  // The default is migrate's (kDefaultApplied: Unsafe); display-only fixes are never applied.
  EXPECT_EQ(apply_fixes("abc", fixes).text, "AbC");
  EXPECT_EQ(apply_fixes("abc", fixes).outcomes[1], FixOutcome::NotApplicable);
}

TEST(Apply, InvalidRangesAreRejectedNotApplied) {
  auto r = apply_fixes("abc", {one(2, 1, "x"), one(1, 9, "y"), Fix{}});
  EXPECT_EQ(r.text, "abc");
  EXPECT_EQ(r.outcomes[0], FixOutcome::Invalid);
  EXPECT_EQ(r.outcomes[1], FixOutcome::Invalid);
  EXPECT_EQ(r.outcomes[2], FixOutcome::Invalid);
  // A fix whose own edits overlap is invalid too.
  auto r2 = apply_fixes("abcdef", {Fix{{Edit{0, 3, "x"}, Edit{2, 4, "y"}}, Applicability::Safe}});
  EXPECT_EQ(r2.outcomes[0], FixOutcome::Invalid);
}

TEST(Apply, AppliedEditsAreReportedInPositionOrder) {
  auto r = apply_fixes("a b c", {one(4, 5, "Z"), one(0, 1, "X")});
  ASSERT_EQ(r.edits.size(), 2u);
  EXPECT_EQ(r.edits[0].edit.begin, 0u);
  EXPECT_EQ(r.edits[0].fix, 1u);
  EXPECT_EQ(r.edits[1].fix, 0u);
}

TEST(Apply, InsertionsAtOneOffsetGoInTheirDeclaredOrderThenInTheOrderTaken) {
  std::string src = "x = 1\n";
  Fix late = one(0, 0, "c\n");
  late.edits[0].order = 1;  // after the rest (the statements of a --rules file)
  Fix early = one(0, 0, "a\n");
  early.edits[0].order = -1;  // before the rest (a variable the others use)
  // Taken in input order: late, b, early; applied by order: early, b, late.
  auto r = apply_fixes(src, {late, one(0, 0, "b\n"), early});
  EXPECT_EQ(r.text, "a\nb\nc\nx = 1\n");
  // Equal orders keep the order taken.
  auto r2 = apply_fixes(src, {one(0, 0, "b\n"), one(0, 0, "d\n")});
  EXPECT_EQ(r2.text, "b\nd\nx = 1\n");
  // A replacement at the same offset still comes after every insertion there.
  Fix rep = one(0, 1, "y");
  auto r3 = apply_fixes(src, {rep, late});
  EXPECT_EQ(r3.text, "c\ny = 1\n");
}

}  // namespace
}  // namespace torchport::fix
