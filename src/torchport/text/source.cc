// Decoding and encoding Python source files: UTF-8 BOM, PEP 263 declarations, strict UTF-8
// validation, and other codecs through glibc's iconv.
#include <iconv.h>
#include <torchport/text/source.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace torchport::text {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

struct Codec {
  std::string_view canonical;  ///< our name, reported in SourceFile::encoding
  std::string_view iconv;      ///< glibc iconv name; empty for utf-8
  std::string_view aliases;    ///< normalised Python names and aliases, space-separated
};

// Python codec names and aliases (from CPython's Lib/encodings/aliases.py), mapped to the glibc
// iconv names of the same character sets.
constexpr std::array kCodecs = {
    Codec{"utf-8", "", "utf_8 utf8 u8 utf utf8_ucs2 utf8_ucs4 cp65001 utf_8_sig"},
    Codec{"latin-1", "ISO-8859-1",
          "latin_1 latin1 latin l1 iso8859_1 iso_8859_1 8859 cp819 iso_ir_100 iso_8859_1_1987 "
          "ibm819 csisolatin1"},
    Codec{"ascii", "ASCII",
          "ascii us_ascii 646 us ansi_x3.4_1968 ansi_x3_4_1968 ansi_x3.4_1986 iso646_us cp367 "
          "csascii ibm367 iso_ir_6"},
    Codec{"cp1250", "CP1250", "cp1250 windows_1250"},
    Codec{"cp1251", "CP1251", "cp1251 windows_1251"},
    Codec{"cp1252", "CP1252", "cp1252 windows_1252"},
    Codec{"cp1253", "CP1253", "cp1253 windows_1253"},
    Codec{"cp1254", "CP1254", "cp1254 windows_1254"},
    Codec{"cp1255", "CP1255", "cp1255 windows_1255"},
    Codec{"cp1256", "CP1256", "cp1256 windows_1256"},
    Codec{"cp1257", "CP1257", "cp1257 windows_1257"},
    Codec{"cp1258", "CP1258", "cp1258 windows_1258"},
    Codec{"gbk", "GBK", "gbk cp936 ms936 936"},
    Codec{"gb2312", "EUC-CN",
          "gb2312 chinese csiso58gb231280 euc_cn euccn eucgb2312_cn gb2312_1980 gb2312_80 "
          "iso_ir_58"},
    Codec{"gb18030", "GB18030", "gb18030 gb18030_2000"},
    Codec{"big5", "BIG5", "big5 big5_tw csbig5"},
    Codec{"big5hkscs", "BIG5-HKSCS", "big5hkscs big5_hkscs hkscs"},
    Codec{"shift_jis", "SHIFT_JIS", "shift_jis csshiftjis shiftjis sjis s_jis"},
    Codec{"cp932", "CP932", "cp932 932 ms932 mskanji ms_kanji"},
    Codec{"euc_jp", "EUC-JP", "euc_jp eucjp ujis u_jis"},
    Codec{"euc_kr", "EUC-KR",
          "euc_kr euckr korean ksc5601 ks_c_5601 ks_c_5601_1987 ksx1001 ks_x_1001"},
    Codec{"cp949", "CP949", "cp949 949 ms949 uhc"},
    Codec{"iso8859-2", "ISO-8859-2", "iso8859_2 iso_8859_2 latin2 l2 iso_8859_2_1987 iso_ir_101"},
    Codec{"iso8859-3", "ISO-8859-3", "iso8859_3 iso_8859_3 latin3 l3"},
    Codec{"iso8859-4", "ISO-8859-4", "iso8859_4 iso_8859_4 latin4 l4"},
    Codec{"iso8859-5", "ISO-8859-5", "iso8859_5 iso_8859_5 cyrillic"},
    Codec{"iso8859-6", "ISO-8859-6", "iso8859_6 iso_8859_6 arabic"},
    Codec{"iso8859-7", "ISO-8859-7", "iso8859_7 iso_8859_7 greek greek8"},
    Codec{"iso8859-8", "ISO-8859-8", "iso8859_8 iso_8859_8 hebrew"},
    Codec{"iso8859-9", "ISO-8859-9", "iso8859_9 iso_8859_9 latin5 l5"},
    Codec{"iso8859-10", "ISO-8859-10", "iso8859_10 iso_8859_10 latin6 l6"},
    Codec{"iso8859-13", "ISO-8859-13", "iso8859_13 iso_8859_13 latin7 l7"},
    Codec{"iso8859-14", "ISO-8859-14", "iso8859_14 iso_8859_14 latin8 l8"},
    Codec{"iso8859-15", "ISO-8859-15", "iso8859_15 iso_8859_15 latin9 l9"},
    Codec{"iso8859-16", "ISO-8859-16", "iso8859_16 iso_8859_16 latin10 l10"},
    Codec{"koi8-r", "KOI8-R", "koi8_r cskoi8r"},
    Codec{"koi8-u", "KOI8-U", "koi8_u"},
    Codec{"cp437", "CP437", "cp437 437 ibm437"},
    Codec{"cp850", "CP850", "cp850 850 ibm850"},
    Codec{"cp866", "CP866", "cp866 866 ibm866"},
    Codec{"mac-roman", "MACINTOSH", "mac_roman macroman macintosh"},
};

