// Expressions: operators by precedence, atoms, calls, subscripts, displays, comprehensions,
// lambda, strings and f-/t-strings, and the checks that make an expression a valid target
// (CPython Grammar/python.gram, "EXPRESSIONS" and "TARGETS").
#include <torchport/syntax/parser_impl.h>

#include <array>
#include <string>

namespace torchport::syntax {

bool starts_expression(TokenKind k) {
  switch (k) {
    case TokenKind::Name:
    case TokenKind::Number:
    case TokenKind::String:
    case TokenKind::FStringStart:
    case TokenKind::TStringStart:
    case TokenKind::LPar:
    case TokenKind::LSqb:
    case TokenKind::LBrace:
    case TokenKind::Minus:
    case TokenKind::Plus:
    case TokenKind::Tilde:
    case TokenKind::KwNot:
    case TokenKind::KwLambda:
    case TokenKind::KwAwait:
    case TokenKind::KwNone:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
    case TokenKind::Ellipsis:
    case TokenKind::Star:
      return true;
    default:
      return false;
  }
}

namespace {

int binary_precedence(TokenKind k) {
  switch (k) {
    case TokenKind::VBar:
      return 1;
    case TokenKind::Circumflex:
      return 2;
    case TokenKind::Amper:
      return 3;
    case TokenKind::LeftShift:
    case TokenKind::RightShift:
      return 4;
    case TokenKind::Plus:
    case TokenKind::Minus:
      return 5;
    case TokenKind::Star:
    case TokenKind::Slash:
    case TokenKind::DoubleSlash:
    case TokenKind::Percent:
    case TokenKind::At:
      return 6;
    default:
      return 0;
  }
}

bool is_comparison(TokenKind k) {
  switch (k) {
    case TokenKind::EqEqual:
    case TokenKind::NotEqual:
    case TokenKind::Less:
    case TokenKind::LessEqual:
    case TokenKind::Greater:
    case TokenKind::GreaterEqual:
    case TokenKind::KwIn:
    case TokenKind::KwIs:
    case TokenKind::KwNot:
    case TokenKind::LessGreater:
      return true;
    default:
      return false;
  }
}

bool has_bytes_prefix(std::string_view token_text) {
  for (char c : token_text) {
    if (c == '\'' || c == '"') return false;
    if (c == 'b' || c == 'B') return true;
  }
  return false;
}

}  // namespace

Ex Parser::with_parens(Ex inner, std::uint32_t open, std::uint32_t close) {
  inner.n->flags_ |= kParenthesized;
  return {inner.n, open, close};
}

Node* Parser::wrap_tuple(std::uint32_t first, std::uint32_t last, std::size_t child_mark) {
  return make(NodeKind::Tuple, first, last, child_mark);
}

Ex Parser::star_expressions() {
  Ex e = star_expression();
  if (!at(TokenKind::Comma)) return e;
  std::size_t m = mark();
  push(e.n, Role::Elt);
  std::uint32_t last = e.last;
  while (at(TokenKind::Comma)) {
    last = take();
    if (!starts_expression(kind())) break;
    Ex x = star_expression();
    push(x.n, Role::Elt);
    last = x.last;
  }
  return {wrap_tuple(e.first, last, m), e.first, last};
}

Ex Parser::starred_bitwise_or() {
  std::uint32_t s = take();  // '*'
  std::size_t m = mark();
  Ex v = bitwise_or();
  push(v.n, Role::Value);
  return {make(NodeKind::Starred, s, v.last, m), s, v.last};
}

Ex Parser::star_expression() {
  if (at(TokenKind::Star)) return starred_bitwise_or();
  return expression();
}

Ex Parser::star_named_expression() {
  if (at(TokenKind::Star)) return starred_bitwise_or();
  return named_expression();
}

Ex Parser::named_expression() {
  if (at(TokenKind::Name) && kind(1) == TokenKind::ColonEqual) {
    std::size_t m = mark();
    std::uint32_t name = take();
    Node* target = leaf(NodeKind::Name, name, name);
    target->token_ = name;
    push(target, Role::Target);
    take();  // ':='
    Ex v = expression();
    push(v.n, Role::Value);
    return {make(NodeKind::NamedExpr, name, v.last, m), name, v.last};
  }
  Ex e = expression();
  if (at(TokenKind::ColonEqual))
    fail(e.first, "cannot use assignment expressions with " + describe(*e.n));
  return e;
}

namespace {

/// A token kind no level of expression() -- a trailer, `**`, a binary or comparison operator,
/// `not in`, `and`, `or`, `if` -- goes on with: the expression before it is complete. A table:
/// expression() asks once or twice per call.
constexpr auto kEndsExpression = [] {
  std::array<bool, 256> t{};
  for (TokenKind k : {TokenKind::Comma, TokenKind::RPar, TokenKind::RSqb, TokenKind::RBrace,
                      TokenKind::Colon, TokenKind::Newline, TokenKind::Equal, TokenKind::Semi,
                      TokenKind::EndMarker, TokenKind::KwFor, TokenKind::KwAs})
    t[static_cast<std::uint8_t>(k)] = true;
  return t;
}();
inline bool ends_expression(TokenKind k) { return kEndsExpression[static_cast<std::uint8_t>(k)]; }

}  // namespace

Ex Parser::expression() {
  DepthGuard guard(*this);
  // An expression that starts with an atom begins with its primary (no level before primary()
  // takes a prefix operator there). A one-token atom the expression ends after (`x` in
  // `f(x, y)`, `1` in `a[1]`) is returned at once, as is a primary the expression ends after
  // (`self.w` in `f(self.w)`): the node and the position every level down to it would have
  // returned unchanged. Otherwise the primary is handed down as pending_, which primary()
  // returns (inversion() and factor() look for no prefix operator while it is pending).
  switch (kind()) {
    case TokenKind::Name:
    case TokenKind::Number:
    case TokenKind::String:
    case TokenKind::KwNone:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
    case TokenKind::Ellipsis:
      if (ends_expression(kind(1))) return atom();
      [[fallthrough]];
    case TokenKind::FStringStart:
    case TokenKind::TStringStart:
    case TokenKind::LPar:
    case TokenKind::LSqb:
    case TokenKind::LBrace: {
      Ex e = trailers(atom());
      if (ends_expression(kind())) return e;
      pending_ = e;
      break;
    }
    default:
      if (at(TokenKind::KwLambda)) return lambda_expr();
      break;
  }
  Ex body = disjunction();
  if (!at(TokenKind::KwIf)) return body;
  std::size_t m = mark();
  push(body.n, Role::Body);
  take();
  Ex test = disjunction();
  push(test.n, Role::Test);
  if (!at(TokenKind::KwElse)) fail_here("expected 'else' after 'if' expression");
  take();
  Ex orelse = expression();
  push(orelse.n, Role::OrElse);
  return {make(NodeKind::IfExp, body.first, orelse.last, m), body.first, orelse.last};
}

Ex Parser::disjunction() {
  Ex e = conjunction();
  if (!at(TokenKind::KwOr)) return e;
  std::size_t m = mark();
  std::size_t xm = xmark();
  push(e.n, Role::Operand);
  std::uint32_t last = e.last;
  while (at(TokenKind::KwOr)) {
    push_extra(take());
    Ex x = conjunction();
    push(x.n, Role::Operand);
    last = x.last;
  }
  return {make(NodeKind::BoolOp, e.first, last, m, xm), e.first, last};
}

Ex Parser::conjunction() {
  Ex e = inversion();
  if (!at(TokenKind::KwAnd)) return e;
  std::size_t m = mark();
  std::size_t xm = xmark();
  push(e.n, Role::Operand);
  std::uint32_t last = e.last;
  while (at(TokenKind::KwAnd)) {
    push_extra(take());
    Ex x = inversion();
    push(x.n, Role::Operand);
    last = x.last;
  }
  return {make(NodeKind::BoolOp, e.first, last, m, xm), e.first, last};
}

Ex Parser::inversion() {
  if (pending_.n != nullptr || !at(TokenKind::KwNot)) return comparison();
  DepthGuard guard(*this);
  std::uint32_t op = take();
  std::size_t m = mark();
  Ex x = inversion();
  push(x.n, Role::Operand);
  Node* n = make(NodeKind::UnaryOp, op, x.last, m);
  n->token_ = op;
  return {n, op, x.last};
}

Ex Parser::comparison() {
  Ex e = bitwise_or();
  if (!is_comparison(kind())) return e;
  if (at(TokenKind::KwNot) && kind(1) != TokenKind::KwIn) return e;
  std::size_t m = mark();
  std::size_t xm = xmark();
  push(e.n, Role::Left);
  std::uint32_t last = e.last;
  while (is_comparison(kind())) {
    std::uint32_t op = tok();
    if (at(TokenKind::KwNot)) {
      if (kind(1) != TokenKind::KwIn) break;
      take();
      take();
    } else if (at(TokenKind::KwIs)) {
      take();
      accept(TokenKind::KwNot);
    } else if (at(TokenKind::LessGreater)) {
      fail_here();
    } else {
      take();
    }
    push_extra(op);
    Ex x = bitwise_or();
    push(x.n, Role::Comparator);
    last = x.last;
  }
  return {make(NodeKind::Compare, e.first, last, m, xm), e.first, last};
}

Ex Parser::binary(int min_prec) {
  Ex l = factor();
  for (;;) {
    int p = binary_precedence(kind());
    if (p == 0 || p < min_prec) return l;
    std::uint32_t op = take();
    Ex r = binary(p + 1);
    std::size_t m = mark();
    push(l.n, Role::Left);
    push(r.n, Role::Right);
    Node* n = make(NodeKind::BinOp, l.first, r.last, m);
    n->token_ = op;
    l = {n, l.first, r.last};
  }
}

Ex Parser::factor() {
  if (pending_.n != nullptr) return power();
  TokenKind k = kind();
  if (k != TokenKind::Plus && k != TokenKind::Minus && k != TokenKind::Tilde) return power();
  DepthGuard guard(*this);
  std::uint32_t op = take();
  std::size_t m = mark();
  Ex x = factor();
  push(x.n, Role::Operand);
  Node* n = make(NodeKind::UnaryOp, op, x.last, m);
  n->token_ = op;
  return {n, op, x.last};
}

Ex Parser::power() {
  Ex e = primary(true);
  if (!at(TokenKind::DoubleStar)) return e;
  DepthGuard guard(*this);
  std::uint32_t op = take();
  Ex r = factor();
  std::size_t m = mark();
  push(e.n, Role::Left);
  push(r.n, Role::Right);
  Node* n = make(NodeKind::BinOp, e.first, r.last, m);
  n->token_ = op;
  return {n, e.first, r.last};
}

Ex Parser::primary(bool allow_await) {
  if (pending_.n != nullptr) {  // parsed by expression() already
    const Ex e = pending_;
    pending_ = Ex{};
    return e;
  }
  if (allow_await && at(TokenKind::KwAwait)) {
    DepthGuard guard(*this);
    std::uint32_t a = take();
    std::size_t m = mark();
    Ex v = primary(false);
    push(v.n, Role::Value);
    return {make(NodeKind::Await, a, v.last, m), a, v.last};
  }
  return trailers(atom());
}

Ex Parser::trailers(Ex e) {
  for (;;) {
    switch (kind()) {
      case TokenKind::Dot: {
        take();
        std::uint32_t name = expect(TokenKind::Name, nullptr);
        std::size_t m = mark();
        push(e.n, Role::Value);
        Node* n = make(NodeKind::Attribute, e.first, name, m);
        n->token_ = name;
        e = {n, e.first, name};
        break;
      }
      case TokenKind::LPar: {
        std::uint32_t open = open_bracket();
        std::size_t m = mark();
        push(e.n, Role::Func);
        call_arguments(true, open);
        std::uint32_t close = close_bracket(TokenKind::RPar);
        e = {make(NodeKind::Call, e.first, close, m), e.first, close};
        break;
      }
      case TokenKind::LSqb: {
        open_bracket();
        std::size_t m = mark();
        push(e.n, Role::Value);
        Ex s = slices();
        push(s.n, Role::Slice);
        std::uint32_t close = close_bracket(TokenKind::RSqb);
        e = {make(NodeKind::Subscript, e.first, close, m), e.first, close};
        break;
      }
      default:
        return e;
    }
  }
}

void Parser::call_arguments(bool allow_genexp, std::uint32_t open) {
  bool seen_keyword = false;
  bool seen_double_star = false;
  int count = 0;
  while (!at(TokenKind::RPar)) {
    if (at(TokenKind::Star)) {
      std::uint32_t s = take();
      std::size_t m = mark();
      Ex v = expression();
      push(v.n, Role::Value);
      if (seen_double_star)
        fail(s, "iterable argument unpacking follows keyword argument unpacking");
      push(make(NodeKind::Starred, s, v.last, m), Role::Arg);
    } else if (at(TokenKind::DoubleStar)) {
      std::uint32_t s = take();
      std::size_t m = mark();
      Ex v = expression();
      push(v.n, Role::Value);
      push(make(NodeKind::keyword, s, v.last, m), Role::Keyword);
      seen_double_star = true;
    } else if (at(TokenKind::Name) && kind(1) == TokenKind::Equal) {
      std::uint32_t name = take();
      take();
      std::size_t m = mark();
      Ex v = expression();
      push(v.n, Role::Value);
      Node* k = make(NodeKind::keyword, name, v.last, m);
      k->token_ = name;
      push(k, Role::Keyword);
      seen_keyword = true;
    } else {
      Ex e = named_expression();
      if (at(TokenKind::KwFor) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwFor)) {
        if (!allow_genexp || count > 0) fail(e.first, "Generator expression must be parenthesized");
        std::size_t gm = mark();
        push(e.n, Role::Elt);
        comprehension_clauses();
        if (!at(TokenKind::RPar)) {
          if (at(TokenKind::Comma)) fail(e.first, "Generator expression must be parenthesized");
          unexpected();
        }
        push(make(NodeKind::GeneratorExp, open, tok(), gm), Role::Arg);
        return;
      }
      if (at(TokenKind::Equal))
        fail(e.first, "expression cannot contain assignment, perhaps you meant \"==\"?");
      if (seen_double_star) fail(e.first, "positional argument follows keyword argument unpacking");
      if (seen_keyword) fail(e.first, "positional argument follows keyword argument");
      push(e.n, Role::Arg);
    }
    ++count;
    if (!accept(TokenKind::Comma)) break;
  }
}

