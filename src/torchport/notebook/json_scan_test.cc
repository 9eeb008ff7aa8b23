#include <gtest/gtest.h>
#include <torchport/notebook/json_scan.h>

namespace torchport::notebook {
namespace {

TEST(JsonScan, KeepsTheRawBytesOfEveryValue) {
  const std::string text = R"({"a": [1, "x\ny"], "b": null})";
  Value v;
  ScanError err;
  ASSERT_TRUE(scan(text, v, err)) << err.message;
  ASSERT_EQ(v.kind, Value::Kind::Object);
  const Value* a = v.member("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(text.substr(a->begin, a->end - a->begin), R"([1, "x\ny"])");
  ASSERT_EQ(a->items.size(), 2u);
  EXPECT_EQ(a->items[1].str, "x\ny");
  EXPECT_EQ(text.substr(a->items[1].begin, a->items[1].end - a->items[1].begin), R"("x\ny")");
  EXPECT_EQ(v.member("b")->kind, Value::Kind::Null);
  EXPECT_EQ(v.member("c"), nullptr);
}

TEST(JsonScan, TheLastOfDuplicateKeysWins) {
  Value v;
  ScanError err;
  ASSERT_TRUE(scan(R"({"k": "first", "k": "second"})", v, err));
  EXPECT_EQ(v.member("k")->str, "second");
}

TEST(JsonScan, DecodesEscapesAndSurrogatePairs) {
  std::string out;
  ASSERT_TRUE(decode_string(R"("\u00e9\ud83d\ude00\t\/\"")", out));
  EXPECT_EQ(out, "\xC3\xA9\xF0\x9F\x98\x80\t/\"");
}

struct Broken {
  const char* text;
  std::uint32_t offset;
  const char* message_part;
};

class JsonScanRejects : public ::testing::TestWithParam<Broken> {};

TEST_P(JsonScanRejects, WithTheOffsetOfTheFirstBadByte) {
  Value v;
  ScanError err;
  ASSERT_FALSE(scan(GetParam().text, v, err));
  EXPECT_EQ(err.offset, GetParam().offset) << err.message;
  EXPECT_NE(err.message.find(GetParam().message_part), std::string::npos) << err.message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JsonScanRejects,
    ::testing::Values(
        Broken{R"({"a": [1, 2,]})", 12, "a value expected"} /* trailing comma: ']' */,
        Broken{R"({"a": "x)", 6, "unterminated string"}, Broken{R"(["\q"])", 2, "invalid escape"},
        Broken{R"(["\ud800"])", 2, "lone high surrogate"},
        Broken{R"(["\udc00"])", 2, "lone low surrogate"},
        Broken{"[\"a\tb\"]", 3, "control character"}, Broken{"[\"\xC3\x28\"]", 2, "invalid UTF-8"},
        Broken{"[1] 2", 4, "after the JSON value"}, Broken{"{\"a\" 1}", 5, "':' expected"},
        Broken{"[01]", 2, "',' or ']' expected"}, Broken{"[1.]", 3, "digits expected after '.'"},
        Broken{"", 0, "unexpected end of file"}));

// Found by the notebook fuzzer: nlohmann::json takes a NUL byte after a value for the end of the
// input and accepts `""\0junk`; a NUL byte is never part of a JSON text, so the scanner refuses it.
TEST(JsonScan, ANulByteAfterTheValueIsNotTheEndOfTheInput) {
  Value v;
  ScanError err;
  using namespace std::string_literals;
  ASSERT_FALSE(scan("\"\"\0\0imports"s, v, err));
  EXPECT_EQ(err.offset, 2u);
  EXPECT_EQ(err.message, "unexpected data after the JSON value");
  ASSERT_FALSE(scan("[1,\0 2]"s, v, err));
  EXPECT_EQ(err.offset, 3u);
}

TEST(JsonScan, RejectsNestingDeeperThanTheLimit) {
  Value v;
  ScanError err;
  const std::string deep =
      std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  ASSERT_FALSE(scan(deep, v, err));
  EXPECT_EQ(err.message, "nested too deeply");
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(scan(ok, v, err)) << err.message;
}

TEST(JsonScan, EncodesAsPythonsJsonModuleDoes) {
  EXPECT_EQ(encode_string("a\"b\\c\n\x01/\x7f", {}), R"("a\"b\\c\n\u0001/)"
                                                     "\x7f\"");
  EXPECT_EQ(encode_string("\xC3\xA9", {}), "\"\xC3\xA9\"");
  EXPECT_EQ(encode_string("\xC3\xA9", {.ascii = true}), R"("\u00e9")");
  EXPECT_EQ(encode_string("\xC3\xA9", {.ascii = true, .upper_hex = true}), R"("\u00E9")");
  EXPECT_EQ(encode_string("\xF0\x9F\x98\x80", {.ascii = true}), R"("\ud83d\ude00")");
}

TEST(JsonScan, UnitsCoverEachCharacterOfAToken) {
  const std::string token = R"("a\u00e9)"
                            "\xC3\xA9"
                            R"(\n")";
  const std::vector<Unit> units = string_units(token);
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[0].decoded_len, 1u);
  EXPECT_EQ(token.substr(units[1].raw_begin, units[1].raw_end - units[1].raw_begin), R"(\u00e9)");
  EXPECT_EQ(units[1].decoded_len, 2u);
  EXPECT_EQ(units[2].decoded_len, 2u);
  EXPECT_EQ(units[2].raw_end - units[2].raw_begin, 2u);
  EXPECT_EQ(token.substr(units[3].raw_begin, units[3].raw_end - units[3].raw_begin), R"(\n)");
}

TEST(JsonScan, LineAndColumnAreOneBased) {
  EXPECT_EQ(line_col("ab\ncd", 4), (std::pair<std::uint32_t, std::uint32_t>{2, 2}));
  EXPECT_EQ(line_col("ab", 0), (std::pair<std::uint32_t, std::uint32_t>{1, 1}));
}

}  // namespace
}  // namespace torchport::notebook
