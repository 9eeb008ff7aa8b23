#include <gtest/gtest.h>
#include <torchport/notebook/notebook.h>

namespace torchport::notebook {
namespace {

// A notebook as Jupyter writes it: one-space indentation, sources as lists of lines, the last
// line without its line break.
const std::string kNotebook = R"js({
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 1,
   "metadata": {},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
   "source": [
    "%pip install diffusers\n",
    "import torch"
   ]
  },
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": ["# Caf\u00e9 on CUDA"]
  },
  {
   "cell_type": "code",
   "execution_count": 2,
   "metadata": {},
   "outputs": [],
   "source": [
    "device = \"cuda\"\n",
    "x = torch.ones(1).to(device)\n",
    "print(\"d\u00e9j\u00e0 vu\")"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": "%%bash\nnvidia-smi\n"
  }
 ],
 "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
)js";

Notebook must_read(const std::string& bytes) {
  ReadError err;
  std::optional<Notebook> nb = read(bytes, err);
  EXPECT_TRUE(nb) << err.line << ":" << err.column << ": " << err.message;
  return nb ? std::move(*nb) : Notebook{};
}

/// The offset of `needle` in the notebook's module.
std::uint32_t at(const Notebook& nb, std::string_view needle) {
  const std::size_t i = nb.module.find(needle);
  EXPECT_NE(i, std::string::npos) << needle;
  return static_cast<std::uint32_t>(i);
}

TEST(Notebook, TheCodeCellsFormOneModuleInOrder) {
  const Notebook nb = must_read(kNotebook);
  ASSERT_EQ(nb.cells.size(), 3u);
  EXPECT_EQ(nb.cell_count, 4u);
  EXPECT_EQ(nb.cells[0].number, 1u);
  EXPECT_EQ(nb.cells[1].number, 3u);
  EXPECT_EQ(nb.cells[2].number, 4u);
  EXPECT_EQ(nb.cells[1].text,
            "device = \"cuda\"\nx = torch.ones(1).to(device)\nprint(\"d\xC3\xA9j\xC3\xA0 vu\")");
  EXPECT_EQ(nb.cells[2].masked.kind, CellKind::Foreign);
  // The %%bash cell is not in the module; the cells without a final line break get one.
  EXPECT_EQ(nb.module,
            "#%pip install diffusers\nimport torch\n"
            "device = \"cuda\"\nx = torch.ones(1).to(device)\nprint(\"d\xC3\xA9j\xC3\xA0 vu\")\n");
  EXPECT_EQ(nb.top, at(nb, "import torch"));
  EXPECT_EQ(nb.language, "python");
  EXPECT_TRUE(nb.style.ascii);  // no raw non-ASCII byte, and \u escapes for it
}

TEST(Notebook, EveryLineOfTheModuleMapsToItsCell) {
  const Notebook nb = must_read(kNotebook);
  const CellLine l2 = locate(nb, 2);
  ASSERT_NE(l2.cell, nullptr);
  EXPECT_EQ(l2.cell->number, 1u);
  EXPECT_EQ(l2.line, 2u);
  const CellLine l4 = locate(nb, 4);
  ASSERT_NE(l4.cell, nullptr);
  EXPECT_EQ(l4.cell->number, 3u);
  EXPECT_EQ(l4.line, 2u);
  EXPECT_EQ(locate(nb, 6).cell, nullptr);
}

TEST(Notebook, NoEditsGiveTheSameBytes) {
  const Notebook nb = must_read(kNotebook);
  const Rewritten rw = rewrite(nb, kNotebook, {}, false);
  EXPECT_EQ(rw.error, "");
  EXPECT_EQ(rw.bytes, kNotebook);
  EXPECT_TRUE(rw.changes.empty());
}

TEST(Notebook, AnEditChangesOnlyItsBytesInTheCell) {
  const Notebook nb = must_read(kNotebook);
  const std::uint32_t b = at(nb, "cuda\"");
  const Rewritten rw = rewrite(nb, kNotebook, {{b, b + 4, "npu"}}, false);
  ASSERT_EQ(rw.error, "");
  std::string expected = kNotebook;
  expected.replace(expected.find("\\\"cuda\\\""), 8, "\\\"npu\\\"");
  EXPECT_EQ(rw.bytes, expected);
  ASSERT_EQ(rw.changes.size(), 1u);
  EXPECT_EQ(rw.changes[0].cell->number, 3u);
  EXPECT_EQ(rw.changes[0].after.substr(0, 16), "device = \"npu\"\nx");
}