Ex Parser::slices() {
  Ex s = slice_item();
  if (!at(TokenKind::Comma)) return s;
  std::size_t m = mark();
  push(s.n, Role::Elt);
  std::uint32_t last = s.last;
  while (at(TokenKind::Comma)) {
    last = take();
    if (at(TokenKind::RSqb)) break;
    Ex x = slice_item();
    push(x.n, Role::Elt);
    last = x.last;
  }
  return {wrap_tuple(s.first, last, m), s.first, last};
}

Ex Parser::slice_item() {
  if (at(TokenKind::Star)) return starred_bitwise_or();
  std::size_t m = mark();
  std::uint32_t first = tok();
  if (!at(TokenKind::Colon)) {
    Ex lower = named_expression();
    if (!at(TokenKind::Colon)) return lower;
    if (lower.n->kind_ == NodeKind::NamedExpr && !lower.n->has(kParenthesized)) fail_here();
    push(lower.n, Role::Lower);
    first = lower.first;
  }
  std::uint32_t last = take();  // ':'
  if (starts_expression(kind()) && !at(TokenKind::Star)) {
    Ex upper = expression();
    push(upper.n, Role::Upper);
    last = upper.last;
  }
  if (at(TokenKind::Colon)) {
    last = take();
    if (starts_expression(kind()) && !at(TokenKind::Star)) {
      Ex step = expression();
      push(step.n, Role::Step);
      last = step.last;
    }
  }
  return {make(NodeKind::Slice, first, last, m), first, last};
}

