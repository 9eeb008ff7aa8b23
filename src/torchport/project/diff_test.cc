#include <gtest/gtest.h>
#include <torchport/fix/apply.h>
#include <torchport/project/diff.h>

namespace torchport::project {
namespace {

std::string diff_of(const std::string& before, std::vector<fix::Fix> fixes, unsigned ctx = 3) {
  fix::ApplyResult r = fix::apply_fixes(before, fixes);
  return unified_diff("f.py", before, r.text, r.edits, ctx);
}

fix::Fix edit(std::uint32_t b, std::uint32_t e, std::string r) {
  return fix::Fix{{fix::Edit{b, e, std::move(r)}}, fix::Applicability::Safe};
}

TEST(Diff, NoEditsNoDiff) { EXPECT_EQ(diff_of("a\n", {}), ""); }

TEST(Diff, OneChangedLineWithContext) {
  std::string src = "a\nb\nx.cuda()\nc\nd\n";
  //                  0 2 4     ^6
  EXPECT_EQ(diff_of(src, {edit(6, 10, "npu")}, 1),
            "--- a/f.py\n+++ b/f.py\n"
            "@@ -2,3 +2,3 @@\n"
            " b\n"
            "-x.cuda()\n"
            "+x.npu()\n"
            " c\n");
}

TEST(Diff, InsertedLineTouchesNoOtherLine) {
  std::string src = "import torch\nx = 1\n";
  EXPECT_EQ(diff_of(src, {edit(13, 13, "import torch_npu\n")}),
            "--- a/f.py\n+++ b/f.py\n"
            "@@ -1,2 +1,3 @@\n"
            " import torch\n"
            "+import torch_npu\n"
            " x = 1\n");
}

TEST(Diff, DeletedLine) {
  std::string src = "a\nimport amp_C\nb\n";
  EXPECT_EQ(diff_of(src, {edit(2, 15, "")}),
            "--- a/f.py\n+++ b/f.py\n"
            "@@ -1,3 +1,2 @@\n"
            " a\n"
            "-import amp_C\n"
            " b\n");
}

TEST(Diff, DistantChangesGetTheirOwnHunks) {
  std::string src = "c1\nl2\nl3\nl4\nl5\nl6\nc7\n";
  EXPECT_EQ(diff_of(src, {edit(0, 2, "C1"), edit(18, 20, "C7")}, 1),
            "--- a/f.py\n+++ b/f.py\n"
            "@@ -1,2 +1,2 @@\n"
            "-c1\n"
            "+C1\n"
            " l2\n"
            "@@ -6,2 +6,2 @@\n"
            " l6\n"
            "-c7\n"
            "+C7\n");
}

TEST(Diff, CrlfAndMissingFinalNewline) {
  std::string src = "a\r\nx.cuda()";
  EXPECT_EQ(diff_of(src, {edit(5, 9, "npu")}),
            "--- a/f.py\n+++ b/f.py\n"
            "@@ -1,2 +1,2 @@\n"
            " a\r\n"
            "-x.cuda()\n"
            "\\ No newline at end of file\n"
            "+x.npu()\n"
            "\\ No newline at end of file\n");
}

}  // namespace
}  // namespace torchport::project