TEST(Notebook, ANewLineIsANewStringOfTheListWithTheFilesIndentation) {
  const Notebook nb = must_read(kNotebook);
  const std::uint32_t b = at(nb, "x = torch");
  const Rewritten rw = rewrite(nb, kNotebook, {{b, b, "import torch_npu\n"}}, false);
  ASSERT_EQ(rw.error, "");
  std::string expected = kNotebook;
  const std::string line = "    \"x = torch.ones(1).to(device)\\n\",\n";
  expected.insert(expected.find(line), "    \"import torch_npu\\n\",\n");
  EXPECT_EQ(rw.bytes, expected);
}

TEST(Notebook, AnInsertionAfterACellWithoutALineBreakKeepsItWithout) {
  const Notebook nb = must_read(kNotebook);
  // After `import torch` (the end of cell 1, whose last line has no line break in the file).
  const std::uint32_t b = at(nb, "device =");
  const Rewritten rw = rewrite(nb, kNotebook, {{b, b, "import torch_npu\n"}}, false);
  ASSERT_EQ(rw.error, "");
  std::string expected = kNotebook;
  expected.replace(expected.find("    \"import torch\"\n"), 19,
                   "    \"import torch\\n\",\n    \"import torch_npu\"\n");
  EXPECT_EQ(rw.bytes, expected);
  // Its rows name module line 3 (cell 3's first): it is line 3 of cell 1.
  ASSERT_EQ(rw.moved.size(), 1u);
  EXPECT_EQ(rw.moved[0].module_line, 3u);
  EXPECT_EQ(rw.moved[0].cell, 1u);
  EXPECT_EQ(rw.moved[0].line, 3u);
  // Read again, the module is the edited one.
  const Notebook again = must_read(rw.bytes);
  std::string module = nb.module;
  module.insert(b, "import torch_npu\n");
  EXPECT_EQ(again.module, module);
}

TEST(Notebook, AnInsertionAtTheTopGoesAfterThePipLines) {
  const Notebook nb = must_read(kNotebook);
  const Rewritten rw = rewrite(nb, kNotebook, {{nb.top, nb.top, "import os\n"}}, false);
  ASSERT_EQ(rw.error, "");
  std::string expected = kNotebook;
  expected.insert(expected.find("    \"import torch\""), "    \"import os\\n\",\n");
  EXPECT_EQ(rw.bytes, expected);
}

// Found by the notebook fuzzer: when no cell holds Python code (only a comment and a shell
// line, the last line without a line break), the top of the module is its end, and the insertion
// goes after the shell line instead of being refused.
TEST(Notebook, AnInsertionAfterAShellLineThatEndsTheModuleIsAccepted) {
  const std::string bytes = R"js({"cells": [{"cell_type": "code", "execution_count": null,
 "metadata": {}, "outputs": [], "source": ["# setup\n", "! pip install x"]}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5})js";
  const Notebook nb = must_read(bytes);
  ASSERT_EQ(nb.top, nb.module.size());
  const Rewritten rw = rewrite(nb, bytes, {{nb.top, nb.top, "import os\n"}}, false);
  ASSERT_EQ(rw.error, "");
  std::string expected = bytes;
  expected.replace(expected.find("\"! pip install x\""), 17,
                   "\"! pip install x\\n\", \"import os\"");
  EXPECT_EQ(rw.bytes, expected);
  std::string module = nb.module;
  module.insert(nb.top, "import os\n");
  EXPECT_EQ(must_read(rw.bytes).module, module);
  // An edit inside the shell line is still refused.
  const std::uint32_t b = at(nb, "pip");
  EXPECT_NE(rewrite(nb, bytes, {{b, b + 3, "uv"}}, false).error, "");
}