Ex Parser::atom() {
  std::uint32_t t = tok();
  switch (kind()) {
    case TokenKind::Name: {
      take();
      Node* n = leaf(NodeKind::Name, t, t);
      n->token_ = t;
      return {n, t, t};
    }
    case TokenKind::Number:
    case TokenKind::KwNone:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
    case TokenKind::Ellipsis: {
      NodeFlag f = at(TokenKind::Number)    ? kNumber
                   : at(TokenKind::KwNone)  ? kNone
                   : at(TokenKind::KwTrue)  ? kTrue
                   : at(TokenKind::KwFalse) ? kFalse
                                            : kEllipsis;
      take();
      Node* n = leaf(NodeKind::Constant, t, t);
      n->flags_ = f;
      n->token_ = t;
      return {n, t, t};
    }
    case TokenKind::String:
    case TokenKind::FStringStart:
    case TokenKind::TStringStart:
      return strings();
    case TokenKind::LPar:
      return paren_atom();
    case TokenKind::LSqb:
      return list_atom();
    case TokenKind::LBrace:
      return brace_atom();
    default:
      unexpected();
  }
}

Ex Parser::paren_atom() {
  DepthGuard guard(*this);
  std::uint32_t open = open_bracket();
  if (at(TokenKind::RPar)) {
    std::uint32_t close = close_bracket(TokenKind::RPar);
    Node* n = leaf(NodeKind::Tuple, open, close);
    n->flags_ |= kParenthesized;
    return {n, open, close};
  }
  if (at(TokenKind::KwYield)) {
    Ex y = yield_expr();
    std::uint32_t close = close_bracket(TokenKind::RPar);
    return with_parens(y, open, close);
  }
  Ex e = star_named_expression();
  if (at(TokenKind::KwFor) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwFor)) {
    if (e.n->kind_ == NodeKind::Starred)
      fail(e.first, "iterable unpacking cannot be used in comprehension");
    std::size_t m = mark();
    push(e.n, Role::Elt);
    comprehension_clauses();
    std::uint32_t close = close_bracket(TokenKind::RPar);
    return {make(NodeKind::GeneratorExp, open, close, m), open, close};
  }
  if (at(TokenKind::Comma)) {
    std::size_t m = mark();
    push(e.n, Role::Elt);
    while (accept(TokenKind::Comma)) {
      if (at(TokenKind::RPar)) break;
      Ex x = star_named_expression();
      push(x.n, Role::Elt);
    }
    std::uint32_t close = close_bracket(TokenKind::RPar);
    Node* n = make(NodeKind::Tuple, open, close, m);
    n->flags_ |= kParenthesized;
    return {n, open, close};
  }
  if (e.n->kind_ == NodeKind::Starred && at(TokenKind::RPar))
    fail(e.first, "cannot use starred expression here");
  std::uint32_t close = close_bracket(TokenKind::RPar);
  return with_parens(e, open, close);
}

