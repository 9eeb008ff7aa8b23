// Match-statement patterns (PEP 634; CPython Grammar/python.gram, "PATTERNS").
#include <torchport/syntax/parser_impl.h>

#include <string>

namespace torchport::syntax {

// patterns: open_sequence_pattern | pattern
Ex Parser::patterns() {
  std::uint32_t first = tok();
  std::size_t m = mark();
  Node* p;
  if (at(TokenKind::Star)) {
    std::uint32_t s = take();
    std::uint32_t name = expect(TokenKind::Name, nullptr);
    p = leaf(NodeKind::MatchStar, s, name);
    p->token_ = text_of(name) == "_" ? kNoToken : name;
    if (!at(TokenKind::Comma)) fail(s, "invalid syntax");
  } else {
    Ex px = pattern();
    if (!at(TokenKind::Comma)) return px;
    p = px.n;
  }
  push(p, Role::Pattern);
  std::uint32_t last = p->last_;
  while (at(TokenKind::Comma)) {
    last = take();
    if (at(TokenKind::Colon) || at(TokenKind::KwIf)) break;
    Node* x;
    if (at(TokenKind::Star)) {
      std::uint32_t s = take();
      std::uint32_t name = expect(TokenKind::Name, nullptr);
      x = leaf(NodeKind::MatchStar, s, name);
      x->token_ = text_of(name) == "_" ? kNoToken : name;
    } else {
      Ex px = pattern();
      x = px.n;
      last = px.last;
    }
    push(x, Role::Pattern);
    if (x->kind_ == NodeKind::MatchStar) last = x->last_;
  }
  return {make(NodeKind::MatchSequence, first, last, m), first, last};
}

// pattern: or_pattern ['as' NAME]
Ex Parser::pattern() {
  DepthGuard guard(*this);
  Ex p = or_pattern();
  if (!at(TokenKind::KwAs)) return p;
  take();
  std::uint32_t name = expect(TokenKind::Name, nullptr);
  if (text_of(name) == "_") fail(name, "cannot use '_' as a target");
  std::size_t m = mark();
  push(p.n, Role::Pattern);
  Node* n = make(NodeKind::MatchAs, p.first, name, m);
  n->token_ = name;
  return {n, p.first, name};
}

Ex Parser::or_pattern() {
  Ex p = closed_pattern();
  if (!at(TokenKind::VBar)) return p;
  std::size_t m = mark();
  push(p.n, Role::Pattern);
  std::uint32_t last = p.last;
  while (accept(TokenKind::VBar)) {
    Ex x = closed_pattern();
    push(x.n, Role::Pattern);
    last = x.last;
  }
  return {make(NodeKind::MatchOr, p.first, last, m), p.first, last};
}

// A number, `-number`, or `[-]real (+|-) imaginary`, as a Constant/UnaryOp/BinOp expression.
Node* Parser::signed_number(std::uint32_t& first) {
  first = tok();
  Node* value;
  if (at(TokenKind::Minus)) {
    std::uint32_t op = take();
    std::uint32_t num = expect(TokenKind::Number, nullptr);
    Node* c = leaf(NodeKind::Constant, num, num);
    c->flags_ = kNumber;
    c->token_ = num;
    std::size_t m = mark();
    push(c, Role::Operand);
    value = make(NodeKind::UnaryOp, op, num, m);
    value->token_ = op;
  } else {
    std::uint32_t num = expect(TokenKind::Number, nullptr);
    value = leaf(NodeKind::Constant, num, num);
    value->flags_ = kNumber;
    value->token_ = num;
  }
  if (at(TokenKind::Plus) || at(TokenKind::Minus)) {
    std::uint32_t op = take();
    std::uint32_t num = expect(TokenKind::Number, nullptr);
    std::string_view s = text_of(num);
    if (s.empty() || (s.back() != 'j' && s.back() != 'J'))
      fail(num, "imaginary number required in complex literal");
    Node* c = leaf(NodeKind::Constant, num, num);
    c->flags_ = kNumber;
    c->token_ = num;
    std::size_t m = mark();
    push(value, Role::Left);
    push(c, Role::Right);
    value = make(NodeKind::BinOp, first, num, m);
    value->token_ = op;
  }
  return value;
}

// A literal or a dotted value usable as a mapping key or value pattern.
Node* Parser::literal_or_value_pattern() {
  std::uint32_t first = tok();
  switch (kind()) {
    case TokenKind::Number:
    case TokenKind::Minus:
      return signed_number(first);
    case TokenKind::String:
    case TokenKind::FStringStart:
    case TokenKind::TStringStart: {
      // f-strings parse here; CPython's compiler (not its parser) rejects them.
      return strings().n;
    }
    case TokenKind::KwNone:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
      return atom().n;
    case TokenKind::Name: {
      std::uint32_t name = take();
      Node* v = leaf(NodeKind::Name, name, name);
      v->token_ = name;
      if (!at(TokenKind::Dot)) fail_here();
      while (accept(TokenKind::Dot)) {
        std::uint32_t attr = expect(TokenKind::Name, nullptr);
        std::size_t m = mark();
        push(v, Role::Value);
        v = make(NodeKind::Attribute, first, attr, m);
        v->token_ = attr;
      }
      return v;
    }
    default:
      unexpected();
  }
}

Ex Parser::closed_pattern() {
  std::uint32_t first = tok();
  Node* n = closed_pattern_node();
  // A group `(p)` is the pattern p itself, but an enclosing pattern starts at the '('.
  if (n->first_ != first) return {n, first, prev()};
  return {n, n->first_, n->last_};
}

Node* Parser::closed_pattern_node() {
  DepthGuard guard(*this);
  std::uint32_t first = tok();
  std::size_t m = mark();
  switch (kind()) {
    case TokenKind::Number:
    case TokenKind::Minus:
    case TokenKind::String:
    case TokenKind::FStringStart:
    case TokenKind::TStringStart: {
      Node* v = literal_or_value_pattern();
      push(v, Role::Value);
      return make(NodeKind::MatchValue, v->first_, v->last_, m);
    }
    case TokenKind::KwNone:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse: {
      take();
      return leaf(NodeKind::MatchSingleton, first, first);
    }
    case TokenKind::Name: {
      std::uint32_t name = take();
      if (!at(TokenKind::Dot) && !at(TokenKind::LPar)) {
        Node* n = leaf(NodeKind::MatchAs, name, name);
        n->token_ = text_of(name) == "_" ? kNoToken : name;
        return n;
      }
      Node* v = leaf(NodeKind::Name, name, name);
      v->token_ = name;
      while (accept(TokenKind::Dot)) {
        std::uint32_t attr = expect(TokenKind::Name, nullptr);
        std::size_t am = mark();
        push(v, Role::Value);
        v = make(NodeKind::Attribute, first, attr, am);
        v->token_ = attr;
      }
      if (!at(TokenKind::LPar)) {
        push(v, Role::Value);
        return make(NodeKind::MatchValue, first, v->last_, m);
      }
      // Class pattern.
      push(v, Role::Cls);
      open_bracket();
      std::size_t xm = xmark();
      bool seen_keyword = false;
      while (!at(TokenKind::RPar)) {
        if (at(TokenKind::Name) && kind(1) == TokenKind::Equal) {
          push_extra(take());
          take();
          push(pattern().n, Role::KwdPattern);
          seen_keyword = true;
        } else {
          std::uint32_t pt = tok();
          Node* p = pattern().n;
          if (seen_keyword) fail(pt, "positional patterns follow keyword patterns");
          push(p, Role::Pattern);
        }
        if (!accept(TokenKind::Comma)) break;
      }
      std::uint32_t close = close_bracket(TokenKind::RPar);
      return make(NodeKind::MatchClass, first, close, m, xm);
    }
    case TokenKind::LPar: {
      std::uint32_t open = open_bracket();
      if (at(TokenKind::RPar)) {
        std::uint32_t close = close_bracket(TokenKind::RPar);
        return make(NodeKind::MatchSequence, open, close, m);
      }
      Node* p;
      bool star = at(TokenKind::Star);
      if (star) {
        std::uint32_t s = take();
        std::uint32_t name = expect(TokenKind::Name, nullptr);
        p = leaf(NodeKind::MatchStar, s, name);
        p->token_ = text_of(name) == "_" ? kNoToken : name;
      } else {
        p = pattern().n;
      }
      if (!at(TokenKind::Comma)) {
        if (star) fail_here();
        close_bracket(TokenKind::RPar);
        return p;  // a group: the pattern itself
      }
      push(p, Role::Pattern);
      while (accept(TokenKind::Comma)) {
        if (at(TokenKind::RPar)) break;
        if (at(TokenKind::Star)) {
          std::uint32_t s = take();
          std::uint32_t name = expect(TokenKind::Name, nullptr);
          Node* x = leaf(NodeKind::MatchStar, s, name);
          x->token_ = text_of(name) == "_" ? kNoToken : name;
          push(x, Role::Pattern);
        } else {
          push(pattern().n, Role::Pattern);
        }
      }
      std::uint32_t close = close_bracket(TokenKind::RPar);
      return make(NodeKind::MatchSequence, open, close, m);
    }
    case TokenKind::LSqb: {
      std::uint32_t open = open_bracket();
      while (!at(TokenKind::RSqb)) {
        if (at(TokenKind::Star)) {
          std::uint32_t s = take();
          std::uint32_t name = expect(TokenKind::Name, nullptr);
          Node* x = leaf(NodeKind::MatchStar, s, name);
          x->token_ = text_of(name) == "_" ? kNoToken : name;
          push(x, Role::Pattern);
        } else {
          push(pattern().n, Role::Pattern);
        }
        if (!accept(TokenKind::Comma)) break;
      }
      std::uint32_t close = close_bracket(TokenKind::RSqb);
      return make(NodeKind::MatchSequence, open, close, m);
    }
    case TokenKind::LBrace: {
      std::uint32_t open = open_bracket();
      std::uint32_t rest = kNoToken;
      while (!at(TokenKind::RBrace)) {
        if (rest != kNoToken) fail_here();
        if (accept(TokenKind::DoubleStar)) {
          rest = expect(TokenKind::Name, nullptr);
          if (text_of(rest) == "_") fail(rest, "invalid syntax");
        } else {
          Node* key = literal_or_value_pattern();
          push(key, Role::Key);
          expect(TokenKind::Colon, ":");
          push(pattern().n, Role::Pattern);
        }
        if (!accept(TokenKind::Comma)) break;
      }
      std::uint32_t close = close_bracket(TokenKind::RBrace);
      Node* n = make(NodeKind::MatchMapping, open, close, m);
      n->token_ = rest;
      return n;
    }
    default:
      unexpected();
  }
}

}  // namespace torchport::syntax
