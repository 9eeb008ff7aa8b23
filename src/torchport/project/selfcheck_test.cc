#include <gtest/gtest.h>
#include <torchport/fix/apply.h>
#include <torchport/project/selfcheck.h>
#include <torchport/syntax/parser.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace torchport::project {
namespace {

namespace fs = std::filesystem;

struct Edited {
  std::string original, after;
  std::vector<std::uint32_t> cuts;
  std::vector<fix::AppliedEdit> edits;
};

// Applies `edits` (any order) to `original` the way migrate does.
Edited edit(std::string original, std::vector<fix::Edit> edits) {
  syntax::Tree t = syntax::parse("t.py", original);
  EXPECT_TRUE(t.ok()) << original;
  Edited e;
  e.cuts = statement_cuts(t);
  std::vector<fix::Fix> fixes;
  for (fix::Edit& ed : edits) fixes.push_back(fix::Fix{{std::move(ed)}});
  fix::ApplyResult r = fix::apply_fixes(original, fixes);
  e.original = std::move(original);
  e.after = std::move(r.text);
  e.edits = std::move(r.edits);
  return e;
}

bool proven(const Edited& e) {
  return edited_statements_parse("t.py", e.original, e.after, e.cuts, e.edits);
}

TEST(SelfCheck, CutsAreLineStartsOfModuleLevelStatements) {
  const std::string src =
      "import torch\n"              // 0
      "x = (1,\n2); y = 3\n"        // 13: y's line holds the end of x's statement
      "a = 1; b = 2\n"              // 31
      "# comment\n"                 // 44
      "@dec\n@dec2(1)\ndef f():\n"  // 54: the def's cut is its first decorator's line
      "    return 1\n"
      "class C:\n    pass\n";
  syntax::Tree t = syntax::parse("t.py", src);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(statement_cuts(t), (std::vector<std::uint32_t>{0, 13, 31, 54, 90}));
}

TEST(SelfCheck, EditedStatementsThatParseProveTheFile) {
  const std::string src =
      "import torch\n\nx = torch.zeros(2).cuda()\n\n\ndef f(y):\n    return y.cuda()\n";
  const auto first = static_cast<std::uint32_t>(src.find(".cuda()"));
  const auto second = static_cast<std::uint32_t>(src.rfind(".cuda()"));
  Edited e = edit(src, {{first, first + 7, ".npu()"},
                        {second, second + 7, ".npu()"},
                        {13, 13, "import torch_npu\n"}});
  EXPECT_EQ(e.after,
            "import torch\nimport torch_npu\n\nx = torch.zeros(2).npu()\n\n\ndef f(y):\n"
            "    return y.npu()\n");
  EXPECT_TRUE(proven(e));
  EXPECT_TRUE(syntax::parse("t.py", e.after).ok());
}

TEST(SelfCheck, AnEditThatBreaksAStatementProvesNothing) {
  // An open bracket left in one statement.
  EXPECT_FALSE(proven(edit("a = f(1)\nb = 2\n", {{7, 8, ""}})));
  // A string opened in one statement and closed in a later one: each run alone does not parse.
  EXPECT_FALSE(proven(edit("a = 1\nb = 2\nc = 3\n", {{4, 5, "'''"}, {16, 17, "'''"}})));
  // The line break between two statements edited away: `a = 1b = 2`.
  EXPECT_FALSE(proven(edit("a = 1\nb = 2\n", {{5, 6, ""}})));
  // A trailing backslash joins the next line.
  EXPECT_FALSE(proven(edit("a = 1\nb = 2\n", {{5, 5, " \\"}})));
  // An `else:` that only parses after the `if` of the statement before.
  EXPECT_FALSE(proven(edit("if x:\n    pass\ny = 1\n", {{15, 20, "else:\n    y = 1"}})));
}

TEST(SelfCheck, InsertionsAtTheEndAndBetweenStatements) {
  Edited e = edit("a = 1\nb = 2", {{11, 11, "\nc = 3\n"}, {6, 6, "import os\n"}});
  EXPECT_EQ(e.after, "a = 1\nimport os\nb = 2\nc = 3\n");
  EXPECT_TRUE(proven(e));
}

// The property that matters: whenever the shortcut says "parses", the whole output parses.
// Random edits (brackets, quotes, line breaks, backslashes, indentation, keywords, deletions) on
// the syntax and rule fixtures; most break the file, and the shortcut must never miss one.
TEST(SelfCheck, NeverProvesAFileThatDoesNotParse) {
  const fs::path root = fs::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures";
  std::vector<std::string> sources;
  for (const char* dir : {"syntax", "rules", "readability"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (entry.path().extension() != ".py" || entry.path().filename() != "input.py") {
        if (std::string(dir) != "syntax" || entry.path().extension() != ".py") continue;
      }
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      if (syntax::parse("t.py", text).ok() && !text.empty()) sources.push_back(std::move(text));
    }
  }
  ASSERT_GT(sources.size(), 20u);
  const std::vector<std::string> snippets = {
      "(",       ")",    "[",    "]", "'",    "\"",     "'''",       "\"\"\"",  "\\\n",
      "\n",      "\r\n", ":",    "x", "    ", "\t",     "#",         "@d\n",    "else:\n",
      "\n  y\n", "def ", "f\"{", "}", ",",    "lambda", "\nz = 1\n", "if x:\n", "\\"};
  std::mt19937 rng(20261126);
  int proven_ok = 0, broken = 0, checked = 0;
  for (const std::string& src : sources) {
    syntax::Tree t = syntax::parse("t.py", src);
    const std::vector<std::uint32_t> cuts = statement_cuts(t);
    for (int round = 0; round < 60; ++round) {
      std::vector<fix::Fix> fixes;
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < n; ++k) {
        const auto at = static_cast<std::uint32_t>(rng() % (src.size() + 1));
        const auto len = static_cast<std::uint32_t>(
            std::min<std::size_t>(rng() % 4 == 0 ? rng() % 6 : 0, src.size() - at));
        fixes.push_back(fix::Fix{{fix::Edit{at, at + len, snippets[rng() % snippets.size()]}}});
      }
      fix::ApplyResult r = fix::apply_fixes(src, fixes);
      if (r.edits.empty() || r.text == src) continue;
      ++checked;
      const bool whole = syntax::parse("t.py", r.text).ok();
      if (!whole) ++broken;
      if (edited_statements_parse("t.py", src, r.text, cuts, r.edits)) {
        ++proven_ok;
        ASSERT_TRUE(whole) << "proven but does not parse:\n" << r.text;
      }
    }
  }
  std::cerr << sources.size() << " files, " << checked << " edited texts: " << broken
            << " do not parse, " << proven_ok << " proven by the shortcut\n";
  // Neither side is vacuous: many edits break the file, and many are proven by the shortcut.
  EXPECT_GT(broken, checked / 4);
  EXPECT_GT(proven_ok, checked / 10);
}

}  // namespace
}  // namespace torchport::project