Ex Parser::list_atom() {
  DepthGuard guard(*this);
  std::uint32_t open = open_bracket();
  std::size_t m = mark();
  if (at(TokenKind::RSqb)) {
    std::uint32_t close = close_bracket(TokenKind::RSqb);
    return {leaf(NodeKind::List, open, close), open, close};
  }
  Ex e = star_named_expression();
  push(e.n, Role::Elt);
  if (at(TokenKind::KwFor) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwFor)) {
    if (e.n->kind_ == NodeKind::Starred)
      fail(e.first, "iterable unpacking cannot be used in comprehension");
    comprehension_clauses();
    std::uint32_t close = close_bracket(TokenKind::RSqb);
    return {make(NodeKind::ListComp, open, close, m), open, close};
  }
  while (accept(TokenKind::Comma)) {
    if (at(TokenKind::RSqb)) break;
    Ex x = star_named_expression();
    push(x.n, Role::Elt);
  }
  std::uint32_t close = close_bracket(TokenKind::RSqb);
  return {make(NodeKind::List, open, close, m), open, close};
}

Ex Parser::brace_atom() {
  DepthGuard guard(*this);
  std::uint32_t open = open_bracket();
  std::size_t m = mark();
  if (at(TokenKind::RBrace)) {
    std::uint32_t close = close_bracket(TokenKind::RBrace);
    return {leaf(NodeKind::Dict, open, close), open, close};
  }
  bool is_dict;
  if (at(TokenKind::DoubleStar)) {
    take();
    Ex v = bitwise_or();
    push(v.n, Role::Value);
    is_dict = true;
  } else {
    Ex e = star_named_expression();
    if (at(TokenKind::Colon)) {
      if (e.n->kind_ == NodeKind::Starred)
        fail(e.first, "cannot use a starred expression in a dictionary key");
      if (e.n->kind_ == NodeKind::NamedExpr && !e.n->has(kParenthesized)) fail_here();
      take();
      push(e.n, Role::Key);
      Ex v = expression();
      push(v.n, Role::Value);
      is_dict = true;
      if (at(TokenKind::KwFor) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwFor)) {
        comprehension_clauses();
        std::uint32_t close = close_bracket(TokenKind::RBrace);
        return {make(NodeKind::DictComp, open, close, m), open, close};
      }
    } else {
      push(e.n, Role::Elt);
      is_dict = false;
      if (at(TokenKind::KwFor) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwFor)) {
        if (e.n->kind_ == NodeKind::Starred)
          fail(e.first, "iterable unpacking cannot be used in comprehension");
        comprehension_clauses();
        std::uint32_t close = close_bracket(TokenKind::RBrace);
        return {make(NodeKind::SetComp, open, close, m), open, close};
      }
    }
  }
  while (accept(TokenKind::Comma)) {
    if (at(TokenKind::RBrace)) break;
    if (is_dict) {
      if (accept(TokenKind::DoubleStar)) {
        Ex v = bitwise_or();
        push(v.n, Role::Value);
        continue;
      }
      Ex k = expression();
      push(k.n, Role::Key);
      expect(TokenKind::Colon, ":");
      Ex v = expression();
      push(v.n, Role::Value);
    } else {
      Ex x = star_named_expression();
      push(x.n, Role::Elt);
    }
  }
  std::uint32_t close = close_bracket(TokenKind::RBrace);
  return {make(is_dict ? NodeKind::Dict : NodeKind::Set, open, close, m), open, close};
}