/// CPython's tokenizer first maps "utf-8-*" and the latin-1 spellings (get_normal_name), then
/// the codec registry lower-cases the name and collapses other punctuation into '_'.
std::string normalise(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>((c >= 'A' && c <= 'Z') ? c + 32 : c);
  std::string dashed = lower;
  for (char& c : dashed) {
    if (c == '_') c = '-';
  }
  auto starts = [&](std::string_view p) {
    return dashed == p || (dashed.size() > p.size() && dashed.compare(0, p.size(), p) == 0 &&
                           dashed[p.size()] == '-');
  };
  if (starts("utf-8")) return "utf_8";
  if (starts("latin-1") || starts("iso-8859-1") || starts("iso-latin-1")) return "latin_1";
  std::string out;
  bool pending = false;
  for (char c : lower) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.';
    if (keep) {
      if (pending && !out.empty()) out += '_';
      pending = false;
      out += c;
    } else {
      pending = true;
    }
  }
  return out;
}

const Codec* find_codec(std::string_view name) {
  const std::string key = normalise(name);
  if (key.empty()) return nullptr;
  for (const Codec& c : kCodecs) {
    std::string_view rest = c.aliases;
    while (!rest.empty()) {
      const std::size_t sp = rest.find(' ');
      const std::string_view alias = rest.substr(0, sp);
      if (alias == key) return &c;
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
  }
  return nullptr;
}

/// Returns the position after the line starting at `from` (after its line break).
std::size_t next_line(std::string_view s, std::size_t from) {
  std::size_t i = from;
  while (i < s.size() && s[i] != '\n' && s[i] != '\r') ++i;
  if (i < s.size()) i += (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
  return i;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f'; }

struct Declaration {
  std::string name;
  std::size_t offset = 0;  ///< of the name, in the BOM-less bytes
};

/// PEP 263: `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)` on a comment-only line.
std::optional<Declaration> coding_spec(std::string_view bytes, std::size_t begin, std::size_t end) {
  std::string_view line = bytes.substr(begin, end - begin);
  std::size_t i = 0;
  while (i < line.size() && is_space(line[i])) ++i;
  if (i >= line.size() || line[i] != '#') return std::nullopt;
  for (std::size_t at = line.find("coding", i); at != std::string_view::npos;
       at = line.find("coding", at + 1)) {
    std::size_t j = at + 6;
    if (j >= line.size() || (line[j] != ':' && line[j] != '=')) continue;
    ++j;
    while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
    std::size_t k = j;
    while (k < line.size()) {
      const char c = line[k];
      const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      if (!word) break;
      ++k;
    }
    if (k == j) continue;
    return Declaration{std::string(line.substr(j, k - j)), begin + j};
  }
  return std::nullopt;
}

/// Line 1, or line 2 when line 1 is blank or a comment (`^[ \t\f]*(?:[#\r\n]|$)`).
std::optional<Declaration> find_declaration(std::string_view bytes) {
  const std::size_t end1 = next_line(bytes, 0);
  if (auto d = coding_spec(bytes, 0, end1)) return d;
  std::size_t i = 0;
  while (i < end1 && is_space(bytes[i])) ++i;
  const bool blank_or_comment =
      i >= end1 || bytes[i] == '#' || bytes[i] == '\r' || bytes[i] == '\n';
  if (!blank_or_comment || end1 >= bytes.size()) return std::nullopt;
  return coding_spec(bytes, end1, next_line(bytes, end1));
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(b));
  return buf;
}

/// Strict UTF-8 (no overlongs, surrogates or code points above U+10FFFF). Returns the offset of
/// the first byte of the first bad sequence and CPython's reason.
std::optional<std::pair<std::size_t, std::string>> validate_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII runs sixteen bytes at a time (SSE2: one test of the sixteen high bits), then
    // eight.
#if defined(__SSE2__)
    while (i + 16 <= n &&
           _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))) == 0)
      i += 16;
