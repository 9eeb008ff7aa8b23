// Tokens of the lossless Python lexer.
//
// Every byte of a decoded source belongs to exactly one token: trivia (whitespace, comments,
// line continuations, non-logical newlines) are tokens too, so concatenating the text of all
// tokens in order gives back the source byte for byte. INDENT, DEDENT and END_MARKER are
// zero-width. Offsets are byte offsets into the UTF-8 text of text::SourceFile (BOM removed).
#pragma once

#include <cstdint>
#include <string_view>

namespace torchport::syntax {

enum class TokenKind : std::uint8_t {
  // ---- trivia: never seen by the parser's grammar, kept for losslessness ----
  Whitespace,         ///< spaces, tabs and form feeds (including indentation at line start)
  Comment,            ///< `# ...` up to, not including, the line break
  Continuation,       ///< a backslash followed by its line break
  NonLogicalNewline,  ///< NL: a line break that does not end a logical line (blank line, inside
                      ///< brackets)

  // ---- structure ----
  Newline,    ///< NEWLINE: the line break ending a logical line (zero-width at EOF without one)
  Indent,     ///< INDENT, zero-width, emitted before the first token of a more-indented line
  Dedent,     ///< DEDENT, zero-width, one per closed indentation level
  EndMarker,  ///< zero-width, last token of every stream

  // ---- atoms ----
  Name,           ///< identifier, including soft keywords (match, case, type, _)
  Number,         ///< int, float or imaginary literal, underscores allowed
  String,         ///< a whole non-f/t string literal with its prefix and quotes
  FStringStart,   ///< `f"`, `rf'''`, ... (PEP 701)
  FStringMiddle,  ///< literal text inside an f-string, including doubled braces
  FStringEnd,     ///< closing quote(s) of an f-string
  TStringStart,   ///< `t"`, `rt'''`, ... (PEP 750)
  TStringMiddle,  ///< literal text inside a t-string
  TStringEnd,     ///< closing quote(s) of a t-string

  // ---- hard keywords ----
  KwFalse,
  KwNone,
  KwTrue,
  KwAnd,
  KwAs,
  KwAssert,
  KwAsync,
  KwAwait,
  KwBreak,
  KwClass,
  KwContinue,
  KwDef,
  KwDel,
  KwElif,
  KwElse,
  KwExcept,
  KwFinally,
  KwFor,
  KwFrom,
  KwGlobal,
  KwIf,
  KwImport,
  KwIn,
  KwIs,
  KwLambda,
  KwNonlocal,
  KwNot,
  KwOr,
  KwPass,
  KwRaise,
  KwReturn,
  KwTry,
  KwWhile,
  KwWith,
  KwYield,

  // ---- operators and delimiters ----
  LPar,
  RPar,
  LSqb,
  RSqb,
  LBrace,
  RBrace,
  Colon,
  Comma,
  Semi,
  Dot,
  Ellipsis,
  RArrow,
  ColonEqual,
  Exclamation,
  Plus,
  Minus,
  Star,
  Slash,
  DoubleSlash,
  Percent,
  DoubleStar,
  At,
  VBar,
  Amper,
  Circumflex,
  Tilde,
  LeftShift,
  RightShift,
  Less,
  Greater,
  EqEqual,
  NotEqual,
  LessEqual,
  GreaterEqual,
  Equal,
  PlusEqual,
  MinusEqual,
  StarEqual,
  SlashEqual,
  DoubleSlashEqual,
  PercentEqual,
  DoubleStarEqual,
  AtEqual,
  VBarEqual,
  AmperEqual,
  CircumflexEqual,
  LeftShiftEqual,
  RightShiftEqual,

  // ---- Python 2 only, recognised so that the error can say "Python 2" ----
  Backtick,     ///< `x`
  LessGreater,  ///< <>

  // ---- errors ----
  Error,  ///< bytes the lexer could not make a token of; a diagnostic explains why
};

/// True for kinds the grammar never sees.
constexpr bool is_trivia(TokenKind k) { return k <= TokenKind::NonLogicalNewline; }

/// True for the hard keywords.
constexpr bool is_keyword(TokenKind k) {
  return k >= TokenKind::KwFalse && k <= TokenKind::KwYield;
}

/// A stable, human-readable name ("Name", "LPar", ...), for dumps and diagnostics.
std::string_view token_kind_name(TokenKind k);

/// Token::flags of a String token, set by the lexer so that a reader of the literal need not
/// scan it again: a backslash between its quotes (an escape, or a raw string's backslash), a
/// triple-quoted literal, a bytes literal (a 'b' or 'B' in the prefix), and the prefix's length
/// (0 to 2 letters) in bits 3-4. Other tokens have no flags.
inline constexpr std::uint8_t kTokenHasBackslash = 1;
inline constexpr std::uint8_t kTokenTripleQuoted = 2;
inline constexpr std::uint8_t kTokenBytes = 4;
inline constexpr int kTokenPrefixShift = 3;

struct Token {
  TokenKind kind;
  std::uint8_t flags;   ///< kToken* bits (String tokens), in what was padding
  std::uint32_t begin;  ///< byte offset of the first byte
  std::uint32_t end;    ///< byte offset one past the last byte
  std::uint32_t size() const { return end - begin; }
  std::string_view text(std::string_view source) const { return source.substr(begin, end - begin); }
  /// String token: the number of prefix letters before the opening quote.
  std::uint32_t prefix_size() const { return (flags >> kTokenPrefixShift) & 3u; }
};

}  // namespace torchport::syntax