void Parser::comprehension_clauses() {
  while (at(TokenKind::KwFor) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwFor)) {
    std::uint32_t first = tok();
    std::size_t m = mark();
    bool is_async = accept(TokenKind::KwAsync);
    take();  // 'for'
    Ex t = star_targets();
    check_target(t, TargetCtx::For);
    push(t.n, Role::Target);
    expect(TokenKind::KwIn, "in");
    Ex it = disjunction();
    push(it.n, Role::Iter);
    std::uint32_t last = it.last;
    while (at(TokenKind::KwIf)) {
      take();
      Ex c = disjunction();
      push(c.n, Role::If);
      last = c.last;
    }
    Node* n = make(NodeKind::comprehension, first, last, m);
    n->aux_ = is_async ? 1 : 0;
    push(n, Role::Generator);
  }
}

Ex Parser::lambda_expr() {
  std::uint32_t l = take();
  std::size_t m = mark();
  push(parameters(true, l), Role::Args);
  expect(TokenKind::Colon, ":");
  Ex body = expression();
  push(body.n, Role::Body);
  return {make(NodeKind::Lambda, l, body.last, m), l, body.last};
}

Ex Parser::yield_expr() {
  std::uint32_t y = take();
  std::size_t m = mark();
  if (accept(TokenKind::KwFrom)) {
    Ex v = expression();
    push(v.n, Role::Value);
    return {make(NodeKind::YieldFrom, y, v.last, m), y, v.last};
  }
  if (starts_expression(kind())) {
    Ex v = star_expressions();
    push(v.n, Role::Value);
    return {make(NodeKind::Yield, y, v.last, m), y, v.last};
  }
  return {leaf(NodeKind::Yield, y, y), y, y};
}