TEST(Notebook, EscapedNonAsciiStaysEscapedAndNewTextFollowsTheFile) {
  const Notebook nb = must_read(kNotebook);
  // Replace `vu` in the print line; the escapes before it are kept as they are.
  const std::uint32_t b = at(nb, "vu\")");
  const Rewritten rw = rewrite(nb, kNotebook, {{b, b + 2, "\xC3\xA9t\xC3\xA9"}}, false);
  ASSERT_EQ(rw.error, "");
  EXPECT_NE(rw.bytes.find(R"js("print(\"d\u00e9j\u00e0 \u00e9t\u00e9\")")js"), std::string::npos)
      << rw.bytes;
}

TEST(Notebook, AnAsciiOnlyFileGetsEscapesForNewNonAscii) {
  const std::string bytes =
      R"({"cells": [{"cell_type": "code", "source": "s = \"\u00e9\"\nx = 1\n", "outputs": []}],)"
      R"( "metadata": {}, "nbformat": 4, "nbformat_minor": 4})";
  const Notebook nb = must_read(bytes);
  EXPECT_TRUE(nb.style.ascii);
  const std::uint32_t b = at(nb, "1");
  const Rewritten rw = rewrite(nb, bytes, {{b, b + 1, "\"\xC3\xA0\""}}, false);
  ASSERT_EQ(rw.error, "");
  EXPECT_NE(rw.bytes.find(R"("source": "s = \"\u00e9\"\nx = \"\u00e0\"\n")"), std::string::npos)
      << rw.bytes;
}

TEST(Notebook, ASourceStringStaysOneString) {
  const std::string bytes =
      R"js({"cells": [{"cell_type": "code", "source": "import torch\nx.cuda()", "outputs": []}],)js"
      R"( "metadata": {}, "nbformat": 4, "nbformat_minor": 4})";
  const Notebook nb = must_read(bytes);
  const std::uint32_t b = at(nb, "import torch\n") + 13;
  const Rewritten rw = rewrite(nb, bytes, {{b, b, "import torch_npu\n"}}, false);
  ASSERT_EQ(rw.error, "");
  EXPECT_NE(rw.bytes.find(R"js("source": "import torch\nimport torch_npu\nx.cuda()")js"),
            std::string::npos)
      << rw.bytes;
}

TEST(Notebook, EditsOfMaskedLinesOrAcrossCellsAreRefused) {
  const Notebook nb = must_read(kNotebook);
  EXPECT_NE(rewrite(nb, kNotebook, {{2, 5, "x"}}, false).error, "");  // in `#%pip`
  const std::uint32_t b = at(nb, "torch\ndevice");
  EXPECT_NE(rewrite(nb, kNotebook, {{b, b + 8, "x"}}, false).error, "");  // across cells
}

TEST(Notebook, ClearOutputsClearsOutputsAndCountsOnly) {
  const Notebook nb = must_read(kNotebook);
  const Rewritten rw = rewrite(nb, kNotebook, {}, true);
  ASSERT_EQ(rw.error, "");
  std::string expected = kNotebook;
  const std::string out = R"([{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}])";
  expected.replace(expected.find(out), out.size(), "[]");
  expected.replace(expected.find("\"execution_count\": 1"), 20, "\"execution_count\": null");
  expected.replace(expected.find("\"execution_count\": 2"), 20, "\"execution_count\": null");
  EXPECT_EQ(rw.bytes, expected);
}

TEST(Notebook, BrokenJsonIsAnErrorWithLineAndColumn) {
  ReadError err;
  EXPECT_FALSE(read("{\n \"cells\": [\n  {\"cell_type\": \"code\",}\n ]\n}\n", err));
  EXPECT_EQ(err.line, 3u);
  EXPECT_EQ(err.column, 24u);
  EXPECT_NE(err.message.find("not valid JSON"), std::string::npos);
}

TEST(Notebook, OnlyNbformat4IsRead) {
  ReadError err;
  EXPECT_FALSE(read(R"({"nbformat": 3, "worksheets": []})", err));
  EXPECT_NE(err.message.find("nbformat 3"), std::string::npos) << err.message;
  EXPECT_FALSE(read(R"({"nbformat": 4, "cells": [{"cell_type": "code", "source": 1}]})", err));
  EXPECT_NE(err.message.find("source of cell 1"), std::string::npos) << err.message;
}

TEST(Notebook, AnEmptyCellIsNotInTheModule) {
  const std::string bytes =
      R"({"cells": [{"cell_type": "code", "source": []}, {"cell_type": "code", "source": ["x"]}],)"
      R"( "metadata": {}, "nbformat": 4})";
  const Notebook nb = must_read(bytes);
  EXPECT_EQ(nb.module, "x\n");
  EXPECT_EQ(locate(nb, 1).cell->number, 2u);
  const Rewritten rw = rewrite(nb, bytes, {{0, 0, "import os\n"}}, false);
  ASSERT_EQ(rw.error, "");
  EXPECT_NE(rw.bytes.find(R"("source": ["import os\n", "x"])"), std::string::npos) << rw.bytes;
}

}  // namespace
}  // namespace torchport::notebook
