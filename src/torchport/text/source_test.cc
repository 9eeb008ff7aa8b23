// Decoding and encoding: PEP 263 declarations, BOM, strict UTF-8, iconv codecs, round trips.
#include <gtest/gtest.h>
#include <torchport/text/source.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace torchport::text {
namespace {

std::string fixture_path(const std::string& name) {
  return std::string(TORCHPORT_SOURCE_DIR) + "/tests/fixtures/syntax/" + name;
}

std::string read_bytes(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Decodes a fixture, checks it succeeded, and that encode() gives back the file byte for byte.
SourceFile decode_round_trip(const std::string& name) {
  const std::string bytes = read_bytes(name);
  EXPECT_FALSE(bytes.empty()) << name;
  DecodeResult r = decode(name, bytes);
  EXPECT_TRUE(r.source.has_value()) << name << ": " << (r.error ? r.error->message : "");
  if (!r.source) return {};
  EXPECT_EQ(encode(*r.source, r.source->text), bytes) << name;
  return *r.source;
}

TEST(SourceTest, DecodeOwnedGivesWhatDecodeGivesAndLeavesTheBytesOnFailure) {
  const std::vector<std::string> inputs = {
      "x = '\xe4\xb8\xad'\n",                     // UTF-8
      "\xef\xbb\xbfx = 1\n",                      // with a BOM
      "# -*- coding: latin-1 -*-\nx = '\xe9'\n",  // through iconv
      "x = '\xff'\n",                             // invalid UTF-8
      "\xef\xbb\xbf# coding: latin-1\n",          // BOM with another codec
      "# coding: no-such-codec\n",                // unknown
      ""};
  for (const std::string& in : inputs) {
    const DecodeResult want = decode("a.py", in);
    std::string bytes = in;
    const DecodeResult got = decode_owned("a.py", std::move(bytes));
    ASSERT_EQ(got.source.has_value(), want.source.has_value()) << in;
    if (want.source) {
      EXPECT_EQ(got.source->text, want.source->text) << in;
      EXPECT_EQ(got.source->encoding, want.source->encoding) << in;
      EXPECT_EQ(got.source->bom, want.source->bom) << in;
    } else {
      EXPECT_EQ(bytes, in) << "the caller still has its bytes to report the error in";
      EXPECT_EQ(got.error->byte_offset, want.error->byte_offset) << in;
      EXPECT_EQ(got.error->message, want.error->message) << in;
    }
  }
}

TEST(SourceTest, PlainUtf8) {
  DecodeResult r = decode("a.py", "x = '中文'\n");
  ASSERT_TRUE(r.source);
  EXPECT_EQ(r.source->path, "a.py");
  EXPECT_EQ(r.source->encoding, "utf-8");
  EXPECT_FALSE(r.source->bom);
  EXPECT_EQ(r.source->text, "x = '中文'\n");
}

TEST(SourceTest, BomIsStrippedAndRestored) {
  const SourceFile s = decode_round_trip("bom_utf8.py");
  EXPECT_TRUE(s.bom);
  EXPECT_EQ(s.encoding, "utf-8");
  EXPECT_EQ(s.text.substr(0, 2), "# ");  // no BOM in the text
  EXPECT_TRUE(decode_round_trip("bom_with_coding.py").bom);
}

TEST(SourceTest, BomWithNonUtf8DeclarationIsAnError) {
  DecodeResult r = decode("x.py", read_bytes("bom_with_latin1_coding.py"));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->message, "encoding problem: latin-1 with BOM");
  EXPECT_EQ(r.error->encoding, "latin-1");
}

TEST(SourceTest, BomAcceptsOnlyCPythonsSpellingsOfUtf8) {
  // CPython's tokenizer normalises only "utf-8" spellings (case, '_' for '-', "utf-8-" prefix);
  // "utf8" after a BOM is an error there (Lib/test/tokenizedata/bad_coding2.py).
  const std::string bom = "\xEF\xBB\xBF";
  EXPECT_TRUE(decode("a.py", bom + "# coding: UTF_8\nx = 1\n").source);
  EXPECT_TRUE(decode("b.py", bom + "# coding: utf-8-sig\nx = 1\n").source);
  DecodeResult r = decode("c.py", bom + "#coding: utf8\nprint('x')\n");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->message, "encoding problem: utf8 with BOM");
  EXPECT_FALSE(decode("d.py", "#coding: utf8\nx = 1\n").error);  // without a BOM it is fine
}