Ex Parser::strings() {
  std::uint32_t first = tok();
  // Plain literals only (the common case): one Constant, no children.
  std::uint32_t ahead = 0;
  while (kind(ahead) == TokenKind::String) ++ahead;
  TokenKind after = kind(ahead);
  if (after != TokenKind::FStringStart && after != TokenKind::TStringStart) {
    bool bytes = has_bytes_prefix(text_of(first));
    std::uint32_t last = first;
    for (std::uint32_t i = 0; i < ahead; ++i) {
      last = take();
      if (has_bytes_prefix(text_of(last)) != bytes)
        fail(first, "cannot mix bytes and nonbytes literals");
    }
    Node* n = leaf(NodeKind::Constant, first, last);
    n->flags_ =
        static_cast<std::uint16_t>((bytes ? kBytes : kString) | (ahead > 1 ? kImplicitConcat : 0));
    n->token_ = first;
    return {n, first, last};
  }
  std::size_t m = mark();
  bool any_t = false, any_other = false, any_bytes = false;
  int pieces = 0;
  std::uint32_t last = first;
  for (;;) {
    TokenKind k = kind();
    if (k == TokenKind::String) {
      last = take();
      if (has_bytes_prefix(text_of(last))) any_bytes = true;
      any_other = true;
      Node* c = leaf(NodeKind::Constant, last, last);
      c->flags_ = kString;
      c->token_ = last;
      push(c, Role::Part);
    } else if (k == TokenKind::FStringStart) {
      take();
      any_other = true;
      fstring(m, TokenKind::FStringEnd);
      last = prev();
    } else if (k == TokenKind::TStringStart) {
      take();
      any_t = true;
      fstring(m, TokenKind::TStringEnd);
      last = prev();
    } else {
      break;
    }
    ++pieces;
  }
  if (any_bytes) fail(first, "cannot mix bytes and nonbytes literals");
  if (any_t && any_other) fail(first, "cannot mix t-string literals with string literals");
  Node* n = make(any_t ? NodeKind::TemplateStr : NodeKind::JoinedStr, first, last, m);
  n->token_ = first;
  if (pieces > 1) n->flags_ |= kImplicitConcat;
  return {n, first, last};
}

