// The lexer's main loop: names, keywords, numbers, plain strings, operators, comments, line
// breaks and continuations. Indentation is in lexer_indent.cc, f/t-strings in lexer_fstring.cc.
#include <torchport/syntax/lexer.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/// What a byte starts, for lex_normal's dispatch: one table load and one switch per token
/// instead of a chain of range tests.
enum class ByteClass : std::uint8_t {
  Operator,    ///< operators, delimiters and anything else (control characters, NUL, '$', ...)
  Space,       ///< ' ', '\t', '\f'
  Newline,     ///< '\n', '\r'
  Hash,        ///< '#'
  Backslash,   ///< '\\'
  Quote,       ///< '\'', '"'
  Dot,         ///< '.': an operator, or a number such as `.5`
  Open,        ///< '(', '[', '{'
  Close,       ///< ')', ']', '}'
  Comma,       ///< ','
  Equal,       ///< '=': '=' or '=='
  Colon,       ///< ':': ':' or ':=' (or, in an f-string's field, the start of a format spec)
  IdentStart,  ///< ASCII letters and '_'
  Digit,       ///< '0'..'9'
  NonAscii,    ///< bytes >= 0x80
};
constexpr std::array<ByteClass, 256> kByteClass = [] {
  std::array<ByteClass, 256> t{};
  for (int c = 0; c < 256; ++c) {
    ByteClass k = ByteClass::Operator;
    if (c == ' ' || c == '\t' || c == '\f') k = ByteClass::Space;
    if (c == '\n' || c == '\r') k = ByteClass::Newline;
    if (c == '#') k = ByteClass::Hash;
    if (c == '\\') k = ByteClass::Backslash;
    if (c == '\'' || c == '"') k = ByteClass::Quote;
    if (c == '.') k = ByteClass::Dot;
    if (c == '(' || c == '[' || c == '{') k = ByteClass::Open;
    if (c == ')' || c == ']' || c == '}') k = ByteClass::Close;
    if (c == ',') k = ByteClass::Comma;
    if (c == '=') k = ByteClass::Equal;
    if (c == ':') k = ByteClass::Colon;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') k = ByteClass::IdentStart;
    if (c >= '0' && c <= '9') k = ByteClass::Digit;
    if (c >= 0x80) k = ByteClass::NonAscii;
    t[static_cast<std::size_t>(c)] = k;
  }
  return t;
}();
ByteClass byte_class(char c) { return kByteClass[static_cast<unsigned char>(c)]; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
/// CPython's is_potential_identifier_char: ASCII letters, digits, '_' and any non-ASCII byte.
bool is_potential_ident_char(char c) {
  return is_ascii_ident_char(c) || static_cast<unsigned char>(c) >= 0x80;
}

struct Keyword {
  std::string_view word;
  TokenKind kind;
};
constexpr Keyword kKeywords[] = {
    {"False", TokenKind::KwFalse},
    {"None", TokenKind::KwNone},
    {"True", TokenKind::KwTrue},
    {"and", TokenKind::KwAnd},
    {"as", TokenKind::KwAs},
    {"assert", TokenKind::KwAssert},
    {"async", TokenKind::KwAsync},
    {"await", TokenKind::KwAwait},
    {"break", TokenKind::KwBreak},
    {"class", TokenKind::KwClass},
    {"continue", TokenKind::KwContinue},
    {"def", TokenKind::KwDef},
    {"del", TokenKind::KwDel},
    {"elif", TokenKind::KwElif},
    {"else", TokenKind::KwElse},
    {"except", TokenKind::KwExcept},
    {"finally", TokenKind::KwFinally},
    {"for", TokenKind::KwFor},
    {"from", TokenKind::KwFrom},
    {"global", TokenKind::KwGlobal},
    {"if", TokenKind::KwIf},
    {"import", TokenKind::KwImport},
    {"in", TokenKind::KwIn},
    {"is", TokenKind::KwIs},
    {"lambda", TokenKind::KwLambda},
    {"nonlocal", TokenKind::KwNonlocal},
    {"not", TokenKind::KwNot},
    {"or", TokenKind::KwOr},
    {"pass", TokenKind::KwPass},
    {"raise", TokenKind::KwRaise},
    {"return", TokenKind::KwReturn},
    {"try", TokenKind::KwTry},
    {"while", TokenKind::KwWhile},
    {"with", TokenKind::KwWith},
    {"yield", TokenKind::KwYield},
};

/// A name of two to eight bytes as the integer a little-endian load of its bytes gives, with
/// the bytes past its end zero.
constexpr std::uint64_t pack_word(std::string_view w) {
  std::uint64_t v = 0;
  for (std::size_t i = w.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(w[i]);
  return v;
}

/// The keyword table's slot of a packed word: a multiplicative hash whose constant was chosen
/// (by a search) so that the 35 keywords land in 35 different slots of 64 (checked below).
constexpr std::uint64_t kKeywordHash = 0xb57c8e05e3c9b0e1ull;
constexpr unsigned kKeywordSlotBits = 6;
constexpr std::size_t keyword_slot(std::uint64_t packed) {
  return static_cast<std::size_t>((packed * kKeywordHash) >> (64 - kKeywordSlotBits));
}

struct KeywordSlot {
  std::uint64_t packed = 0;  ///< 0: no keyword (a name's packed bytes are never 0)
  TokenKind kind = TokenKind::Name;
};
constexpr auto kKeywordSlots = [] {
  std::array<KeywordSlot, std::size_t{1} << kKeywordSlotBits> t{};
  for (const Keyword& k : kKeywords)
    t[keyword_slot(pack_word(k.word))] = {pack_word(k.word), k.kind};
  return t;
}();
static_assert(
    [] {
      std::size_t filled = 0;
      for (const KeywordSlot& s : kKeywordSlots) filled += s.packed != 0 ? 1 : 0;
      return filled == std::size(kKeywords);
    }(),
    "two keywords share a slot of the keyword hash");

/// The kind of the name text[begin, end) (a keyword's, or Name); `size` bounds the text. One
/// 8-byte load (a byte copy within eight bytes of the end of the text), a mask to the name's
/// length, a multiply and one slot's compare: names are a third of all tokens, and the search
/// of a per-first-letter list this replaced cost about 40 instructions a name.
TokenKind keyword_kind(const char* text, std::uint32_t begin, std::uint32_t end,
                       std::uint32_t size) {
  const std::uint32_t n = end - begin;
  if (n < 2 || n > 8) return TokenKind::Name;
  std::uint64_t v = 0;
  if (size - begin >= 8) {
    std::memcpy(&v, text + begin, 8);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    v &= ~std::uint64_t{0} >> (64 - 8 * n);
  } else {
    for (std::uint32_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(text[begin + i]);
  }
  const KeywordSlot& s = kKeywordSlots[keyword_slot(v)];
  return s.packed == v ? s.kind : TokenKind::Name;
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
  result_.line_starts.reserve(size_ / 32 + 1);
  result_.line_starts.push_back(0);
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

void Lexer::add_line_starts(std::uint32_t b, std::uint32_t e) {
  // As LineIndex: one past each '\n', and one past each '\r' that no '\n' follows (the '\n' of
  // a CRLF ends its line; it may be in the next token).
  const char* const s = text_.data();
  auto line_break = [&](std::uint32_t at) {
    if (s[at] == '\n' || peek(at + 1) != '\n') result_.line_starts.push_back(at + 1);
  };
  std::uint32_t i = b;
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n');
  const __m128i cr = _mm_set1_epi8('\r');
  for (; e - i >= 16; i += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    auto breaks = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(block, lf), _mm_cmpeq_epi8(block, cr))));
    while (breaks != 0) {
      line_break(i + static_cast<std::uint32_t>(std::countr_zero(breaks)));
      breaks &= breaks - 1;
    }
  }
#endif
  for (; i < e; ++i)
    if (s[i] == '\n' || s[i] == '\r') line_break(i);
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
  // One token per iteration, for as long as run() has nothing to do: it takes over at the
  // start of each line (indentation), at the end of the text, and while an f-string is open.
  // Returning to run() early is always right (it calls lex_normal() again when nothing else is
  // due); going on is right only while those three do not hold. So each is tested only where
  // it can have changed: at_line_start_ after a line break (lex_newline() is what sets it), an
  // f-string after a name (lex_name_or_string() is what opens one), and inside a replacement
  // field run() gets each token back. The text's address and size are locals: a token's store
  // (a byte, TokenKind) may alias any member, so members are reloaded after every token.
  const char* const text = text_.data();
  const std::uint32_t size = size_;
  const bool in_fstring = !fstrings_.empty();
  for (;;) {
    const std::uint32_t start = pos_;
    const char c = text[start];
    switch (byte_class(c)) {
      case ByteClass::Space: {
        std::uint32_t p = start + 1;
        while (p < size && byte_class(text[p]) == ByteClass::Space) ++p;
        emit(TokenKind::Whitespace, start, p);
        break;
      }
      case ByteClass::Newline:
        lex_newline();
        if (at_line_start_) return;
        break;
      case ByteClass::Hash: {
        // Up to the line break: '\n' by memchr, then a lone '\r' before it (rare).
        const char* b = text + start + 1;
        const char* e = text + size;
        if (const void* nl = std::memchr(b, '\n', static_cast<std::size_t>(e - b)))
          e = static_cast<const char*>(nl);
        if (const void* cr = std::memchr(b, '\r', static_cast<std::size_t>(e - b)))
          e = static_cast<const char*>(cr);
        emit(TokenKind::Comment, start, static_cast<std::uint32_t>(e - text));
        break;
      }
      case ByteClass::Backslash:
        lex_backslash();
        break;
      case ByteClass::Quote:
        lex_string(start, start, false, false, false);
        break;
      // The commonest operators are lexed here, not in lex_operator() (whose entry and exit
      // cost more than they do): '.', ',', '=', ':' and the brackets.
      case ByteClass::Dot:
        if (start + 1 < size && is_digit(text[start + 1])) {
          lex_number();
        } else if (start + 2 < size && text[start + 1] == '.' && text[start + 2] == '.') {
          emit_real(TokenKind::Ellipsis, start, start + 3);
        } else {
          emit_real(TokenKind::Dot, start, start + 1);
        }
        break;
      case ByteClass::Open:
        open_bracket(c, c == '('   ? TokenKind::LPar
                        : c == '[' ? TokenKind::LSqb
                                   : TokenKind::LBrace);
        break;
      case ByteClass::Close:
        close_bracket(c, c == ')'   ? TokenKind::RPar
                         : c == ']' ? TokenKind::RSqb
                                    : TokenKind::RBrace);
        break;
      case ByteClass::Comma:
        emit_real(TokenKind::Comma, start, start + 1);
        break;
      case ByteClass::Equal:
        if (start + 1 < size && text[start + 1] == '=') {
          emit_real(TokenKind::EqEqual, start, start + 2);
        } else {
          emit_real(TokenKind::Equal, start, start + 1);
        }
        break;
      case ByteClass::Colon:
        if (in_fstring) {
          lex_operator();  // a format spec may start here
        } else if (start + 1 < size && text[start + 1] == '=') {
          emit_real(TokenKind::ColonEqual, start, start + 2);
        } else {
          emit_real(TokenKind::Colon, start, start + 1);
        }
        break;
      case ByteClass::IdentStart:
        lex_name_or_string();
        if (!fstrings_.empty()) return;
        break;
      case ByteClass::Digit:
        lex_number();
        break;
      case ByteClass::NonAscii:
        lex_non_ascii();
        break;
      case ByteClass::Operator:
        lex_operator();
        break;
    }
    if (pos_ >= size || in_fstring) return;
  }
}

void Lexer::lex_newline() {
  // pos_ is at a '\n' or a '\r' (lex_normal()'s Newline class); a CRLF is one line break. One
  // emit, of the kind chosen first: the state it reads is read before the token's store.
  const std::uint32_t start = pos_;
  const std::uint32_t end =
      start + (text_[start] == '\r' && start + 1 < size_ && text_[start + 1] == '\n' ? 2 : 1);
  after_continuation_ = false;
  add_line_start(end);
  const bool in_brackets = !brackets_.empty();
  emit(!in_brackets && line_has_token_ ? TokenKind::Newline : TokenKind::NonLogicalNewline, start,
       end);
  if (in_brackets) return;
  line_has_token_ = false;
  indent_pending_ = false;
  at_line_start_ = true;
}

void Lexer::lex_backslash() {
  const std::uint32_t start = pos_;
  const std::uint32_t nl = newline_length(start + 1);
  if (nl > 0) {
    emit(TokenKind::Continuation, start, start + 1 + nl);
    add_line_start(start + 1 + nl);
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

std::uint32_t Lexer::skip_ascii_ident(std::uint32_t p) const {
#if defined(__SSE2__)
  // Sixteen bytes at a time while sixteen remain: a byte is an identifier byte when it is a
  // digit, '_', or a letter (b | 0x20 in 'a'..'z'). Each range is one add and one signed
  // compare: adding 0x80 - lo (mod 256) moves [lo, lo + n) to [-128, -128 + n), and every byte
  // outside the range to n or above it. The first byte that is not ends the run.
  const __m128i to_letters = _mm_set1_epi8(static_cast<char>(0x80 - 'a'));
  const __m128i letters_end = _mm_set1_epi8(static_cast<char>(-128 + 26));
  const __m128i to_digits = _mm_set1_epi8(static_cast<char>(0x80 - '0'));
  const __m128i digits_end = _mm_set1_epi8(static_cast<char>(-128 + 10));
  const __m128i underscore = _mm_set1_epi8('_'), case_bit = _mm_set1_epi8(0x20);
  while (size_ - p >= 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text_.data() + p));
    const __m128i letter =
        _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(b, case_bit), to_letters), letters_end);
    const __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(b, to_digits), digits_end);
    const __m128i ident = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(b, underscore));
    const auto others = static_cast<unsigned>(_mm_movemask_epi8(ident)) ^ 0xFFFFu;
    if (others != 0) return p + static_cast<std::uint32_t>(std::countr_zero(others));
    p += 16;
  }