TEST(SourceTest, LineEndingsAreKept) {
  EXPECT_NE(decode_round_trip("crlf_endings.py").text.find("\r\n"), std::string::npos);
  const SourceFile cr = decode_round_trip("cr_only_endings.py");
  EXPECT_NE(cr.text.find('\r'), std::string::npos);
  EXPECT_EQ(cr.text.find('\n'), std::string::npos);
  decode_round_trip("mixed_newlines.py");
}

TEST(SourceTest, Latin1) {
  const SourceFile s = decode_round_trip("latin1_comment.py");
  EXPECT_EQ(s.encoding, "latin-1");
  EXPECT_NE(s.text.find("café"), std::string::npos);
  EXPECT_NE(s.text.find("½"), std::string::npos);
}

TEST(SourceTest, Cp1252OnLineTwoAfterAShebang) {
  const SourceFile s = decode_round_trip("cp1252_comment.py");
  EXPECT_EQ(s.encoding, "cp1252");
  EXPECT_NE(s.text.find("“smart quotes” — and €uro"), std::string::npos);
}

TEST(SourceTest, GbkAndGb18030ChineseComments) {
  const SourceFile g = decode_round_trip("gbk_comment.py");
  EXPECT_EQ(g.encoding, "gbk");
  EXPECT_NE(g.text.find("把模型移到设备上"), std::string::npos);
  EXPECT_NE(g.text.find("'中文字符串'"), std::string::npos);
  const SourceFile h = decode_round_trip("gb18030_comment.py");
  EXPECT_EQ(h.encoding, "gb18030");
  EXPECT_NE(h.text.find("𠀀"), std::string::npos);  // outside the BMP: a 4-byte GB18030 code
}

TEST(SourceTest, EncodeAfterAnEditUsesTheFileEncoding) {
  const SourceFile g = decode_round_trip("gbk_comment.py");
  std::string edited = g.text;
  edited.replace(edited.find("中文字符串"), std::string("中文字符串").size(), "设备");
  const std::string bytes = encode(g, edited);
  // "设备" in GBK is C9 E8 B1 B8.
  EXPECT_NE(bytes.find("\xC9\xE8\xB1\xB8"), std::string::npos);
  EXPECT_EQ(bytes.find("设备"), std::string::npos);  // not UTF-8
}

TEST(SourceTest, UnencodableCharacters) {
  const SourceFile s = decode_round_trip("latin1_comment.py");
  std::string error;
  EXPECT_FALSE(try_encode(s, "x = '中'\n", &error));
  EXPECT_EQ(error, "cannot encode the text as latin-1 (byte 5 of the UTF-8 text)");
  EXPECT_EQ(encode(s, "x = '中'\n"), "x = '?'\n");
}

TEST(SourceTest, InvalidBytesReportOffsetAndEncoding) {
  DecodeResult g = decode("g.py", read_bytes("gbk_invalid_byte.py"));
  ASSERT_TRUE(g.error);
  EXPECT_EQ(g.error->byte_offset, 26u);  // as CPython reports it: "position 26"
  EXPECT_EQ(g.error->encoding, "gbk");
  DecodeResult u = decode("u.py", read_bytes("utf8_invalid_byte.py"));
  ASSERT_TRUE(u.error);
  EXPECT_EQ(u.error->byte_offset, 14u);
  EXPECT_EQ(u.error->encoding, "utf-8");
  EXPECT_EQ(u.error->message, "can't decode byte 0xff: invalid start byte");
}

TEST(SourceTest, StrictUtf8) {
  struct Case {
    std::string bytes;
    std::uint64_t offset;
    std::string reason;
  };
  const Case cases[] = {
      {"ab\xC0\xAF", 2, "can't decode byte 0xc0: invalid start byte"},            // overlong '/'
      {"a\xE0\x80\xAF", 1, "can't decode byte 0xe0: invalid continuation byte"},  // overlong
      {"\xED\xA0\x80", 0, "can't decode byte 0xed: invalid continuation byte"},   // surrogate
      {"x\xF4\x90\x80\x80", 1, "can't decode byte 0xf4: invalid continuation byte"},  // >10FFFF
      {"xyz\xE4\xB8", 3, "can't decode byte 0xe4: unexpected end of data"},           // truncated
      {"\xC3(", 0, "can't decode byte 0xc3: invalid continuation byte"},
      {"ok\xF8", 2, "can't decode byte 0xf8: invalid start byte"},
  };
  for (const Case& c : cases) {
    DecodeResult r = decode("x.py", c.bytes);
    ASSERT_TRUE(r.error) << c.reason;
    EXPECT_EQ(r.error->byte_offset, c.offset) << c.reason;
    EXPECT_EQ(r.error->message, c.reason);
  }
  // The BOM counts in the raw offset.
  DecodeResult b = decode("x.py", "\xEF\xBB\xBFx\xFF");
  ASSERT_TRUE(b.error);
  EXPECT_EQ(b.error->byte_offset, 4u);
  // The largest code point and a 4-byte sequence are fine.
  EXPECT_TRUE(decode("x.py", "\xF4\x8F\xBF\xBF \xF0\x9F\x98\x80").source);
}