// After the opening token of an f-/t-string: literal parts and replacement fields up to the end.
void Parser::fstring(std::size_t /*parts_mark*/, TokenKind end_kind) {
  TokenKind middle =
      end_kind == TokenKind::FStringEnd ? TokenKind::FStringMiddle : TokenKind::TStringMiddle;
  for (;;) {
    TokenKind k = kind();
    if (k == middle) {
      std::uint32_t t = take();
      Node* c = leaf(NodeKind::Constant, t, t);
      c->flags_ = kString;
      c->token_ = t;
      push(c, Role::Part);
    } else if (k == TokenKind::LBrace) {
      replacement_field(end_kind);
    } else if (k == end_kind) {
      take();
      return;
    } else {
      unexpected();
    }
  }
}

void Parser::replacement_field(TokenKind end_kind) {
  DepthGuard guard(*this);
  if (spec_depth_ > 2) fail_here("f-string: expressions nested too deeply");
  std::uint32_t open = open_bracket();
  int outer_spec_depth = spec_depth_;
  spec_depth_ = 0;  // an f-string inside the expression starts afresh
  std::size_t m = mark();
  Ex e = at(TokenKind::KwYield) ? yield_expr() : star_expressions();
  // `f"{*a}"` is not Python (CPython: "f-string: cannot use starred expression here"); `f"{*a,}"`,
  // a tuple, is.
  if (e.n->kind_ == NodeKind::Starred)
    fail(e.first, std::string(end_kind == TokenKind::FStringEnd ? "f" : "t") +
                      "-string: cannot use starred expression here");
  push(e.n, Role::Value);
  std::uint16_t flags = 0;
  std::uint32_t conversion = 0;
  if (accept(TokenKind::Equal)) flags |= kDebug;
  if (accept(TokenKind::Exclamation)) {
    std::uint32_t c = expect(TokenKind::Name, nullptr);
    std::string_view s = text_of(c);
    if (s != "s" && s != "r" && s != "a")
      fail(c, "f-string: invalid conversion character '" + std::string(s) +
                  "': expected 's', 'r', or 'a'");
    conversion = static_cast<std::uint32_t>(s[0]);
  }
  spec_depth_ = outer_spec_depth;
  if (at(TokenKind::Colon)) {
    std::uint32_t colon = take();
    ++spec_depth_;
    std::size_t sm = mark();
    TokenKind middle =
        end_kind == TokenKind::FStringEnd ? TokenKind::FStringMiddle : TokenKind::TStringMiddle;
    std::uint32_t first = colon;
    std::uint32_t last = colon;
    bool any = false;
    for (;;) {
      TokenKind k = kind();
      if (k == middle) {
        std::uint32_t t = take();
        Node* c = leaf(NodeKind::Constant, t, t);
        c->flags_ = kString;
        c->token_ = t;
        push(c, Role::Part);
      } else if (k == TokenKind::LBrace) {
        if (!any) first = tok();
        replacement_field(end_kind);
      } else {
        break;
      }
      if (!any && scratch_.size() > sm) first = scratch_[sm]->first_;
      any = true;
      last = prev();
    }
    push(make(NodeKind::JoinedStr, first, last, sm), Role::FormatSpec);
    --spec_depth_;
  }
  std::uint32_t close = close_bracket(TokenKind::RBrace);
  Node* n =
      make(end_kind == TokenKind::FStringEnd ? NodeKind::FormattedValue : NodeKind::Interpolation,
           open, close, m);
  n->flags_ |= flags;
  n->aux_ = conversion;
  push(n, Role::Part);
}

