#include <gtest/gtest.h>
#include <torchport/notebook/ipython.h>

namespace torchport::notebook {
namespace {

std::vector<bool> masks(const MaskedCell& m) { return m.masked; }

TEST(IPython, LineMagicsShellAndHelpBecomeComments) {
  const MaskedCell m =
      mask_cell("%pip install diffusers\n!nvidia-smi\n?torch\nx = 1\ntorch.cuda?\n");
  EXPECT_EQ(m.kind, CellKind::Python);
  EXPECT_EQ(m.text, "#%pip install diffusers\n#!nvidia-smi\n#?torch\nx = 1\n#torch.cuda?\n");
  EXPECT_EQ(masks(m), (std::vector<bool>{true, true, true, false, true}));
}

TEST(IPython, AnIndentedMagicIsPassSoTheBlockStillParses) {
  const MaskedCell m = mask_cell("for i in range(2):\n    !echo $i\n    %time f()\n");
  EXPECT_EQ(m.text, "for i in range(2):\n    pass\n    pass\n");
}

TEST(IPython, AssignmentsFromShellAndMagicsAreMasked) {
  const MaskedCell m = mask_cell("files = !ls\na, b = %sx echo 1\nc = 5 % 2\nd != e\n");
  EXPECT_EQ(m.text, "#files = !ls\n#a, b = %sx echo 1\nc = 5 % 2\nd != e\n");
}

TEST(IPython, AutomagicLinesAreMaskedButPythonUsesOfTheNamesAreNot) {
  const MaskedCell m = mask_cell(
      "pip install torch numpy\ncd data\ntime = 5\nrun(x)\ntime.sleep(1)\npip if a else b\nls\n");
  EXPECT_EQ(
      m.text,
      "#pip install torch numpy\n#cd data\ntime = 5\nrun(x)\ntime.sleep(1)\npip if a else b\nls\n");
}

TEST(IPython, AutoCallEscapesAreMasked) {
  const MaskedCell m = mask_cell("/print 1\n,print a b\n;print a b\n");
  EXPECT_EQ(m.text, "#/print 1\n#,print a b\n#;print a b\n");
}

TEST(IPython, EscapesInsideStringsBracketsAndCommentsAreNotMagics) {
  const std::string src =
      "s = \"\"\"\n%not a magic\n!nor this\n\"\"\"\n"
      "t = f(1,\n%2)\n"
      "u = 'what?'\n"
      "# really?\n"
      "v = 1  # why?\n";
  const MaskedCell m = mask_cell(src);
  EXPECT_EQ(m.text, src);
  for (bool b : m.masked) EXPECT_FALSE(b);
}

TEST(IPython, ABackslashContinuesAMagicOntoTheNextLines) {
  const MaskedCell m = mask_cell("!pip install a \\\n    b \\\n    c\nimport torch\n");
  EXPECT_EQ(m.text, "#!pip install a \\\n#    b \\\n#    c\nimport torch\n");
}

TEST(IPython, CellMagicsThatRunPythonKeepTheirBody) {
  const MaskedCell m = mask_cell("\n%%time\nx = torch.ones(1).cuda()\n");
  EXPECT_EQ(m.kind, CellKind::Python);
  EXPECT_EQ(m.magic, "time");
  EXPECT_EQ(m.text, "\n#%%time\nx = torch.ones(1).cuda()\n");
  EXPECT_EQ(masks(m), (std::vector<bool>{false, true, false}));
}

TEST(IPython, OtherCellMagicsAreForeign) {
  for (const char* src :
       {"%%bash\nexport CUDA_VISIBLE_DEVICES=0\n",
        "%%writefile train.py\nimport torch\nx = torch.ones(1).cuda()", "%%sh -e\n  echo hi\n"}) {
    const MaskedCell m = mask_cell(src);
    EXPECT_EQ(m.kind, CellKind::Foreign) << src;
    for (bool b : m.masked) EXPECT_TRUE(b) << src;
  }
  EXPECT_EQ(mask_cell("%%writefile train.py\nimport torch").magic, "writefile");
}

TEST(IPython, LineBreaksAndLineCountAreKept) {
  const MaskedCell m = mask_cell("!ls\r\nx = 1\r%who");
  EXPECT_EQ(m.text, "#!ls\r\nx = 1\r#%who");
  EXPECT_EQ(split_lines(m.text).size(), 3u);
}

TEST(IPython, ControlCharactersOfAMaskedLineCannotBreakTheComment) {
  EXPECT_EQ(mask_cell("!echo \x0c"
                      "a\n")
                .text,
            "#!echo  a\n");
}

TEST(IPython, SplitLinesCountsAsTheLineIndexDoes) {
  const std::vector<LineSpan> l = split_lines("a\nb\r\nc\rd");
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[1].begin, 2u);
  EXPECT_EQ(l[1].content_end, 3u);
  EXPECT_EQ(l[1].end, 5u);
  EXPECT_EQ(l[3].end, 8u);
  EXPECT_TRUE(split_lines("").empty());
}

}  // namespace
}  // namespace torchport::notebook