TEST(SourceTest, DeclarationRules) {
  // Line 2 counts only if line 1 is blank or a comment.
  EXPECT_EQ(decode("x", "#!/usr/bin/python\n# coding: latin-1\n").source->encoding, "latin-1");
  EXPECT_EQ(decode("x", "\n# coding=latin-1\n").source->encoding, "latin-1");
  EXPECT_EQ(decode("x", "import os\n# coding: latin-1\n").source->encoding, "utf-8");
  // Line 3 never counts.
  EXPECT_EQ(decode("x", "#\n#\n# coding: latin-1\n").source->encoding, "utf-8");
  // The declaration must be in a comment.
  EXPECT_EQ(decode("x", "x = 'coding: latin-1'\n").source->encoding, "utf-8");
  // Emacs and vim styles; the first `coding[:=]` wins.
  EXPECT_EQ(decode("x", "# -*- coding: cp1252 -*-\n").source->encoding, "cp1252");
  EXPECT_EQ(decode("x", "# vim: set fileencoding=gbk :\n").source->encoding, "gbk");
  EXPECT_EQ(decode("x", "# encoding: ascii\n").source->encoding, "ascii");
  EXPECT_EQ(decode("x", "# codingx coding=latin1\n").source->encoding, "latin-1");
  // CR-only line endings separate lines 1 and 2 too.
  EXPECT_EQ(decode("x", "#!python\r# coding: latin-1\r").source->encoding, "latin-1");
}

TEST(SourceTest, CodecNamesAreNormalisedAsCPythonDoes) {
  for (const char* n : {"utf8", "utf-8", "UTF_8", "Utf-8", "utf-8-sig", "u8"}) {
    EXPECT_EQ(canonical_encoding(n), "utf-8") << n;
  }
  for (const char* n : {"latin-1", "latin1", "iso-8859-1", "iso8859-1", "ISO_8859_1", "l1",
                        "iso-latin-1", "latin_1"}) {
    EXPECT_EQ(canonical_encoding(n), "latin-1") << n;
  }
  EXPECT_EQ(canonical_encoding("windows-1252"), "cp1252");
  EXPECT_EQ(canonical_encoding("CP936"), "gbk");
  EXPECT_EQ(canonical_encoding("GB2312"), "gb2312");
  EXPECT_EQ(canonical_encoding("euc-jp"), "euc_jp");
  EXPECT_EQ(canonical_encoding("Shift-JIS"), "shift_jis");
  EXPECT_EQ(canonical_encoding("big5"), "big5");
  EXPECT_EQ(canonical_encoding("klingon"), std::nullopt);
}

TEST(SourceTest, UnknownEncoding) {
  DecodeResult r = decode("x.py", read_bytes("unknown_coding.py"));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->message, "unknown encoding: klingon");
  EXPECT_EQ(r.error->byte_offset, 10u);
}

TEST(SourceTest, AsciiRejectsHighBytes) {
  DecodeResult r = decode("x.py", "# coding: ascii\nx = '\xe9'\n");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->encoding, "ascii");
  EXPECT_EQ(r.error->byte_offset, 21u);
}

TEST(SourceTest, DecodeFile) {
  DecodeResult ok = decode_file(fixture_path("gbk_comment.py"));
  ASSERT_TRUE(ok.source);
  EXPECT_EQ(ok.source->encoding, "gbk");
  DecodeResult missing = decode_file(fixture_path("does_not_exist.py"));
  ASSERT_TRUE(missing.error);
  EXPECT_EQ(missing.error->message, "cannot read file: No such file or directory");
}

}  // namespace
}  // namespace torchport::text
