// LineIndex: LF, CRLF and lone CR line breaks; columns in UTF-8 bytes.
#include <gtest/gtest.h>
#include <torchport/text/line_index.h>

namespace torchport::text {
namespace {

void expect_at(const LineIndex& idx, std::uint32_t offset, std::uint32_t line, std::uint32_t col) {
  const LineCol lc = idx.locate(offset);
  EXPECT_EQ(lc.line, line) << "offset " << offset;
  EXPECT_EQ(lc.column, col) << "offset " << offset;
}

TEST(LineIndexTest, EmptyText) {
  const LineIndex idx("");
  EXPECT_EQ(idx.line_count(), 1u);
  expect_at(idx, 0, 1, 0);
}

TEST(LineIndexTest, EachKindOfLineBreak) {
  //                    0123 4 5678 9 0
  const LineIndex idx("ab\r\ncd\ref\ng");
  EXPECT_EQ(idx.line_count(), 4u);
  expect_at(idx, 0, 1, 0);
  expect_at(idx, 2, 1, 2);  // the \r of \r\n is still on line 1
  expect_at(idx, 3, 1, 3);  // and so is its \n
  expect_at(idx, 4, 2, 0);
  expect_at(idx, 6, 2, 2);  // lone \r
  expect_at(idx, 7, 3, 0);
  expect_at(idx, 10, 4, 0);
  expect_at(idx, 11, 4, 1);  // one past the end
  EXPECT_EQ(idx.line_start(1), 0u);
  EXPECT_EQ(idx.line_start(2), 4u);
  EXPECT_EQ(idx.line_start(3), 7u);
  EXPECT_EQ(idx.line_start(4), 10u);
}

TEST(LineIndexTest, TrailingLineBreakStartsAnEmptyLine) {
  const LineIndex idx("x\n");
  EXPECT_EQ(idx.line_count(), 2u);
  expect_at(idx, 2, 2, 0);
}

TEST(LineIndexTest, ColumnsAreUtf8Bytes) {
  const LineIndex idx("x = '中文' + y\n");
  // '中' and '文' are three bytes each: y is at byte 15.
  expect_at(idx, 15, 1, 15);
}

TEST(LineIndexTest, OutOfRangeLinesClamp) {
  const LineIndex idx("a\nb\n");
  EXPECT_EQ(idx.line_start(0), 0u);
  EXPECT_EQ(idx.line_start(99), 4u);
}

}  // namespace
}  // namespace torchport::text
