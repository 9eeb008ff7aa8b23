#include <torchport/notebook/json_scan.h>
#include <torchport/text/utf8.h>

#include <limits>

namespace torchport::notebook {

const Value* Value::member(std::string_view key) const {
  const Value* found = nullptr;
  for (const auto& [k, v] : members)
    if (k == key) found = &v;
  return found;
}

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The length of the well-formed UTF-8 sequence at `s[i]` (a non-ASCII lead byte), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  std::size_t n;
  std::uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

/// Reads \uXXXX at s[i] (the backslash); -1 when malformed.
long read_u_escape(std::string_view s, std::size_t i) {
  if (i + 6 > s.size() || s[i] != '\\' || s[i + 1] != 'u') return -1;
  long v = 0;
  for (std::size_t k = 2; k < 6; ++k) {
    const int d = hex_digit(s[i + k]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/// Scans the string token starting at s[i] (the opening quote). On success `i` is past the
/// closing quote; `out` (if given) gets the decoded text and `units` (if given) its units.
/// On failure `err` is the offset of the offending byte and `why` says what is wrong.
bool scan_string(std::string_view s, std::size_t& i, std::string* out, std::vector<Unit>* units,
                 std::size_t& err, const char*& why) {
  const std::size_t open = i;
  ++i;
  for (;;) {
    if (i >= s.size()) {
      err = open;
      why = "unterminated string";
      return false;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t start = i;
    std::uint32_t decoded_len = 0;
    if (c == '"') {
      ++i;
      return true;
    }
    if (c == '\\') {
      if (i + 1 >= s.size()) {
        err = i;
        why = "unterminated string";
        return false;
      }
      const char e = s[i + 1];
      char simple = 0;
      switch (e) {
        case '"':
          simple = '"';
          break;
        case '\\':
          simple = '\\';
          break;
        case '/':
          simple = '/';
          break;
        case 'b':
          simple = '\b';
          break;
        case 'f':
          simple = '\f';
          break;
        case 'n':
          simple = '\n';
          break;
        case 'r':
          simple = '\r';
          break;
        case 't':
          simple = '\t';
          break;
        case 'u':
          break;
        default:
          err = i;
          why = "invalid escape in string";
          return false;
      }
      if (e != 'u') {
        if (out) *out += simple;
        decoded_len = 1;
        i += 2;
      } else {
        long hi = read_u_escape(s, i);
        if (hi < 0) {
          err = i;
          why = "invalid \\u escape in string";
          return false;
        }
        std::uint32_t cp = static_cast<std::uint32_t>(hi);
        std::size_t len = 6;
        if (hi >= 0xDC00 && hi <= 0xDFFF) {
          err = i;
          why = "lone low surrogate escape in string (not UTF-8 text)";
          return false;
        }
        if (hi >= 0xD800 && hi <= 0xDBFF) {
          const long lo = read_u_escape(s, i + 6);
          if (lo < 0xDC00 || lo > 0xDFFF) {
            err = i;
            why = "lone high surrogate escape in string (not UTF-8 text)";
            return false;
          }
          cp = 0x10000 + ((static_cast<std::uint32_t>(hi) - 0xD800) << 10) +
               (static_cast<std::uint32_t>(lo) - 0xDC00);
          len = 12;
        }
        const std::size_t before = out ? out->size() : 0;
        std::string tmp;
        text::append_utf8(out ? *out : tmp, cp);
        decoded_len = static_cast<std::uint32_t>(out ? out->size() - before : tmp.size());
        i += len;
      }
    } else if (c < 0x20) {
      err = i;
      why = "control character in string (must be escaped)";
      return false;
    } else if (c < 0x80) {
      if (out) *out += static_cast<char>(c);
      decoded_len = 1;
      ++i;
    } else {
      const std::size_t n = utf8_length(s, i);
      if (n == 0) {
        err = i;
        why = "invalid UTF-8 in string";
        return false;
      }
      if (out) out->append(s.substr(i, n));
      decoded_len = static_cast<std::uint32_t>(n);
      i += n;
    }
    if (units)
      units->push_back({decoded_len, static_cast<std::uint32_t>(start - open),
                        static_cast<std::uint32_t>(i - open)});
  }
}

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  bool run(Value& out, ScanError& error) {
    if (s_.size() >= std::numeric_limits<std::uint32_t>::max()) {
      error = {0, "larger than 4 GiB"};
      return false;
    }
    if (s_.starts_with("\xEF\xBB\xBF")) i_ = 3;
    skip_ws();
    if (!value(out, 0)) {
      error = {static_cast<std::uint32_t>(err_), why_};
      return false;
    }
    skip_ws();
    if (i_ != s_.size()) {
      error = {static_cast<std::uint32_t>(i_), "unexpected data after the JSON value"};
      return false;
    }
    return true;
  }

 private:
  bool fail(std::size_t at, const char* why) {
    err_ = at;
    why_ = why;
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool literal(std::string_view word, Value& v, Value::Kind kind) {
    if (s_.substr(i_, word.size()) != word) return fail(i_, "invalid literal");
    v.kind = kind;
    i_ += word.size();
    return true;
  }
  bool number(Value& v) {
    const std::size_t start = i_;
    auto digits = [&] {
      const std::size_t b = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > b;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return fail(start, "invalid number");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return fail(i_, "invalid number: digits expected after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return fail(i_, "invalid number: digits expected in the exponent");
    }
    v.kind = Value::Kind::Number;
    return true;
  }
  bool string(std::string& out) {
    std::size_t err = 0;
    const char* why = "";
    if (!scan_string(s_, i_, &out, nullptr, err, why)) return fail(err, why);
    return true;
  }
  bool value(Value& v, int depth) {
    if (i_ >= s_.size()) return fail(i_, "unexpected end of file: a value expected");
    v.begin = static_cast<std::uint32_t>(i_);
    bool ok;
    switch (s_[i_]) {
      case '{':
        ok = object(v, depth + 1);
        break;
      case '[':
        ok = array(v, depth + 1);
        break;
      case '"':
        v.kind = Value::Kind::String;
        ok = string(v.str);
        break;
      case 't':
        ok = literal("true", v, Value::Kind::Bool);
        break;
      case 'f':
        ok = literal("false", v, Value::Kind::Bool);
        break;
      case 'n':
        ok = literal("null", v, Value::Kind::Null);
        break;
      default:
        ok = (s_[i_] == '-' || (s_[i_] >= '0' && s_[i_] <= '9')) ? number(v)
                                                                 : fail(i_, "a value expected");
    }
    v.end = static_cast<std::uint32_t>(i_);
    return ok;
  }
  bool array(Value& v, int depth) {
    if (depth > kMaxJsonDepth) return fail(i_, "nested too deeply");
    v.kind = Value::Kind::Array;
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (!value(v.items.emplace_back(), depth)) return false;
      skip_ws();
      if (i_ >= s_.size()) return fail(i_, "unexpected end of file in an array");
      if (s_[i_] == ']') {
        ++i_;
        return true;
      }
      if (s_[i_] != ',') return fail(i_, "',' or ']' expected in an array");
      ++i_;
    }
  }
  bool object(Value& v, int depth) {
    if (depth > kMaxJsonDepth) return fail(i_, "nested too deeply");
    v.kind = Value::Kind::Object;
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != '"') return fail(i_, "a string key expected in an object");
      auto& m = v.members.emplace_back();
      if (!string(m.key)) return false;
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') return fail(i_, "':' expected after an object key");
      ++i_;
      skip_ws();
      if (!value(m.value, depth)) return false;
      skip_ws();
      if (i_ >= s_.size()) return fail(i_, "unexpected end of file in an object");
      if (s_[i_] == '}') {
        ++i_;
        return true;
      }
      if (s_[i_] != ',') return fail(i_, "',' or '}' expected in an object");
      ++i_;
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::size_t err_ = 0;
  const char* why_ = "";
};

}  // namespace

bool scan(std::string_view text, Value& out, ScanError& error) {
  out = Value{};
  return Scanner(text).run(out, error);
}

bool decode_string(std::string_view raw, std::string& out) {
  out.clear();
  if (raw.empty() || raw[0] != '"') return false;
  std::size_t i = 0, err = 0;
  const char* why = "";
  return scan_string(raw, i, &out, nullptr, err, why) && i == raw.size();
}

std::vector<Unit> string_units(std::string_view raw) {
  std::vector<Unit> units;
  std::size_t i = 0, err = 0;
  const char* why = "";
  if (raw.empty() || raw[0] != '"' || !scan_string(raw, i, nullptr, &units, err, why))
    units.clear();
  return units;
}

std::string encode_string(std::string_view text, const StringStyle& style) {
  static const char kLower[] = "0123456789abcdef";
  static const char kUpper[] = "0123456789ABCDEF";
  const char* hex = style.upper_hex ? kUpper : kLower;
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  auto u_escape = [&](std::uint32_t v) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += hex[(v >> shift) & 0xF];
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t n = utf8_length(text, i);
      if (n == 0) n = 1;  // not UTF-8: kept as it is (the caller's text is UTF-8)
      if (!style.ascii || n == 1) {
        out.append(text.substr(i, n));
      } else {
        std::uint32_t cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
        for (std::size_t k = 1; k < n; ++k)
          cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
        if (cp >= 0x10000) {
          cp -= 0x10000;
          u_escape(0xD800 + (cp >> 10));
          u_escape(0xDC00 + (cp & 0x3FF));
        } else {
          u_escape(cp);
        }
      }
      i += n;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20)
          u_escape(c);
        else
          out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
  return out;
}

std::pair<std::uint32_t, std::uint32_t> line_col(std::string_view text, std::uint32_t offset) {
  std::uint32_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace torchport::notebook