Ex Parser::star_targets() {
  Ex e = star_target();
  if (!at(TokenKind::Comma)) return e;
  std::size_t m = mark();
  push(e.n, Role::Elt);
  std::uint32_t last = e.last;
  while (at(TokenKind::Comma)) {
    last = take();
    if (!starts_expression(kind())) break;
    Ex x = star_target();
    push(x.n, Role::Elt);
    last = x.last;
  }
  return {wrap_tuple(e.first, last, m), e.first, last};
}

Ex Parser::star_target() {
  DepthGuard guard(*this);
  if (at(TokenKind::Star)) {
    std::uint32_t s = take();
    if (at(TokenKind::Star)) fail_here();
    std::size_t m = mark();
    Ex v = star_target();
    push(v.n, Role::Value);
    return {make(NodeKind::Starred, s, v.last, m), s, v.last};
  }
  return primary(false);
}

std::string Parser::describe(const Node& n) const {
  switch (n.kind_) {
    case NodeKind::Call:
      return "function call";
    case NodeKind::Constant:
      return "literal";
    case NodeKind::Compare:
      return "comparison";
    case NodeKind::Lambda:
      return "lambda";
    case NodeKind::IfExp:
      return "conditional expression";
    case NodeKind::NamedExpr:
      return "named expression";
    case NodeKind::Await:
      return "await expression";
    case NodeKind::Yield:
    case NodeKind::YieldFrom:
      return "yield expression";
    case NodeKind::JoinedStr:
      return "f-string expression";
    case NodeKind::Dict:
      return "dict literal";
    case NodeKind::Set:
      return "set display";
    case NodeKind::ListComp:
      return "list comprehension";
    case NodeKind::SetComp:
      return "set comprehension";
    case NodeKind::DictComp:
      return "dict comprehension";
    case NodeKind::GeneratorExp:
      return "generator expression";
    case NodeKind::Tuple:
      return "tuple";
    case NodeKind::List:
      return "list";
    case NodeKind::Attribute:
      return "attribute";
    case NodeKind::Subscript:
      return "subscript";
    case NodeKind::Starred:
      return "starred";
    default:
      return "expression";
  }
}

void Parser::check_target(const Ex& e, TargetCtx ctx) {
  const Node& n = *e.n;
  std::uint32_t at_tok = n.first_;
  switch (n.kind_) {
    case NodeKind::Name:
      return;
    case NodeKind::Attribute:
    case NodeKind::Subscript:
      return;
    case NodeKind::Starred:
      if (ctx == TargetCtx::Del) fail(at_tok, "cannot delete starred");
      if (ctx == TargetCtx::Aug || ctx == TargetCtx::Ann) break;
      check_target({const_cast<Node*>(n.children_[0]), 0, 0}, ctx);
      return;
    case NodeKind::Tuple:
    case NodeKind::List:
      if (ctx == TargetCtx::Aug) {
        fail(at_tok, std::string("'") + (n.kind_ == NodeKind::Tuple ? "tuple" : "list") +
                         "' is an illegal expression for augmented assignment");
      }
      if (ctx == TargetCtx::Ann) {
        fail(at_tok, std::string("only single target (not ") +
                         (n.kind_ == NodeKind::Tuple ? "tuple" : "list") + ") can be annotated");
      }
      for (std::uint32_t i = 0; i < n.child_count_; ++i)
        check_target({const_cast<Node*>(n.children_[i]), 0, 0}, ctx);
      return;
    default:
      break;
  }
  switch (ctx) {
    case TargetCtx::Del:
      fail(at_tok, "cannot delete " + describe(n));
    case TargetCtx::Aug:
      fail(at_tok, "'" + describe(n) + "' is an illegal expression for augmented assignment");
    case TargetCtx::Ann:
      fail(at_tok, "illegal target for annotation");
    case TargetCtx::Assign:
      fail(at_tok,
           "cannot assign to " + describe(n) + " here. Maybe you meant '==' instead of '='?");
    default:
      fail(at_tok, "cannot assign to " + describe(n));
  }
}

}  // namespace torchport::syntax
