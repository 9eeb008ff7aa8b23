// Recognising Python 2 code at a syntax error, so that the message can say what is going on:
// print and exec statements, `except X, e:`, `raise E, v`, backticks, `<>`, `0777`, `ur''`,
// long literals `10L`.
#include <torchport/syntax/parser_impl.h>

#include <string>

namespace torchport::syntax {

namespace {

constexpr std::string_view kSuffix = " (this file looks like Python 2 code)";

bool starts_operand(TokenKind k) {
  switch (k) {
    case TokenKind::Name:
    case TokenKind::Number:
    case TokenKind::String:
    case TokenKind::FStringStart:
    case TokenKind::Minus:
    case TokenKind::Tilde:
    case TokenKind::KwNot:
    case TokenKind::KwLambda:
    case TokenKind::KwNone:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
    case TokenKind::Backtick:
    case TokenKind::LSqb:
    case TokenKind::LBrace:
      return true;
    default:
      return false;
  }
}

std::uint32_t prev_significant(const std::vector<Token>& toks, std::uint32_t i) {
  while (i > 0) {
    --i;
    if (!is_trivia(toks[i].kind)) return i;
  }
  return UINT32_MAX;
}

// The first significant token of the logical line holding token `i`.
std::uint32_t statement_start(const std::vector<Token>& toks, std::uint32_t i) {
  std::uint32_t start = i;
  std::uint32_t j = i;
  while (j > 0) {
    --j;
    TokenKind k = toks[j].kind;
    if (k == TokenKind::Newline || k == TokenKind::Indent || k == TokenKind::Dedent ||
        k == TokenKind::Semi || k == TokenKind::Colon)
      break;
    if (!is_trivia(k)) start = j;
  }
  return start;
}

}  // namespace

std::string python2_message(const Tree& tree, std::uint32_t error_token, std::string_view message) {
  const std::vector<Token>& toks = tree.tokens();
  std::string_view src = tree.text();
  // Python 2 octal literals (`0777`), reported by the lexer.
  if (message.find("leading zeros") != std::string_view::npos)
    return std::string(message) + std::string(kSuffix);
  if (error_token == UINT32_MAX) return {};
  if (error_token >= toks.size()) return {};
  const Token& err = toks[error_token];
  if (err.kind == TokenKind::Backtick)
    return "invalid syntax: backquotes are Python 2 repr syntax, use repr(...)" +
           std::string(kSuffix);
  if (err.kind == TokenKind::LessGreater)
    return "invalid syntax: '<>' is Python 2's '!=', use '!='" + std::string(kSuffix);
  std::uint32_t before = prev_significant(toks, error_token);
  std::uint32_t start = statement_start(toks, error_token);
  std::string_view first = toks[start].text(src);
  if (before != UINT32_MAX && before == start && toks[start].kind == TokenKind::Name &&
      (first == "print" || first == "exec") && starts_operand(err.kind)) {
    return "Missing parentheses in call to '" + std::string(first) + "'. Did you mean " +
           std::string(first) + "(...)?" + std::string(kSuffix);
  }
  if (before != UINT32_MAX && toks[start].kind == TokenKind::Name && first == "print" &&
      before == start && err.kind == TokenKind::RightShift)
    return "Missing parentheses in call to 'print'. Did you mean print(...)?" +
           std::string(kSuffix);
  if (err.kind == TokenKind::Comma && toks[start].kind == TokenKind::KwExcept)
    return "multiple exception types must be parenthesized; `except X, e:` is Python 2 syntax "
           "for `except X as e:`" +
           std::string(kSuffix);
  if (err.kind == TokenKind::Comma && toks[start].kind == TokenKind::KwRaise)
    return "invalid syntax: `raise E, v` is Python 2 syntax for `raise E(v)`" +
           std::string(kSuffix);
  if (before != UINT32_MAX && err.kind == TokenKind::String &&
      toks[before].kind == TokenKind::Name && toks[before].end == err.begin) {
    std::string_view p = toks[before].text(src);
    if (p == "ur" || p == "UR" || p == "uR" || p == "Ur")
      return "invalid syntax: the 'ur' string prefix is Python 2 only" + std::string(kSuffix);
  }
  if (before != UINT32_MAX && err.kind == TokenKind::Name &&
      toks[before].kind == TokenKind::Number && toks[before].end == err.begin) {
    std::string_view s = err.text(src);
    if (s == "L" || s == "l")
      return "invalid syntax: long integer literals ('10L') are Python 2 only" +
             std::string(kSuffix);
  }
  return {};
}

}  // namespace torchport::syntax
