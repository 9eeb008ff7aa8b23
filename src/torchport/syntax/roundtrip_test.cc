// Round trip: for every fixture file, print(parse(text)) == text byte for byte, and the
// decoded text encodes back to the file's bytes. Fixtures are named after the trap they cover.
#include <gtest/gtest.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/printer.h>
#include <torchport/text/source.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace torchport::syntax {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> fixtures() {
  std::vector<fs::path> out;
  fs::path dir = fs::path(TORCHPORT_SOURCE_DIR) / "tests" / "fixtures" / "syntax";
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".py") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(RoundTrip, EveryFixtureFile) {
  std::vector<fs::path> files = fixtures();
  ASSERT_GE(files.size(), 8u);
  for (const fs::path& p : files) {
    std::string bytes = read(p);
    text::DecodeResult d = text::decode(p.string(), bytes);
    if (!d.source) continue;  // undecodable fixtures belong to the decoder's tests
    std::string decoded = d.source->text;
    text::SourceFile source = *d.source;
    Tree tree = parse(std::move(source));
    EXPECT_TRUE(round_trips(tree)) << p;
    EXPECT_EQ(print(tree), decoded) << p;
    EXPECT_EQ(text::encode(tree.source(), print(tree)), bytes) << p;
    // The parser's own fixtures (parser_*.py) are valid Python.
    if (p.filename().string().rfind("parser_", 0) == 0) {
      EXPECT_TRUE(tree.ok()) << p << ": "
                             << (tree.diagnostics().empty() ? ""
                                                            : tree.format(tree.diagnostics()[0]));
    }
  }
}

TEST(RoundTrip, CrlfBomAndCodingHeader) {
  for (std::string src :
       {std::string("x = 1\r\nif x:\r\n    y = (1,\r\n  2)\r\n"),
        std::string("\xef\xbb\xbfprint('a')\n"),
        std::string("# -*- coding: latin-1 -*-\ns = '\xe9'\n"), std::string("a = 1\rb = 2\r"),
        std::string("x = 1"), std::string("def f():\n\tif x:\n\t\treturn 1\n")}) {
    text::DecodeResult d = text::decode("t.py", src);
    ASSERT_TRUE(d.source.has_value());
    Tree tree = parse(*d.source);
    EXPECT_TRUE(tree.ok()) << src;
    EXPECT_EQ(text::encode(tree.source(), print(tree)), src);
  }
}

TEST(RoundTrip, InvalidInputStillRoundTrips) {
  for (std::string src : {"x = (\n", "def f(:\n  $ ` \x01\n", "f'{", "if x:\n\tpass\n        y\n",
                          "\\\n", "'''abc"}) {
    Tree tree = parse("t.py", src);
    EXPECT_FALSE(tree.ok()) << src;
    EXPECT_EQ(print(tree), src);
  }
}

}  // namespace
}  // namespace torchport::syntax
