// LineIndex: LF, CRLF and lone CR line breaks; columns in UTF-8 bytes.
#include <gtest/gtest.h>
#include <torchport/text/line_index.h>

#include <string>
#include <vector>

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

// The index is built sixteen bytes at a time until a '\r' appears: long texts with every kind
// of line break at every offset around a block boundary give the same line starts as a plain
// byte-by-byte scan.
TEST(LineIndexTest, LongTextsMatchAByteScan) {
  auto byte_scan = [](const std::string& t) {
    std::vector<std::uint32_t> starts{0};
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
      if (t[i] == '\n' || t[i] == '\r') starts.push_back(static_cast<std::uint32_t>(i + 1));
    }
    return starts;
  };
  const std::string breaks[] = {"\n", "\r\n", "\r", "\n\n", "\r\r\n"};
  for (const std::string& br : breaks) {
    for (std::size_t at = 0; at < 40; ++at) {
      std::string t;
      for (int k = 0; k < 5; ++k) t += "x = 1\n";  // LF lines before the break under test
      t += std::string(at, 'a') + br + std::string(37, 'b') + "\n" + std::string(at % 17, 'c');
      const LineIndex idx(t);
      const std::vector<std::uint32_t> want = byte_scan(t);
      ASSERT_EQ(idx.line_count(), want.size()) << "break " << br.size() << " at " << at;
      for (std::uint32_t line = 1; line <= want.size(); ++line)
        EXPECT_EQ(idx.line_start(line), want[line - 1]) << "line " << line << " at " << at;
    }
  }
}

}  // namespace
}  // namespace torchport::text