#endif
    std::uint64_t word;
    while (i + 8 <= n && (std::memcpy(&word, p + i, 8), (word & 0x8080808080808080ull) == 0))
      i += 8;
    if (i >= n) break;
    const unsigned char b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return std::pair{i, "can't decode byte " + hex_byte(b) + ": invalid start byte"};
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n) {
        return std::pair{i, "can't decode byte " + hex_byte(b) + ": unexpected end of data"};
      }
      const unsigned char c = p[i + k];
      const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      if (c < l || c > h) {
        return std::pair{i, "can't decode byte " + hex_byte(b) + ": invalid continuation byte"};
      }
    }
    i += len;
  }
  return std::nullopt;
}

struct IconvResult {
  std::string out;
  bool ok = true;
  std::size_t bad_offset = 0;  ///< in the input
  std::string reason;
};

/// Converts with iconv. With `substitute`, unconvertible input characters (UTF-8 input only)
/// become '?'.
IconvResult convert(std::string_view in, const char* to, const char* from, bool substitute) {
  IconvResult r;
  iconv_t cd = iconv_open(to, from);
  if (cd == reinterpret_cast<iconv_t>(-1)) {
    r.ok = false;
    r.reason = std::string("codec not available in iconv: ") + from + " -> " + to;
    return r;
  }
  r.out.resize(in.size() * 2 + 16);
  char* inp = const_cast<char*>(in.data());
  std::size_t inleft = in.size();
  std::size_t used = 0;
  while (inleft > 0) {
    char* outp = r.out.data() + used;
    std::size_t outleft = r.out.size() - used;
    const std::size_t rc = iconv(cd, &inp, &inleft, &outp, &outleft);
    used = r.out.size() - outleft;
    if (rc != static_cast<std::size_t>(-1)) break;
    if (errno == E2BIG) {
      r.out.resize(r.out.size() * 2 + 16);
      continue;
    }
    const std::size_t at = static_cast<std::size_t>(inp - in.data());
    if (substitute && errno == EILSEQ) {
      // Skip one UTF-8 character of input, write '?'.
      std::size_t len = 1;
      const auto b = static_cast<unsigned char>(*inp);
      if (b >= 0xF0)
        len = 4;
      else if (b >= 0xE0)
        len = 3;
      else if (b >= 0xC0)
        len = 2;
      len = std::min(len, inleft);
      inp += len;
      inleft -= len;
      if (used == r.out.size()) r.out.resize(r.out.size() * 2 + 16);
      r.out[used++] = '?';
      continue;
    }
    r.ok = false;
    r.bad_offset = at;
    if (errno == EILSEQ) {
      r.reason = "can't decode byte " + hex_byte(static_cast<unsigned char>(*inp)) +
                 ": invalid or unmapped byte sequence";
    } else if (errno == EINVAL) {
      r.reason = "incomplete multibyte sequence at end of data";
    } else {
      r.reason = std::strerror(errno);
    }
    break;
  }
  if (r.ok) {
    // Flush any shift state.
    char* outp = r.out.data() + used;
    std::size_t outleft = r.out.size() - used;
    if (outleft < 16) {
      r.out.resize(r.out.size() + 16);
      outp = r.out.data() + used;
      outleft = r.out.size() - used;
    }
    iconv(cd, nullptr, nullptr, &outp, &outleft);
    used = r.out.size() - outleft;
  }
  r.out.resize(used);
  iconv_close(cd);
  return r;
}

DecodeResult fail(std::uint64_t offset, std::string encoding, std::string message) {
  DecodeResult r;
  r.error = DecodeError{offset, std::move(encoding), std::move(message)};
  return r;
}

// With a BOM, CPython accepts only a declaration whose first 12 characters, lower-cased with
// '_' read as '-', are "utf-8" or start with "utf-8-" (its tokenizer's get_normal_name):
// `# coding: utf8` after a BOM is "encoding problem: utf8 with BOM".
bool spelled_utf8_for_bom(std::string_view name) {
  std::string head;
  for (char c : name.substr(0, 12)) {
    head += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return head == "utf-8" || head.starts_with("utf-8-");
}

}  // namespace

