// f-strings (PEP 701) and t-strings (PEP 750): the literal middles, replacement fields, format
// specs and nesting. The expression parts of a field are lexed by the normal lexer; the bracket
// stack marks each field's opening brace with kFieldBrace so that `:` and `}` at the field's
// own level are recognised.
#include <string>

#include "lexer_impl.h"

namespace torchport::syntax::detail {

void Lexer::start_fstring(std::uint32_t start, std::uint32_t quote_pos, bool raw, bool is_t) {
  FStringFrame f;
  f.quote = text_[quote_pos];
  f.triple =
      peek(quote_pos + 1) == f.quote && peek(quote_pos + 2) == f.quote && quote_pos + 2 < size_;
  f.raw = raw;
  f.is_t = is_t;
  f.in_middle = true;
  f.paren_base = static_cast<std::uint32_t>(brackets_.size());
  f.start = start;
  emit_real(is_t ? TokenKind::TStringStart : TokenKind::FStringStart, start,
            quote_pos + (f.triple ? 3 : 1));
  fstrings_.push_back(f);
}

void Lexer::close_field(std::uint32_t at) {
  FStringFrame& f = fstrings_.back();
  bool mismatch = false;
  while (brackets_.size() > f.paren_base && brackets_.back() != kFieldBrace) {
    if (!mismatch) {
      error(at,
            std::string("f-string: closing parenthesis '}' does not match opening parenthesis '") +
                brackets_.back() + "'");
    }
    mismatch = true;
    brackets_.pop_back();
    bracket_offsets_.pop_back();
  }
  if (brackets_.size() > f.paren_base) {
    brackets_.pop_back();
    bracket_offsets_.pop_back();
  }
  f.in_middle = true;
  emit_real(TokenKind::RBrace, at, at + 1);
}

void Lexer::unterminated_fstring(std::uint32_t detected_at) {
  const FStringFrame f = fstrings_.back();
  fstrings_.pop_back();
  brackets_.resize(f.paren_base);
  bracket_offsets_.resize(f.paren_base);
  error(f.start, std::string("unterminated ") + (f.triple ? "triple-quoted " : "") +
                     (f.is_t ? "t-string" : "f-string") + " literal (detected at line " +
                     std::to_string(line_of(detected_at)) + ")");
}

void Lexer::lex_fstring_middle() {
  FStringFrame& f = fstrings_.back();
  const bool spec = brackets_.size() > f.paren_base;
  const TokenKind middle = f.is_t ? TokenKind::TStringMiddle : TokenKind::FStringMiddle;
  const std::uint32_t start = pos_;
  auto flush = [&](std::uint32_t p) {
    if (p > start) {
      emit_real(middle, start, p);
      add_line_starts(start, p);
    }
  };
  std::uint32_t p = pos_;
  for (;;) {
    if (p >= size_) {
      flush(p);
      unterminated_fstring(size_ > 0 ? size_ - 1 : 0);
      return;
    }
    const char c = text_[p];
    if (c == f.quote) {
      if (!f.triple || (peek(p + 1) == c && peek(p + 2) == c && p + 2 < size_)) {
        flush(p);
        if (spec) {
          error(p, "f-string: expecting '}'");
          brackets_.resize(f.paren_base);
          bracket_offsets_.resize(f.paren_base);
        }
        const std::uint32_t len = f.triple ? 3 : 1;
        const TokenKind end_kind = f.is_t ? TokenKind::TStringEnd : TokenKind::FStringEnd;
        fstrings_.pop_back();
        emit_real(end_kind, p, p + len);
        return;
      }
      ++p;
      continue;
    }
    switch (c) {
      case '\\': {
        if (p + 1 >= size_) {
          ++p;
          continue;
        }
        const char n = text_[p + 1];
        if (!f.raw && n == 'N' && peek(p + 2) == '{' && p + 2 < size_) {
          // \N{NAME}: the braces belong to the escape.
          std::uint32_t q = p + 3;
          while (q < size_ && text_[q] != '}' && text_[q] != f.quote && text_[q] != '\n' &&
                 text_[q] != '\r') {
            ++q;
          }
          p = (q < size_ && text_[q] == '}') ? q + 1 : p + 2;
          continue;
        }
        if (n == '{' || n == '}') {
          ++p;  // the brace is handled on its own
          continue;
        }
        p += (n == '\r' && peek(p + 2) == '\n' && p + 2 < size_) ? 3 : 2;
        continue;
      }
      case '{':
        if (!spec && peek(p + 1) == '{' && p + 1 < size_) {
          p += 2;
          continue;
        }
        flush(p);
        brackets_.push_back(kFieldBrace);
        bracket_offsets_.push_back(p);
        if (brackets_.size() == 201) error(p, "too many nested parentheses");
        f.in_middle = false;
        emit_real(TokenKind::LBrace, p, p + 1);
        return;
      case '}':
        if (!spec) {
          if (peek(p + 1) == '}' && p + 1 < size_) {
            p += 2;
            continue;
          }
          flush(p);
          error(p, "f-string: single '}' is not allowed");
          emit_real(TokenKind::Error, p, p + 1);
          return;
        }
        flush(p);
        close_field(p);
        return;
      case '\n':
      case '\r':
        if (f.triple) break;
        flush(p);
        if (spec) {
          // Python 3.13+: a line break inside a single-quoted format spec is non-logical.
          emit(TokenKind::NonLogicalNewline, p, p + newline_length(p));
          add_line_start(p + newline_length(p));
          return;
        }
        unterminated_fstring(p);
        return;
      default:
        break;
    }
    ++p;
  }
}

}  // namespace torchport::syntax::detail