#endif
  while (p < size_ && is_ascii_ident_char(text_[p])) ++p;
  return p;
}

void Lexer::lex_name_or_string() {
  const std::uint32_t start = pos_;
  std::uint32_t p = skip_ascii_ident(pos_ + 1);
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
      p = skip_ascii_ident(p);
      if (p >= size_ || static_cast<unsigned char>(text_[p]) < 0x80) break;
      std::uint32_t cp;
      const int len = decode_utf8(text_.data() + p, text_.data() + size_, cp);
      if (cp == 0xFFFFFFFFu || !is_ident_continue_cp(cp)) break;
      p += static_cast<std::uint32_t>(len);
    }
  }
  emit_real(keyword_kind(text_.data(), start, p, size_), start, p);
}

void Lexer::lex_non_ascii() {
  const std::uint32_t start = pos_;
  std::uint32_t cp;
  const int len = decode_utf8(text_.data() + start, text_.data() + size_, cp);
  if (cp != 0xFFFFFFFFu && is_ident_start_cp(cp)) {
    std::uint32_t p = start + static_cast<std::uint32_t>(len);
    for (;;) {
      p = skip_ascii_ident(p);
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
  // Token::flags of the literal: its prefix's length and letters, triple quotes, and a
  // backslash when the loop meets one.
  std::uint8_t flags = static_cast<std::uint8_t>((quote_pos - start) << kTokenPrefixShift);
  if (triple) flags |= kTokenTripleQuoted;
  for (std::uint32_t i = start; i < quote_pos; ++i)
    if ((text_[i] | 0x20) == 'b') flags |= kTokenBytes;
  for (;;) {
    if (triple) p = skip_to_quote_or_backslash(p, q);  // long docstrings: memchr, not a loop
    if (p >= size_) break;
    const char c = text_[p];
    if (c == '\\') {
      flags |= kTokenHasBackslash;
      ++p;
      if (p < size_) p += (text_[p] == '\r' && peek(p + 1) == '\n' && p + 1 < size_) ? 2 : 1;
      continue;
    }
    if (c == q) {
      if (!triple) {
        emit_real(TokenKind::String, start, p + 1);
        result_.tokens.back().flags = flags;
        // Only an escaped line break puts one in a single-quoted literal.
        if ((flags & kTokenHasBackslash) != 0) add_line_starts(quote_pos + 1, p);
        return;
      }
      if (peek(p + 1) == q && peek(p + 2) == q && p + 2 < size_) {
        emit_real(TokenKind::String, start, p + 3);
        result_.tokens.back().flags = flags;
        add_line_starts(quote_pos + 3, p);
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
  add_line_starts(quote_pos, p);
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
  // Every case sets `kind` and `len` and breaks to the one emit_real at the end (one inlined
  // copy of it, not one per operator).
  K kind = K::Error;
  std::uint32_t len = 1;
  auto op = [&](K k, std::uint32_t n) {
    kind = k;
    len = n;
  };
  /// `x` or, followed by '=', `x=` (`+` or `+=`, ...).
  auto op_or_eq = [&](K plain, K with_eq) {
    if (c1 == '=') {
      op(with_eq, 2);
    } else {
      op(plain, 1);
    }
  };
  // '.', ',', '=' and the brackets are lex_normal()'s, and ':' outside f-strings.
  switch (c) {
    case ':':
      if (!fstrings_.empty() && !fstrings_.back().in_middle &&
          brackets_.size() > fstrings_.back().paren_base && brackets_.back() == kFieldBrace) {
        emit_real(K::Colon, s, s + 1);
        fstrings_.back().in_middle = true;  // the format spec
        return;
      }
      op_or_eq(K::Colon, K::ColonEqual);
      break;
    case ';':
      op(K::Semi, 1);
      break;
    case '~':
      op(K::Tilde, 1);
      break;
    case '`':
      op(K::Backtick, 1);
      break;
    case '!':
      op_or_eq(K::Exclamation, K::NotEqual);
      break;
    case '+':
      op_or_eq(K::Plus, K::PlusEqual);
      break;
    case '-':
      if (c1 == '>') {
        op(K::RArrow, 2);
      } else {
        op_or_eq(K::Minus, K::MinusEqual);
      }
      break;
    case '*':
      if (c1 == '*') {
        op(c2 == '=' ? K::DoubleStarEqual : K::DoubleStar, c2 == '=' ? 3 : 2);
      } else {
        op_or_eq(K::Star, K::StarEqual);
      }
      break;
    case '/':
      if (c1 == '/') {
        op(c2 == '=' ? K::DoubleSlashEqual : K::DoubleSlash, c2 == '=' ? 3 : 2);
      } else {
        op_or_eq(K::Slash, K::SlashEqual);
      }
      break;
    case '%':
      op_or_eq(K::Percent, K::PercentEqual);
      break;
    case '@':
      op_or_eq(K::At, K::AtEqual);
      break;
    case '|':
      op_or_eq(K::VBar, K::VBarEqual);
      break;
    case '&':
      op_or_eq(K::Amper, K::AmperEqual);
      break;
    case '^':
      op_or_eq(K::Circumflex, K::CircumflexEqual);
      break;
    case '<':
      if (c1 == '<') {
        op(c2 == '=' ? K::LeftShiftEqual : K::LeftShift, c2 == '=' ? 3 : 2);
      } else if (c1 == '>') {
        op(K::LessGreater, 2);
      } else {
        op_or_eq(K::Less, K::LessEqual);
      }
      break;
    case '>':
      if (c1 == '>') {
        op(c2 == '=' ? K::RightShiftEqual : K::RightShift, c2 == '=' ? 3 : 2);
      } else {
        op_or_eq(K::Greater, K::GreaterEqual);
      }
      break;
    default:
      if (c != '\0') {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F) {
          error(s, "invalid non-printable character " + format_cp(u));
        } else {
          error(s, "invalid syntax");
        }
      }
      op(K::Error, 1);
      break;
  }
  emit_real(kind, s, s + len);
}

}  // namespace detail

LexResult tokenize(std::string_view text) { return detail::Lexer(text).run(); }

}  // namespace torchport::syntax
