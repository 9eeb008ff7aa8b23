#include <gtest/gtest.h>
#include <torchport/project/selection.h>

namespace torchport::project {
namespace {

TEST(Selection, GlobsMatchPathsAndTheirDirectories) {
  EXPECT_TRUE(path_matches("build", "build/lib/x.py")) << "a directory excludes what is below";
  EXPECT_TRUE(path_matches("build/", "build/x.py"));
  EXPECT_TRUE(path_matches("__pycache__", "pkg/__pycache__/m.pyc")) << "any component";
  EXPECT_TRUE(path_matches("*.cu", "csrc/kernel.cu"));
  EXPECT_TRUE(path_matches("tests/**/fixtures", "tests/a/b/fixtures/f.py"));
  EXPECT_TRUE(path_matches("tests/**/fixtures", "tests/fixtures/f.py")) << "** is also zero dirs";
  EXPECT_TRUE(path_matches("third_party/*", "third_party/apex/setup.py"));
  EXPECT_FALSE(path_matches("third_party/*.py", "third_party/apex/setup.py"))
      << "* does not cross /";
  EXPECT_FALSE(path_matches("train.py", "training.py"));
  EXPECT_FALSE(path_matches("model/*.py", "other/model/net.py")) << "a pattern with / is anchored";
}

TEST(Selection, IgnoresCodesByPrefixAndPerPath) {
  Selection s;
  s.ignore = {"TP5"};
  PathCodes pc;
  ASSERT_EQ(parse_path_codes("tests/**:TP301,TP900", pc), "");
  s.per_file_ignores.push_back(pc);
  EXPECT_TRUE(s.ignored("train.py", "TP500"));
  EXPECT_FALSE(s.ignored("train.py", "TP301"));
  EXPECT_TRUE(s.ignored("tests/unit/test_a.py", "TP301"));
  EXPECT_TRUE(s.ignored("tests/unit/test_a.py", "TP900"));
  EXPECT_FALSE(s.ignored("tests/unit/test_a.py", "TP100"));
}

TEST(Selection, RejectsMalformedPerFileSpecs) {
  PathCodes pc;
  EXPECT_EQ(parse_path_codes("tests", pc), "'tests': expected GLOB:CODE[,CODE...]");
  EXPECT_EQ(parse_path_codes("tests:", pc), "'tests:': expected GLOB:CODE[,CODE...]");
  EXPECT_EQ(parse_path_codes("tests:,", pc), "'tests:,': no rule code after ':'");
}

TEST(Selection, ExcludedByNamesThePattern) {
  Selection s;
  s.exclude = {"docs", "*.sh"};
  EXPECT_EQ(s.excluded_by("docs/conf.py"), "docs");
  EXPECT_EQ(s.excluded_by("tools/run.sh"), "*.sh");
  EXPECT_EQ(s.excluded_by("train.py"), "");
}

}  // namespace
}  // namespace torchport::project
