// The lexer's main loop: names, keywords, numbers, plain strings, operators, comments, line
// breaks and continuations. Indentation is in lexer_indent.cc, f/t-strings in lexer_fstring.cc.
#include <torchport/syntax/lexer.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

#include "lexer_impl.h"

namespace torchport::syntax {
namespace detail {
namespace {

struct CodeRange {
  std::uint32_t lo, hi;
};
#include "unicode_ident.inc"

template <std::size_t N>
bool in_ranges(const CodeRange (&table)[N], std::uint32_t cp) {
  const CodeRange* it =
      std::upper_bound(std::begin(table), std::end(table), cp,
                       [](std::uint32_t v, const CodeRange& r) { return v < r.lo; });
  return it != std::begin(table) && cp <= (it - 1)->hi;
}

bool is_ascii_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
/// ASCII letters, digits and '_', as a table: the lexer's innermost loop (names) reads it.
constexpr std::array<bool, 256> kAsciiIdentChar = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[static_cast<std::size_t>(c)] =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  return t;
}();
bool is_ascii_ident_char(char c) { return kAsciiIdentChar[static_cast<unsigned char>(c)]; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
/// CPython's is_potential_identifier_char: ASCII letters, digits, '_' and any non-ASCII byte.
bool is_potential_ident_char(char c) {
  return is_ascii_ident_char(c) || static_cast<unsigned char>(c) >= 0x80;
}

TokenKind keyword_kind(std::string_view s) {
  using K = TokenKind;
  struct Entry {
    std::string_view word;
    TokenKind kind;
  };
  static constexpr Entry kKeywords[] = {
      {"False", K::KwFalse},
      {"None", K::KwNone},
      {"True", K::KwTrue},
      {"and", K::KwAnd},
      {"as", K::KwAs},
      {"assert", K::KwAssert},
      {"async", K::KwAsync},
      {"await", K::KwAwait},
      {"break", K::KwBreak},
      {"class", K::KwClass},
      {"continue", K::KwContinue},
      {"def", K::KwDef},
      {"del", K::KwDel},
      {"elif", K::KwElif},
      {"else", K::KwElse},
      {"except", K::KwExcept},
      {"finally", K::KwFinally},
      {"for", K::KwFor},
      {"from", K::KwFrom},
      {"global", K::KwGlobal},
      {"if", K::KwIf},
      {"import", K::KwImport},
      {"in", K::KwIn},
      {"is", K::KwIs},
      {"lambda", K::KwLambda},
      {"nonlocal", K::KwNonlocal},
      {"not", K::KwNot},
      {"or", K::KwOr},
      {"pass", K::KwPass},
      {"raise", K::KwRaise},
      {"return", K::KwReturn},
      {"try", K::KwTry},
      {"while", K::KwWhile},
      {"with", K::KwWith},
      {"yield", K::KwYield},
  };
  // The table is grouped by first letter: each letter's [begin, end) range in it.
  static constexpr auto kByFirst = [] {
    std::array<std::pair<std::uint8_t, std::uint8_t>, 128> r{};
    for (std::size_t i = 0; i < std::size(kKeywords); ++i) {
      auto& [b, e] = r[static_cast<unsigned char>(kKeywords[i].word[0])];
      if (e == 0) b = static_cast<std::uint8_t>(i);
      e = static_cast<std::uint8_t>(i + 1);
    }
    return r;
  }();
  if (s.size() < 2 || s.size() > 8) return K::Name;
  const auto c = static_cast<unsigned char>(s[0]);
  if (c >= 128) return K::Name;
  for (std::size_t i = kByFirst[c].first; i < kByFirst[c].second; ++i)
    if (kKeywords[i].word == s) return kKeywords[i].kind;
  return K::Name;
}

std::string format_cp(std::uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

}  // namespace

int decode_utf8(const char* p, const char* end, std::uint32_t& cp) {
  const auto b0 = static_cast<unsigned char>(p[0]);
  cp = 0xFFFFFFFFu;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  int len;
  std::uint32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, min = 0x80, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, min = 0x800, cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    cp = 0xFFFFFFFFu;
    return 1;
  }
  if (end - p < len) {
    cp = 0xFFFFFFFFu;
    return 1;
  }
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(p[i]);
    if ((b & 0xC0) != 0x80) {
      cp = 0xFFFFFFFFu;
      return 1;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    cp = 0xFFFFFFFFu;
    return 1;
  }
  return len;
}

bool is_ident_start_cp(std::uint32_t cp) {
  if (cp < 0x80) return is_ascii_ident_start(static_cast<char>(cp));
  return in_ranges(kIdentStart, cp);
}
bool is_ident_continue_cp(std::uint32_t cp) {
  if (cp < 0x80) return is_ascii_ident_char(static_cast<char>(cp));
  return in_ranges(kIdentContinue, cp);
}
bool is_non_printable_cp(std::uint32_t cp) {
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F;
  return in_ranges(kNonPrintable, cp);
}

Lexer::Lexer(std::string_view text)
    : text_(text.size() > 0xFFFFFFF0u ? text.substr(0, 0xFFFFFFF0u) : text),
      size_(static_cast<std::uint32_t>(text_.size())) {}

LexResult Lexer::run() {
  result_.tokens.reserve(size_ / 3 + 16);  // Python source has 0.2-0.3 tokens per byte
  if (const void* nul = std::memchr(text_.data(), '\0', size_)) {
    error(static_cast<std::uint32_t>(static_cast<const char*>(nul) - text_.data()),
          "source code cannot contain null bytes");
  }
  for (;;) {
    if (!fstrings_.empty() && fstrings_.back().in_middle) {
      lex_fstring_middle();
      continue;
    }
    if (at_line_start_) {
      at_line_start_ = false;
      lex_line_start();
      continue;
    }
    if (at_end()) {
      if (!fstrings_.empty()) {
        unterminated_fstring(size_ > 0 ? size_ - 1 : 0);
        continue;
      }
      lex_at_eof();
      break;
    }
    lex_normal();
  }
  return std::move(result_);
}

void Lexer::emit_real(TokenKind kind, std::uint32_t begin, std::uint32_t end) {
  if (indent_pending_) apply_indentation(begin);
  line_has_token_ = true;
  after_continuation_ = false;
  emit(kind, begin, end);
}

void Lexer::error(std::uint32_t offset, std::string message) {
  result_.diagnostics.push_back(
      text::Diagnostic{text::Severity::Error, offset, std::move(message)});
}

void Lexer::warning(std::uint32_t offset, std::string message) {
  result_.diagnostics.push_back(
      text::Diagnostic{text::Severity::Warning, offset, std::move(message)});
}

std::uint32_t Lexer::line_of(std::uint32_t offset) {
  offset = std::min(offset, size_);
  if (offset < line_scan_pos_) {
    line_scan_pos_ = 0;
    line_scan_line_ = 1;
  }
  for (std::uint32_t i = line_scan_pos_; i < offset; ++i) {
    const char c = text_[i];
    if (c == '\n' || (c == '\r' && peek(i + 1) != '\n')) ++line_scan_line_;
  }
  line_scan_pos_ = offset;
  return line_scan_line_;
}

std::uint32_t Lexer::newline_length(std::uint32_t at) const {
  const char c = peek(at);
  if (at >= size_) return 0;
  if (c == '\n') return 1;
  if (c == '\r') return peek(at + 1) == '\n' && at + 1 < size_ ? 2 : 1;
  return 0;
}

std::uint32_t Lexer::skip_to_quote_or_backslash(std::uint32_t p, char q) const {
  if (p >= size_) return p;
  const char* b = text_.data() + p;
  const char* e = text_.data() + size_;
  if (const void* at = std::memchr(b, q, static_cast<std::size_t>(e - b)))
    e = static_cast<const char*>(at);
  if (const void* at = std::memchr(b, '\\', static_cast<std::size_t>(e - b)))
    e = static_cast<const char*>(at);
  return static_cast<std::uint32_t>(e - text_.data());
}

void Lexer::lex_normal() {
  const std::uint32_t start = pos_;
  const char c = text_[pos_];
  switch (c) {
    case ' ':
    case '\t':
    case '\f': {
      std::uint32_t p = pos_ + 1;
      while (p < size_ && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\f')) ++p;
      emit(TokenKind::Whitespace, start, p);
      return;
    }
    case '\n':
    case '\r':
      lex_newline();
      return;
    case '#': {
      // Up to the line break: '\n' by memchr, then a lone '\r' before it (rare).
      const char* b = text_.data() + pos_ + 1;
      const char* e = text_.data() + size_;
      if (const void* nl = std::memchr(b, '\n', static_cast<std::size_t>(e - b)))
        e = static_cast<const char*>(nl);
      if (const void* cr = std::memchr(b, '\r', static_cast<std::size_t>(e - b)))
        e = static_cast<const char*>(cr);
      emit(TokenKind::Comment, start, static_cast<std::uint32_t>(e - text_.data()));
      return;
    }
    case '\\':
      lex_backslash();
      return;
    case '\'':
    case '"':
      lex_string(start, start, false, false, false);
      return;
    case '.':
      if (is_digit(peek(pos_ + 1))) {
        lex_number();
        return;
      }
      lex_operator();
      return;
    default:
      break;
  }
  if (is_ascii_ident_start(c)) {
    lex_name_or_string();
  } else if (is_digit(c)) {
    lex_number();
  } else if (static_cast<unsigned char>(c) >= 0x80) {
    lex_non_ascii();
  } else {
    lex_operator();
  }
}

void Lexer::lex_newline() {
  const std::uint32_t start = pos_;
  const std::uint32_t end = start + newline_length(start);
  after_continuation_ = false;
  if (!brackets_.empty()) {
    emit(TokenKind::NonLogicalNewline, start, end);
    return;
  }
  if (line_has_token_) {
    emit(TokenKind::Newline, start, end);
  } else {
    emit(TokenKind::NonLogicalNewline, start, end);
  }
  line_has_token_ = false;
  indent_pending_ = false;
  at_line_start_ = true;
}

void Lexer::lex_backslash() {
  const std::uint32_t start = pos_;
  const std::uint32_t nl = newline_length(start + 1);
  if (nl > 0) {
    emit(TokenKind::Continuation, start, start + 1 + nl);
    after_continuation_ = true;
    return;
  }
  if (start + 1 >= size_) {
    error(start, "unexpected EOF while parsing");
  } else {
    error(start, "unexpected character after line continuation character");
  }
  emit_real(TokenKind::Error, start, start + 1);
}

void Lexer::lex_at_eof() {
  if (after_continuation_) error(size_, "unexpected EOF while parsing");
  if (line_has_token_) emit(TokenKind::Newline, size_, size_);
  for (std::size_t i = 1; i < indents_.size(); ++i) emit(TokenKind::Dedent, size_, size_);
  indents_.resize(1);
  altindents_.resize(1);
  emit(TokenKind::EndMarker, size_, size_);
}

void Lexer::lex_name_or_string() {
  const std::uint32_t start = pos_;
  std::uint32_t p = pos_ + 1;
  while (p < size_ && is_ascii_ident_char(text_[p])) ++p;
  const char next = peek(p);
  if ((next == '\'' || next == '"') && p - start <= 2) {
    bool r = false, b = false, u = false, f = false, t = false, ok = true;
    for (std::uint32_t i = start; i < p; ++i) {
      switch (text_[i] | 0x20) {
        case 'r':
          ok = ok && !r, r = true;
          break;
        case 'b':
          ok = ok && !b, b = true;
          break;
        case 'u':
          ok = ok && !u, u = true;
          break;
        case 'f':
          ok = ok && !f, f = true;
          break;
        case 't':
          ok = ok && !t, t = true;
          break;
        default:
          ok = false;
      }
    }
    // Valid: r u b f t br rb fr rf tr rt (any case); u combines with nothing.
    const int letters = int(b) + int(u) + int(f) + int(t);
    if (ok && letters <= 1 && !(u && r)) {
      lex_string(start, p, r, f, t);
      return;
    }
  }
  if (static_cast<unsigned char>(next) >= 0x80) {
    // Non-ASCII identifier characters.
    for (;;) {
      while (p < size_ && is_ascii_ident_char(text_[p])) ++p;
      if (p >= size_ || static_cast<unsigned char>(text_[p]) < 0x80) break;
      std::uint32_t cp;
      const int len = decode_utf8(text_.data() + p, text_.data() + size_, cp);
      if (cp == 0xFFFFFFFFu || !is_ident_continue_cp(cp)) break;
      p += static_cast<std::uint32_t>(len);
    }
  }
  emit_real(keyword_kind(text_.substr(start, p - start)), start, p);
}

void Lexer::lex_non_ascii() {
  const std::uint32_t start = pos_;
  std::uint32_t cp;
  const int len = decode_utf8(text_.data() + start, text_.data() + size_, cp);
  if (cp != 0xFFFFFFFFu && is_ident_start_cp(cp)) {
    std::uint32_t p = start + static_cast<std::uint32_t>(len);
    for (;;) {
      while (p < size_ && is_ascii_ident_char(text_[p])) ++p;
      if (p >= size_ || static_cast<unsigned char>(text_[p]) < 0x80) break;
      std::uint32_t cp2;
      const int len2 = decode_utf8(text_.data() + p, text_.data() + size_, cp2);
      if (cp2 == 0xFFFFFFFFu || !is_ident_continue_cp(cp2)) break;
      p += static_cast<std::uint32_t>(len2);
    }
    emit_real(TokenKind::Name, start, p);
    return;
  }
  if (cp == 0xFFFFFFFFu) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "invalid utf-8 byte 0x%02X",
                  static_cast<unsigned>(static_cast<unsigned char>(text_[start])));
    error(start, buf);
  } else if (is_non_printable_cp(cp)) {
    error(start, "invalid non-printable character " + format_cp(cp));
  } else {
    error(start, "invalid character '" + std::string(text_.substr(start, len)) + "' (" +
                     format_cp(cp) + ")");
  }
  emit_real(TokenKind::Error, start, start + static_cast<std::uint32_t>(len));
}

// ---- numbers ----

bool Lexer::verify_end_of_number(const char* kind_name) {
  // pos_ is just past the number. CPython accepts a keyword glued to a number (`1if x else y`)
  // with a warning, and rejects any other identifier character.
  const char c = peek(pos_);
  if (!is_potential_ident_char(c)) return true;
  static constexpr std::string_view kGlued[] = {"and", "else", "for", "if",
                                                "in",  "is",   "not", "or"};
  for (std::string_view kw : kGlued) {
    if (text_.substr(pos_, kw.size()) == kw && !is_potential_ident_char(peek(pos_ + kw.size()))) {
      warning(pos_, std::string("invalid ") + kind_name + " literal");
      return true;
    }
  }
  error(pos_, std::string("invalid ") + kind_name + " literal");
  return false;
}

void Lexer::number_error(std::uint32_t start, std::uint32_t bad, std::string message) {
  error(bad, std::move(message));
  std::uint32_t p = std::max(bad, start + 1);
  while (p < size_ && is_ascii_ident_char(text_[p])) ++p;
  emit_real(TokenKind::Error, start, p);
}

void Lexer::lex_number() {
  const std::uint32_t start = pos_;
  std::uint32_t p = pos_;
  // Digits matching `is`, with single underscores between them. Returns false (p at the
  // offending character) when an underscore is not followed by a digit.
  auto decimal_tail = [&]() {
    for (;;) {
      while (p < size_ && is_digit(text_[p])) ++p;
      if (peek(p) != '_' || p >= size_) return true;
      ++p;
      if (!is_digit(peek(p)) || p >= size_) return false;
    }
  };
  auto finish = [&](const char* kind_name) {
    pos_ = p;
    verify_end_of_number(kind_name);
    emit_real(TokenKind::Number, start, p);
  };

  char c = text_[p];
  if (c == '0' && p + 1 < size_) {
    const char x = static_cast<char>(text_[p + 1] | 0x20);
    if (x == 'x' || x == 'o' || x == 'b') {
      p += 2;
      const char* name = x == 'x' ? "hexadecimal" : x == 'o' ? "octal" : "binary";
      auto ok_digit = [x](char d) {
        return x == 'x' ? is_hex(d) : x == 'o' ? (d >= '0' && d <= '7') : (d == '0' || d == '1');
      };
      for (;;) {
        if (peek(p) == '_' && p < size_) ++p;
        const char d = p < size_ ? text_[p] : '\0';
        if (!ok_digit(d)) {
          if (x != 'x' && is_digit(d)) {
            return number_error(start, p,
                                std::string("invalid digit '") + d + "' in " + name + " literal");
          }
          return number_error(start, p, std::string("invalid ") + name + " literal");
        }
        while (p < size_ && ok_digit(text_[p])) ++p;
        if (peek(p) != '_' || p >= size_) break;
      }
      if (x != 'x' && is_digit(peek(p)) && p < size_) {
        return number_error(
            start, p, std::string("invalid digit '") + text_[p] + "' in " + name + " literal");
      }
      return finish(name);
    }
  }

  bool fraction = false;
  if (c == '.') {
    ++p;
    fraction = true;
  } else if (c == '0') {
    // Zeros, possibly with underscores; then maybe a (disallowed) old-style octal.
    bool nonzero = false;
    for (;;) {
      if (peek(p) == '_' && p < size_) {
        ++p;
        if (!is_digit(peek(p)) || p >= size_)
          return number_error(start, p, "invalid decimal literal");
      }
      if (peek(p) != '0' || p >= size_) break;
      ++p;
    }
    if (is_digit(peek(p)) && p < size_) {
      nonzero = true;
      if (!decimal_tail()) return number_error(start, p, "invalid decimal literal");
    }
    c = peek(p);
    if (p < size_ && c == '.') {
      ++p;
      fraction = true;
    } else if (p < size_ && (c == 'e' || c == 'E' || c == 'j' || c == 'J')) {
      // handled below
    } else if (nonzero) {
      error(start,
            "leading zeros in decimal integer literals are not permitted; use an 0o prefix for "
            "octal integers");
      pos_ = p;
      emit_real(TokenKind::Number, start, p);
      return;
    } else {
      return finish("decimal");
    }
  } else {
    if (!decimal_tail()) return number_error(start, p, "invalid decimal literal");
    if (peek(p) == '.' && p < size_) {
      ++p;
      fraction = true;
    }
  }
  if (fraction && is_digit(peek(p)) && p < size_) {
    if (!decimal_tail()) return number_error(start, p, "invalid decimal literal");
  }
  c = p < size_ ? text_[p] : '\0';
  if (c == 'e' || c == 'E') {
    const std::uint32_t e = p;
    ++p;
    const char s = peek(p);
    if ((s == '+' || s == '-') && p < size_) {
      ++p;
      if (!is_digit(peek(p)) || p >= size_)
        return number_error(start, p, "invalid decimal literal");
    } else if (!is_digit(s) || p >= size_) {
      // `1else`: the number ends before the 'e'.
      p = e;
      return finish("decimal");
    }
    if (!decimal_tail()) return number_error(start, p, "invalid decimal literal");
    c = p < size_ ? text_[p] : '\0';
  }
  if (c == 'j' || c == 'J') {
    ++p;
    return finish("imaginary");
  }
  finish("decimal");
}

// ---- strings ----

void Lexer::lex_string(std::uint32_t start, std::uint32_t quote_pos, bool raw, bool fstring,
                       bool tstring) {
  if (fstring || tstring) {
    start_fstring(start, quote_pos, raw, tstring);
    return;
  }
  const char q = text_[quote_pos];
  const bool triple = peek(quote_pos + 1) == q && peek(quote_pos + 2) == q && quote_pos + 2 < size_;
  std::uint32_t p = quote_pos + (triple ? 3 : 1);
  for (;;) {
    if (triple) p = skip_to_quote_or_backslash(p, q);  // long docstrings: memchr, not a loop
    if (p >= size_) break;
    const char c = text_[p];
    if (c == '\\') {
      ++p;
      if (p < size_) p += (text_[p] == '\r' && peek(p + 1) == '\n' && p + 1 < size_) ? 2 : 1;
      continue;
    }
    if (c == q) {
      if (!triple) {
        emit_real(TokenKind::String, start, p + 1);
        return;
      }
      if (peek(p + 1) == q && peek(p + 2) == q && p + 2 < size_) {
        emit_real(TokenKind::String, start, p + 3);
        return;
      }
    } else if (!triple && (c == '\n' || c == '\r')) {
      break;
    }
    ++p;
  }
  // Unterminated. Inside an f-string expression, a quote like the f-string's own means a
  // missing '}' (as CPython reports it); close the f-string there.
  if (!fstrings_.empty() && !fstrings_.back().in_middle && start == quote_pos) {
    FStringFrame& f = fstrings_.back();
    if (f.quote == q && f.triple == triple) {
      error(start, "f-string: expecting '}'");
      brackets_.resize(f.paren_base);
      bracket_offsets_.resize(f.paren_base);
      const TokenKind end_kind = f.is_t ? TokenKind::TStringEnd : TokenKind::FStringEnd;
      fstrings_.pop_back();
      emit_real(end_kind, start, start + (triple ? 3 : 1));
      return;
    }
  }
  if (triple) {
    error(start, "unterminated triple-quoted string literal (detected at line " +
                     std::to_string(line_of(size_ > 0 ? size_ - 1 : 0)) + ")");
  } else {
    error(start,
          "unterminated string literal (detected at line " + std::to_string(line_of(p)) + ")");
  }
  emit_real(TokenKind::Error, start, p);
}

// ---- operators ----

void Lexer::open_bracket(char c, TokenKind kind) {
  brackets_.push_back(c);
  bracket_offsets_.push_back(pos_);
  if (brackets_.size() == 201) error(pos_, "too many nested parentheses");
  emit_real(kind, pos_, pos_ + 1);
}

void Lexer::close_bracket(char c, TokenKind kind) {
  const std::uint32_t base = fstrings_.empty() ? 0 : fstrings_.back().paren_base;
  if (c == '}' && !fstrings_.empty() && !fstrings_.back().in_middle &&
      !(brackets_.size() > base && brackets_.back() == '{')) {
    close_field(pos_);
    return;
  }
  const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
  if (brackets_.size() <= base) {
    error(pos_, std::string("unmatched '") + c + "'");
  } else if (brackets_.back() == kFieldBrace) {
    error(pos_, std::string("f-string: unmatched '") + c + "'");
  } else {
    if (brackets_.back() != open) {
      error(pos_, std::string("closing parenthesis '") + c +
                      "' does not match opening parenthesis '" + brackets_.back() + "'");
    }
    brackets_.pop_back();
    bracket_offsets_.pop_back();
  }
  emit_real(kind, pos_, pos_ + 1);
}

void Lexer::lex_operator() {
  using K = TokenKind;
  const std::uint32_t s = pos_;
  const char c = text_[s];
  const char c1 = peek(s + 1);
  const char c2 = peek(s + 2);
  auto op = [&](K kind, std::uint32_t len) { emit_real(kind, s, s + len); };
  switch (c) {
    case '(':
      return open_bracket('(', K::LPar);
    case '[':
      return open_bracket('[', K::LSqb);
    case '{':
      return open_bracket('{', K::LBrace);
    case ')':
      return close_bracket(')', K::RPar);
    case ']':
      return close_bracket(']', K::RSqb);
    case '}':
      return close_bracket('}', K::RBrace);
    case ':': {
      if (!fstrings_.empty() && !fstrings_.back().in_middle &&
          brackets_.size() > fstrings_.back().paren_base && brackets_.back() == kFieldBrace) {
        op(K::Colon, 1);
        fstrings_.back().in_middle = true;  // the format spec
        return;
      }
      return c1 == '=' ? op(K::ColonEqual, 2) : op(K::Colon, 1);
    }
    case ',':
      return op(K::Comma, 1);
    case ';':
      return op(K::Semi, 1);
    case '.':
      return (c1 == '.' && c2 == '.') ? op(K::Ellipsis, 3) : op(K::Dot, 1);
    case '~':
      return op(K::Tilde, 1);
    case '`':
      return op(K::Backtick, 1);
    case '!':
      return c1 == '=' ? op(K::NotEqual, 2) : op(K::Exclamation, 1);
    case '+':
      return c1 == '=' ? op(K::PlusEqual, 2) : op(K::Plus, 1);
    case '-':
      if (c1 == '>') return op(K::RArrow, 2);
      return c1 == '=' ? op(K::MinusEqual, 2) : op(K::Minus, 1);
    case '*':
      if (c1 == '*') return c2 == '=' ? op(K::DoubleStarEqual, 3) : op(K::DoubleStar, 2);
      return c1 == '=' ? op(K::StarEqual, 2) : op(K::Star, 1);
    case '/':
      if (c1 == '/') return c2 == '=' ? op(K::DoubleSlashEqual, 3) : op(K::DoubleSlash, 2);
      return c1 == '=' ? op(K::SlashEqual, 2) : op(K::Slash, 1);
    case '%':
      return c1 == '=' ? op(K::PercentEqual, 2) : op(K::Percent, 1);
    case '@':
      return c1 == '=' ? op(K::AtEqual, 2) : op(K::At, 1);
    case '|':
      return c1 == '=' ? op(K::VBarEqual, 2) : op(K::VBar, 1);
    case '&':
      return c1 == '=' ? op(K::AmperEqual, 2) : op(K::Amper, 1);
    case '^':
      return c1 == '=' ? op(K::CircumflexEqual, 2) : op(K::Circumflex, 1);
    case '=':
      return c1 == '=' ? op(K::EqEqual, 2) : op(K::Equal, 1);
    case '<':
      if (c1 == '<') return c2 == '=' ? op(K::LeftShiftEqual, 3) : op(K::LeftShift, 2);
      if (c1 == '>') return op(K::LessGreater, 2);
      return c1 == '=' ? op(K::LessEqual, 2) : op(K::Less, 1);
    case '>':
      if (c1 == '>') return c2 == '=' ? op(K::RightShiftEqual, 3) : op(K::RightShift, 2);
      return c1 == '=' ? op(K::GreaterEqual, 2) : op(K::Greater, 1);
    default:
      break;
  }
  if (c != '\0') {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      error(s, "invalid non-printable character " + format_cp(u));
    } else {
      error(s, "invalid syntax");
    }
  }
  op(K::Error, 1);
}

}  // namespace detail

LexResult tokenize(std::string_view text) { return detail::Lexer(text).run(); }

}  // namespace torchport::syntax