std::optional<std::string> canonical_encoding(std::string_view name) {
  if (const Codec* c = find_codec(name)) return std::string(c->canonical);
  return std::nullopt;
}

namespace {

/// decode(), and with `owned` (the bytes `bytes` views) a UTF-8 text is moved out of it instead
/// of copied; on failure `owned` is left as it was.
DecodeResult decode_impl(std::string path, std::string_view bytes, std::string* owned) {
  SourceFile src;
  src.path = std::move(path);
  std::size_t skip = 0;
  if (bytes.substr(0, 3) == kBom) {
    src.bom = true;
    skip = 3;
    bytes.remove_prefix(3);
  }
  const Codec* codec = &kCodecs[0];
  if (auto decl = find_declaration(bytes)) {
    codec = find_codec(decl->name);
    if (codec == nullptr)
      return fail(skip + decl->offset, decl->name, "unknown encoding: " + decl->name);
    if (src.bom && !spelled_utf8_for_bom(decl->name)) {
      return fail(skip + decl->offset, std::string(codec->canonical),
                  "encoding problem: " + decl->name + " with BOM");
    }
  }
  src.encoding = std::string(codec->canonical);
  if (codec->iconv.empty()) {
    if (auto bad = validate_utf8(bytes)) return fail(skip + bad->first, src.encoding, bad->second);
    if (owned) {
      if (skip) owned->erase(0, skip);  // the BOM
      src.text = std::move(*owned);
    } else {
      src.text = std::string(bytes);
    }
  } else {
    const std::string from(codec->iconv);
    if (codec->canonical == "gbk") {
      // glibc's GBK maps the single byte 0x80 to U+20AC (as Windows does); CPython's gbk
      // codec rejects it. Lead bytes are 0x81-0xFE, each followed by one trail byte.
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        if (b == 0x80 || b == 0xFF) {
          return fail(skip + i, src.encoding,
                      "can't decode byte " + hex_byte(b) + ": invalid or unmapped byte sequence");
        }
        if (b > 0x80) ++i;
      }
    }
    IconvResult dec = convert(bytes, "UTF-8", from.c_str(), false);
    if (!dec.ok) return fail(skip + dec.bad_offset, src.encoding, dec.reason);
    // The rewriter writes files back with encode(): refuse a file that would not come back
    // byte for byte (a codec with several byte sequences for one character).
    IconvResult back = convert(dec.out, from.c_str(), "UTF-8", false);
    if (!back.ok || back.out != bytes) {
      std::size_t at = 0;
      while (at < bytes.size() && at < back.out.size() && bytes[at] == back.out[at]) ++at;
      return fail(skip + at, src.encoding, "the text would not encode back to the same bytes");
    }
    src.text = std::move(dec.out);
  }
  DecodeResult r;
  r.source = std::move(src);
  return r;
}

}  // namespace

DecodeResult decode(std::string path, std::string_view bytes) {
  return decode_impl(std::move(path), bytes, nullptr);
}

DecodeResult decode_owned(std::string path, std::string&& bytes) {
  const std::string_view view = bytes;
  return decode_impl(std::move(path), view, &bytes);
}

std::optional<std::string> try_encode(const SourceFile& source, std::string_view text,
                                      std::string* error) {
  const Codec* codec = find_codec(source.encoding);
  std::string out = source.bom ? std::string(kBom) : std::string();
  if (codec == nullptr || codec->iconv.empty()) {
    out += text;
    return out;
  }
  const std::string to(codec->iconv);
  IconvResult r = convert(text, to.c_str(), "UTF-8", false);
  if (!r.ok) {
    if (error) {
      *error = "cannot encode the text as " + source.encoding + " (byte " +
               std::to_string(r.bad_offset) + " of the UTF-8 text)";
    }
    return std::nullopt;
  }
  out += r.out;
  return out;
}

std::string encode(const SourceFile& source, std::string_view text) {
  if (auto ok = try_encode(source, text)) return std::move(*ok);
  const Codec* codec = find_codec(source.encoding);
  std::string out = source.bom ? std::string(kBom) : std::string();
  const std::string to(codec->iconv);
  out += convert(text, to.c_str(), "UTF-8", true).out;
  return out;
}

DecodeResult decode_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(0, "", std::string("cannot read file: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(0, "", std::string("cannot read file: ") + std::strerror(errno));
  return decode(path, ss.str());
}

}  // namespace torchport::text
