// Internal: the lexer's state machine, shared by lexer.cc, lexer_indent.cc and lexer_fstring.cc.
#pragma once

#include <torchport/syntax/lexer.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::syntax::detail {

/// One open f-string or t-string (PEP 701 / PEP 750).
struct FStringFrame {
  char quote = '"';
  bool triple = false;
  bool raw = false;
  bool is_t = false;             ///< t-string: emit TString* kinds
  bool in_middle = true;         ///< scanning literal text (top level or a format spec)
  std::uint32_t paren_base = 0;  ///< size of the bracket stack when the string started
  std::uint32_t start = 0;       ///< offset of the prefix, for diagnostics
};

/// Marks a replacement field's `{` on the bracket stack.
inline constexpr char kFieldBrace = 'F';

class Lexer {
 public:
  explicit Lexer(std::string_view text);
  LexResult run();

 private:
  // ---- lexer.cc ----
  void lex_normal();
  void lex_name_or_string();
  void lex_non_ascii();
  void lex_number();
  void lex_string(std::uint32_t start, std::uint32_t quote_pos, bool raw, bool fstring,
                  bool tstring);
  void lex_operator();
  void lex_newline();
  void lex_backslash();
  void lex_at_eof();
  void open_bracket(char c, TokenKind kind);
  void close_bracket(char c, TokenKind kind);
  bool verify_end_of_number(const char* kind_name);
  void number_error(std::uint32_t start, std::uint32_t bad, std::string message);

  // ---- lexer_indent.cc ----
  void lex_line_start();
  void apply_indentation(std::uint32_t at);

  // ---- lexer_fstring.cc ----
  void start_fstring(std::uint32_t start, std::uint32_t quote_pos, bool raw, bool is_t);
  void lex_fstring_middle();
  void close_field(std::uint32_t at);
  void unterminated_fstring(std::uint32_t detected_at);

  // ---- helpers ----
  // emit and emit_real are inline: every token goes through one of them, and as calls their
  // register saves cost more than their bodies. always_inline: GCC's own choice turned
  // emit_real into a call from lex_operator() and others once lexer.cc grew (+50 M
  // instructions on the torch tree).
  [[gnu::always_inline]] void emit(TokenKind kind, std::uint32_t begin, std::uint32_t end) {
    result_.tokens.push_back(Token{kind, 0, begin, end});
    pos_ = end;
  }
  /// Emits a token the grammar sees: the pending indentation of its line comes first.
  [[gnu::always_inline]] void emit_real(TokenKind kind, std::uint32_t begin, std::uint32_t end) {
    if (indent_pending_) apply_indentation(begin);
    line_has_token_ = true;
    after_continuation_ = false;
    emit(kind, begin, end);
  }
  /// Records the line starts of the line breaks in [b, e): the bytes of a token that may hold
  /// some (a triple-quoted string, an f-string's middle, an unterminated string).
  void add_line_starts(std::uint32_t b, std::uint32_t e);
  /// Records the line start after a token that is one line break (NEWLINE, NL, a continuation).
  void add_line_start(std::uint32_t after) { result_.line_starts.push_back(after); }
  /// The first byte at or after `p` that is not an ASCII letter, digit or '_' (or size_).
  /// Inline (lexer.cc, its only user): called once a name, its call and its vector constants'
  /// loads cost as much as its sixteen-byte step.
  [[gnu::always_inline]] inline std::uint32_t skip_ascii_ident(std::uint32_t p) const;
  /// The first '\\' or `q` at or after `p`, or size_ (a triple-quoted string's body).
  std::uint32_t skip_to_quote_or_backslash(std::uint32_t p, char q) const;
  void error(std::uint32_t offset, std::string message);
  void warning(std::uint32_t offset, std::string message);
  std::uint32_t line_of(std::uint32_t offset);  ///< 1-based; offsets must not decrease much
  char peek(std::uint32_t at) const { return at < size_ ? text_[at] : '\0'; }
  bool at_end() const { return pos_ >= size_; }
  std::uint32_t newline_length(std::uint32_t at) const;  ///< 0, 1 ("\n", "\r") or 2 ("\r\n")

  std::string_view text_;
  std::uint32_t size_;
  std::uint32_t pos_ = 0;
  LexResult result_;

  // Logical line state.
  bool at_line_start_ = true;    ///< next byte begins a physical line outside brackets
  bool indent_pending_ = false;  ///< the current line's indentation is not applied yet
  std::uint32_t pending_col_ = 0;
  std::uint32_t pending_altcol_ = 0;
  bool line_has_token_ = false;  ///< a real token was emitted on this logical line
  bool after_continuation_ = false;
  bool reported_nul_ = false;

  std::vector<std::uint32_t> indents_{0};
  std::vector<std::uint32_t> altindents_{0};
  std::vector<char> brackets_;  ///< '(', '[', '{' or kFieldBrace
  std::vector<std::uint32_t> bracket_offsets_;
  std::vector<FStringFrame> fstrings_;

  // Monotonic line counter for "detected at line N".
  std::uint32_t line_scan_pos_ = 0;
  std::uint32_t line_scan_line_ = 1;
};

/// Decodes one UTF-8 code point at `p` (bounded by `end`); returns its length (1 for an invalid
/// byte, with `cp` set to 0xFFFFFFFF).
int decode_utf8(const char* p, const char* end, std::uint32_t& cp);
bool is_ident_start_cp(std::uint32_t cp);
bool is_ident_continue_cp(std::uint32_t cp);
bool is_non_printable_cp(std::uint32_t cp);

}  // namespace torchport::syntax::detail
