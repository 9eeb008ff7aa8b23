#include <gtest/gtest.h>
#include <torchport/text/utf8.h>

namespace torchport::text {
namespace {

TEST(Utf8, ValidText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("train.py"));
  EXPECT_TRUE(is_valid_utf8("\xe6\xa8\xa1\xe5\x9e\x8b.py"));  // 模型.py
  EXPECT_TRUE(is_valid_utf8("\xf0\x9f\x94\xa5"));             // U+1F525
}

TEST(Utf8, InvalidText) {
  EXPECT_FALSE(is_valid_utf8("bad\xff.py"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(is_valid_utf8("\xe6\xa8"));      // truncated
  EXPECT_FALSE(is_valid_utf8("caf\xe9.py"));    // latin-1 é
}

TEST(Utf8, PrintableEscapesOnlyTheBadBytes) {
  EXPECT_EQ(printable_utf8("train.py"), "train.py");
  EXPECT_EQ(printable_utf8("caf\xe9.py"), "caf\\xe9.py");
  EXPECT_EQ(printable_utf8("\xe6\xa8\xa1\xff"), "\xe6\xa8\xa1\\xff");
  EXPECT_EQ(printable_utf8("\xe6\xa8"), "\\xe6\\xa8");
  EXPECT_TRUE(is_valid_utf8(printable_utf8("a\x80\x81\xfe")));
}

}  // namespace
}  // namespace torchport::text
