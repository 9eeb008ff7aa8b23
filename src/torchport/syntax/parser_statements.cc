// Statements: simple statements, compound statements, blocks, imports, parameters and
// type parameters (CPython Grammar/python.gram, "STATEMENTS" and "COMPOUND STATEMENTS").
#include <torchport/syntax/parser_impl.h>

#include <string>

namespace torchport::syntax {

namespace {
constexpr int kMaxBlockDepth = 100;  // CPython: "too many levels of indentation"

bool is_augassign(TokenKind k) {
  switch (k) {
    case TokenKind::PlusEqual:
    case TokenKind::MinusEqual:
    case TokenKind::StarEqual:
    case TokenKind::SlashEqual:
    case TokenKind::DoubleSlashEqual:
    case TokenKind::PercentEqual:
    case TokenKind::DoubleStarEqual:
    case TokenKind::AtEqual:
    case TokenKind::VBarEqual:
    case TokenKind::AmperEqual:
    case TokenKind::CircumflexEqual:
    case TokenKind::LeftShiftEqual:
    case TokenKind::RightShiftEqual:
      return true;
    default:
      return false;
  }
}
}  // namespace

Node* Parser::file() {
  std::size_t m = mark();
  while (!at(TokenKind::EndMarker)) {
    if (at(TokenKind::Newline)) {
      take();
      continue;
    }
    statement();
  }
  return make(NodeKind::Module, 0, static_cast<std::uint32_t>(toks_.size() - 1), m);
}

std::uint32_t Parser::last_body_token(std::size_t m) const {
  return scratch_.size() > m ? scratch_.back()->last_ : prev();
}

// Parses one statement line (a compound statement or simple statements) and pushes the
// resulting statement node(s) with role Body; callers re-tag roles when needed.
void Parser::statement() {
  switch (kind()) {
    case TokenKind::At:
      push(decorated(), Role::Body);
      return;
    case TokenKind::KwDef:
      push(function_def(tok(), mark()), Role::Body);
      return;
    case TokenKind::KwClass:
      push(class_def(tok(), mark()), Role::Body);
      return;
    case TokenKind::KwIf:
      push(if_statement(false), Role::Body);
      return;
    case TokenKind::KwWhile:
      push(while_statement(), Role::Body);
      return;
    case TokenKind::KwFor:
      push(for_statement(tok(), false), Role::Body);
      return;
    case TokenKind::KwWith:
      push(with_statement(tok(), false), Role::Body);
      return;
    case TokenKind::KwTry:
      push(try_statement(), Role::Body);
      return;
    case TokenKind::KwAsync: {
      TokenKind next = kind(1);
      if (next == TokenKind::KwDef) {
        push(function_def(tok(), mark()), Role::Body);
        return;
      }
      std::uint32_t first = take();
      if (next == TokenKind::KwFor) {
        push(for_statement(first, true), Role::Body);
        return;
      }
      if (next == TokenKind::KwWith) {
        push(with_statement(first, true), Role::Body);
        return;
      }
      unexpected();
    }
    case TokenKind::Name: {
      Node* match = nullptr;
      if (at_name("match") && try_match_statement(&match)) {
        push(match, Role::Body);
        return;
      }
      simple_statements();
      return;
    }
    case TokenKind::Indent:
      fail_here("unexpected indent");
    case TokenKind::Dedent:
      fail_here("unindent does not match any outer indentation level");
    default:
      simple_statements();
      return;
  }
}

void Parser::simple_statements() {
  for (;;) {
    simple_statement();
    if (!accept(TokenKind::Semi)) break;
    if (at(TokenKind::Newline)) break;
  }
  if (!at(TokenKind::Newline)) unexpected();
  block_end_ = prev();
  take();
}

void Parser::block(Role role, std::uint32_t header_token, const char* what) {
  expect(TokenKind::Colon, ":");
  std::size_t m = mark();
  if (at(TokenKind::Newline)) {
    take();
    if (!at(TokenKind::Indent)) {
      std::uint32_t line = tree_.lines().locate(toks_[header_token].begin).line;
      fail(tok(), std::string("expected an indented block after ") + what + " on line " +
                      std::to_string(line));
    }
    take();
    if (++block_depth_ > kMaxBlockDepth) fail(prev(), "too many levels of indentation");
    while (!at(TokenKind::Dedent)) {
      if (at(TokenKind::EndMarker)) unexpected();
      statement();
    }
    take();
    --block_depth_;
  } else {
    simple_statements();
  }
  for (std::size_t i = m; i < scratch_.size(); ++i) scratch_[i]->role_ = role;
}

void Parser::simple_statement() {
  std::uint32_t first = tok();
  std::size_t m = mark();
  switch (kind()) {
    case TokenKind::KwPass:
      take();
      push(leaf(NodeKind::Pass, first, first), Role::Body);
      return;
    case TokenKind::KwBreak:
      take();
      push(leaf(NodeKind::Break, first, first), Role::Body);
      return;
    case TokenKind::KwContinue:
      take();
      push(leaf(NodeKind::Continue, first, first), Role::Body);
      return;
    case TokenKind::KwReturn: {
      take();
      std::uint32_t last = first;
      if (!at(TokenKind::Newline) && !at(TokenKind::Semi)) {
        Ex v = star_expressions();
        push(v.n, Role::Value);
        last = v.last;
      }
      push(make(NodeKind::Return, first, last, m), Role::Body);
      return;
    }
    case TokenKind::KwRaise: {
      take();
      std::uint32_t last = first;
      if (!at(TokenKind::Newline) && !at(TokenKind::Semi)) {
        Ex v = expression();
        push(v.n, Role::Exc);
        last = v.last;
        if (accept(TokenKind::KwFrom)) {
          Ex c = expression();
          push(c.n, Role::Cause);
          last = c.last;
        }
      }
      push(make(NodeKind::Raise, first, last, m), Role::Body);
      return;
    }
    case TokenKind::KwGlobal:
    case TokenKind::KwNonlocal: {
      NodeKind k = at(TokenKind::KwGlobal) ? NodeKind::Global : NodeKind::Nonlocal;
      take();
      std::size_t xm = xmark();
      std::uint32_t last;
      do {
        last = expect(TokenKind::Name, nullptr);
        push_extra(last);
      } while (accept(TokenKind::Comma));
      push(make(k, first, last, m, xm), Role::Body);
      return;
    }
    case TokenKind::KwDel: {
      take();
      Ex t = star_targets();
      if (t.n->kind_ == NodeKind::Tuple && !t.n->has(kParenthesized)) {
        for (const Node* c : t.n->children())
          check_target({const_cast<Node*>(c), 0, 0}, TargetCtx::Del);
        // `del a, b`: the targets are the tuple's elements.
        for (const Node* c : t.n->children()) push(const_cast<Node*>(c), Role::Target);
      } else {
        check_target(t, TargetCtx::Del);
        push(t.n, Role::Target);
      }
      push(make(NodeKind::Delete, first, t.last, m), Role::Body);
      return;
    }
    case TokenKind::KwAssert: {
      take();
      Ex t = expression();
      push(t.n, Role::Test);
      std::uint32_t last = t.last;
      if (accept(TokenKind::Comma)) {
        Ex msg = expression();
        push(msg.n, Role::Msg);
        last = msg.last;
      }
      push(make(NodeKind::Assert, first, last, m), Role::Body);
      return;
    }
    case TokenKind::KwImport:
      push(import_statement(), Role::Body);
      return;
    case TokenKind::KwFrom:
      push(from_import_statement(), Role::Body);
      return;
    case TokenKind::Name:
      if (at_name("type") && kind(1) == TokenKind::Name) {
        push(type_alias(), Role::Body);
        return;
      }
      push(expression_statement(), Role::Body);
      return;
    default:
      push(expression_statement(), Role::Body);
      return;
  }
}

Node* Parser::expression_statement() {
  std::size_t m = mark();
  Ex e = at(TokenKind::KwYield) ? yield_expr() : star_expressions();
  if (at(TokenKind::Equal)) {
    check_target(e, TargetCtx::Assign);
    push(e.n, Role::Target);
    Ex v;
    for (;;) {
      take();  // '='
      v = at(TokenKind::KwYield) ? yield_expr() : star_expressions();
      if (!at(TokenKind::Equal)) break;
      check_target(v, TargetCtx::Assign);
      push(v.n, Role::Target);
    }
    push(v.n, Role::Value);
    return make(NodeKind::Assign, e.first, v.last, m);
  }
  if (at(TokenKind::Colon)) {
    check_target(e, TargetCtx::Ann);
    push(e.n, Role::Target);
    take();
    Ex ann = expression();
    push(ann.n, Role::Annotation);
    std::uint32_t last = ann.last;
    if (accept(TokenKind::Equal)) {
      Ex v = at(TokenKind::KwYield) ? yield_expr() : star_expressions();
      push(v.n, Role::Value);
      last = v.last;
    }
    return make(NodeKind::AnnAssign, e.first, last, m);
  }
  if (is_augassign(kind())) {
    check_target(e, TargetCtx::Aug);
    push(e.n, Role::Target);
    std::uint32_t op = take();
    Ex v = at(TokenKind::KwYield) ? yield_expr() : star_expressions();
    push(v.n, Role::Value);
    Node* n = make(NodeKind::AugAssign, e.first, v.last, m);
    n->token_ = op;
    return n;
  }
  push(e.n, Role::Value);
  return make(NodeKind::Expr, e.first, e.last, m);
}

Node* Parser::type_alias() {
  std::uint32_t first = take();  // 'type'
  std::size_t m = mark();
  std::uint32_t name = take();
  Node* n = leaf(NodeKind::Name, name, name);
  n->token_ = name;
  push(n, Role::Name);
  if (at(TokenKind::LSqb)) type_params();
  expect(TokenKind::Equal, "=");
  Ex v = expression();
  push(v.n, Role::Value);
  return make(NodeKind::TypeAlias, first, v.last, m);
}

void Parser::type_params() {
  open_bracket();
  if (at(TokenKind::RSqb)) fail_here("Type parameter list cannot be empty");
  for (;;) {
    std::size_t m = mark();
    std::uint32_t first = tok();
    NodeKind k = NodeKind::TypeVar;
    if (accept(TokenKind::Star)) {
      k = NodeKind::TypeVarTuple;
    } else if (accept(TokenKind::DoubleStar)) {
      k = NodeKind::ParamSpec;
    }
    std::uint32_t name = expect(TokenKind::Name, nullptr);
    std::uint32_t last = name;
    if (at(TokenKind::Colon)) {
      if (k == NodeKind::TypeVarTuple) fail_here("cannot use bound with TypeVarTuple");
      if (k == NodeKind::ParamSpec) fail_here("cannot use bound with ParamSpec");
      take();
      Ex b = expression();
      push(b.n, Role::Bound);
      last = b.last;
    }
    if (accept(TokenKind::Equal)) {
      Ex d = k == NodeKind::TypeVarTuple ? star_expression() : expression();
      push(d.n, Role::TypeDefault);
      last = d.last;
    }
    Node* p = make(k, first, last, m);
    p->token_ = name;
    push(p, Role::TypeParam);
    if (!accept(TokenKind::Comma)) break;
    if (at(TokenKind::RSqb)) break;
  }
  close_bracket(TokenKind::RSqb);
}

Node* Parser::decorated() {
  std::size_t m = mark();
  while (at(TokenKind::At)) {
    take();
    Ex e = named_expression();
    push(e.n, Role::Decorator);
    expect(TokenKind::Newline, nullptr);
  }
  if (at(TokenKind::KwDef) || (at(TokenKind::KwAsync) && kind(1) == TokenKind::KwDef))
    return function_def(tok(), m);
  if (at(TokenKind::KwClass)) return class_def(tok(), m);
  unexpected();
}

Node* Parser::function_def(std::uint32_t first, std::size_t decorator_mark) {
  bool is_async = accept(TokenKind::KwAsync);
  std::uint32_t def = expect(TokenKind::KwDef, "def");
  std::uint32_t name = expect(TokenKind::Name, nullptr);
  if (at(TokenKind::LSqb)) type_params();
  std::uint32_t open = tok();
  if (!at(TokenKind::LPar)) fail_here("expected '('");
  open_bracket();
  push(parameters(false, open), Role::Args);
  close_bracket(TokenKind::RPar);
  if (accept(TokenKind::RArrow)) {
    Ex r = expression();
    push(r.n, Role::Returns);
  }
  block(Role::Body, def, "function definition");
  // block() re-tagged only the body statements it pushed.
  Node* n = make(is_async ? NodeKind::AsyncFunctionDef : NodeKind::FunctionDef, first, block_end_,
                 decorator_mark);
  n->token_ = name;
  return n;
}

Node* Parser::class_def(std::uint32_t first, std::size_t decorator_mark) {
  take();  // 'class'
  std::uint32_t name = expect(TokenKind::Name, nullptr);
  if (at(TokenKind::LSqb)) type_params();
  if (at(TokenKind::LPar)) {
    std::uint32_t open = open_bracket();
    std::size_t m = mark();
    call_arguments(false, open);
    for (std::size_t i = m; i < scratch_.size(); ++i)
      if (scratch_[i]->role_ == Role::Arg) scratch_[i]->role_ = Role::Base;
    close_bracket(TokenKind::RPar);
  }
  block(Role::Body, first, "class definition");
  Node* n = make(NodeKind::ClassDef, first, block_end_, decorator_mark);
  n->token_ = name;
  return n;
}

Node* Parser::if_statement(bool elif) {
  std::uint32_t first = take();
  std::size_t m = mark();
  Ex t = named_expression();
  push(t.n, Role::Test);
  block(Role::Body, first, elif ? "'elif' statement" : "'if' statement");
  if (at(TokenKind::KwElif)) {
    push(if_statement(true), Role::OrElse);
  } else if (at(TokenKind::KwElse)) {
    std::uint32_t e = take();
    block(Role::OrElse, e, "'else' statement");
  }
  return make(NodeKind::If, first, block_end_, m);
}

Node* Parser::while_statement() {
  std::uint32_t first = take();
  std::size_t m = mark();
  Ex t = named_expression();
  push(t.n, Role::Test);
  block(Role::Body, first, "'while' statement");
  if (at(TokenKind::KwElse)) {
    std::uint32_t e = take();
    block(Role::OrElse, e, "'else' statement");
  }
  return make(NodeKind::While, first, block_end_, m);
}

Node* Parser::for_statement(std::uint32_t first, bool is_async) {
  std::uint32_t kw = take();  // 'for'
  std::size_t m = mark();
  Ex t = star_targets();
  check_target(t, TargetCtx::For);
  push(t.n, Role::Target);
  expect(TokenKind::KwIn, "in");
  Ex it = star_expressions();
  push(it.n, Role::Iter);
  block(Role::Body, kw, "'for' statement");
  if (at(TokenKind::KwElse)) {
    std::uint32_t e = take();
    block(Role::OrElse, e, "'else' statement");
  }
  return make(is_async ? NodeKind::AsyncFor : NodeKind::For, first, block_end_, m);
}

void Parser::with_item() {
  std::size_t m = mark();
  Ex e = expression();
  push(e.n, Role::ContextExpr);
  std::uint32_t last = e.n->last_;
  if (accept(TokenKind::KwAs)) {
    Ex t = star_target();
    check_target(t, TargetCtx::With);
    TokenKind k = kind();
    if (k != TokenKind::Comma && k != TokenKind::RPar && k != TokenKind::Colon) unexpected();
    push(t.n, Role::OptionalVars);
    last = t.n->last_;
  }
  push(make(NodeKind::withitem, e.n->first_, last, m), Role::Item);
}

Node* Parser::with_statement(std::uint32_t first, bool is_async) {
  std::uint32_t kw = take();  // 'with'
  std::size_t m = mark();
  bool done = false;
  if (at(TokenKind::LPar)) {
    // `with (a as b, c):` -- a parenthesized list of items; else the '(' starts an expression.
    std::uint32_t save = pos_;
    std::size_t brackets = open_brackets_.size();
    int depth = depth_;
    try {
      open_bracket();
      for (;;) {
        with_item();
        if (!accept(TokenKind::Comma)) break;
        if (at(TokenKind::RPar)) break;
      }
      close_bracket(TokenKind::RPar);
      if (!at(TokenKind::Colon)) fail_here();
      done = true;
    } catch (SyntaxError&) {
      pos_ = save;
      scratch_.resize(m);
      open_brackets_.resize(brackets);
      depth_ = depth;
      pending_ = Ex{};
    }
  }
  if (!done) {
    for (;;) {
      with_item();
      if (!accept(TokenKind::Comma)) break;
    }
  }
  block(Role::Body, kw, "'with' statement");
  return make(is_async ? NodeKind::AsyncWith : NodeKind::With, first, block_end_, m);
}

Node* Parser::try_statement() {
  std::uint32_t first = take();
  std::size_t m = mark();
  block(Role::Body, first, "'try' statement");
  bool any_handler = false;
  bool any_star = false;
  bool any_plain = false;
  while (at(TokenKind::KwExcept)) {
    std::uint32_t ex = take();
    std::size_t hm = mark();
    bool star = accept(TokenKind::Star);
    (star ? any_star : any_plain) = true;
    if (any_star && any_plain)
      fail(ex, "cannot have both 'except' and 'except*' on the same 'try'");
    std::uint32_t name = kNoToken;
    if (!at(TokenKind::Colon)) {
      Ex t = expression();
      if (at(TokenKind::Comma)) {
        // PEP 758 (3.14): `except A, B:` catches A or B; with `as`, the tuple needs parentheses.
        std::size_t tm = mark();
        push(t.n, Role::Elt);
        std::uint32_t comma = tok();
        std::uint32_t last = t.last;
        std::size_t count = 1;
        bool trailing = false;
        while (at(TokenKind::Comma)) {
          last = take();
          trailing = true;
          if (!starts_expression(kind())) break;
          Ex x = expression();
          push(x.n, Role::Elt);
          last = x.last;
          trailing = false;
          ++count;
        }
        if (at(TokenKind::KwAs))
          fail(t.first, "multiple exception types must be parenthesized when using 'as'");
        if (count == 2 && !trailing && toks_[last].kind == TokenKind::Name)
          warn(comma,
               "`except X, e:` catches X or e (PEP 758, Python 3.14); Python 3.8-3.13 reject it, "
               "and in Python 2 it meant `except X as e:`");
        push(wrap_tuple(t.first, last, tm), Role::Type);
      } else {
        push(t.n, Role::Type);
        if (accept(TokenKind::KwAs)) name = expect(TokenKind::Name, nullptr);
      }
    } else if (star) {
      fail_here("expected one or more exception types");
    }
    block(Role::Body, ex, star ? "'except*' statement" : "'except' statement");
    Node* h = make(NodeKind::ExceptHandler, ex, block_end_, hm);
    h->token_ = name;
    push(h, Role::Handler);
    any_handler = true;
  }
  if (any_handler && at(TokenKind::KwElse)) {
    std::uint32_t e = take();
    block(Role::OrElse, e, "'else' statement");
  }
  if (at(TokenKind::KwFinally)) {
    std::uint32_t f = take();
    block(Role::FinalBody, f, "'finally' statement");
  } else if (!any_handler) {
    fail_here("expected 'except' or 'finally' block");
  }
  return make(any_star ? NodeKind::TryStar : NodeKind::Try, first, block_end_, m);
}

Node* Parser::import_statement() {
  std::uint32_t first = take();
  std::size_t m = mark();
  std::uint32_t last;
  do {
    std::size_t xm = xmark();
    std::uint32_t name_first = expect(TokenKind::Name, nullptr);
    push_extra(name_first);
    last = name_first;
    while (accept(TokenKind::Dot)) {
      last = expect(TokenKind::Name, nullptr);
      push_extra(last);
    }
    std::uint32_t as = kNoToken;
    if (accept(TokenKind::KwAs)) last = as = expect(TokenKind::Name, nullptr);
    Node* a = make(NodeKind::alias, name_first, last, mark(), xm);
    a->token_ = as;
    push(a, Role::Alias);
  } while (accept(TokenKind::Comma));
  return make(NodeKind::Import, first, last, m);
}

Node* Parser::from_import_statement() {
  std::uint32_t first = take();
  std::size_t m = mark();
  std::uint32_t level = 0;
  for (;;) {
    if (accept(TokenKind::Dot)) {
      level += 1;
    } else if (accept(TokenKind::Ellipsis)) {
      level += 3;
    } else {
      break;
    }
  }
  std::size_t xm = xmark();
  if (at(TokenKind::Name)) {
    push_extra(take());
    while (accept(TokenKind::Dot)) push_extra(expect(TokenKind::Name, nullptr));
  } else if (level == 0) {
    unexpected();
  }
  std::vector<std::uint32_t> module(extra_scratch_.begin() + static_cast<std::ptrdiff_t>(xm),
                                    extra_scratch_.end());
  extra_scratch_.resize(xm);
  expect(TokenKind::KwImport, "import");
  std::uint32_t last;
  if (at(TokenKind::Star)) {
    std::uint32_t star = take();
    std::size_t axm = xmark();
    push_extra(star);
    push(make(NodeKind::alias, star, star, mark(), axm), Role::Alias);
    last = star;
  } else {
    bool paren = at(TokenKind::LPar);
    if (paren) open_bracket();
    for (;;) {
      std::size_t axm = xmark();
      std::uint32_t name = expect(TokenKind::Name, nullptr);
      push_extra(name);
      std::uint32_t alast = name;
      std::uint32_t as = kNoToken;
      if (accept(TokenKind::KwAs)) alast = as = expect(TokenKind::Name, nullptr);
      Node* a = make(NodeKind::alias, name, alast, mark(), axm);
      a->token_ = as;
      push(a, Role::Alias);
      last = alast;
      if (!at(TokenKind::Comma)) break;
      std::uint32_t comma = take();
      if (paren && at(TokenKind::RPar)) break;
      if (!paren && (at(TokenKind::Newline) || at(TokenKind::Semi)))
        fail(comma, "trailing comma not allowed without surrounding parentheses");
    }
    if (paren) last = close_bracket(TokenKind::RPar);
  }
  std::size_t xm2 = xmark();
  for (std::uint32_t t : module) push_extra(t);
  Node* n = make(NodeKind::ImportFrom, first, last, m, xm2);
  n->aux_ = level;
  return n;
}

Node* Parser::parameters(bool lambda, std::uint32_t open_token) {
  std::size_t m = mark();
  std::uint32_t first = tok();
  TokenKind end = lambda ? TokenKind::Colon : TokenKind::RPar;
  bool seen_slash = false, seen_star = false, seen_default = false, seen_kwarg = false;
  bool bare_star = false, kwonly = false;
  int plain = 0;
  auto param = [&](Role role, bool star_annotation) {
    std::size_t pm = mark();
    std::uint32_t name = expect(TokenKind::Name, nullptr);
    std::uint32_t last = name;
    if (!lambda && accept(TokenKind::Colon)) {
      Ex a = star_annotation && at(TokenKind::Star) ? star_expression() : expression();
      push(a.n, Role::Annotation);
      last = a.last;
    }
    Node* a = make(NodeKind::arg, name, last, pm);
    a->token_ = name;
    if (star_annotation && a->child_count_ != 0 && a->children_[0]->kind_ == NodeKind::Starred)
      a->flags_ |= kStarredAnnotation;
    push(a, role);
  };
  while (!at(end)) {
    if (seen_kwarg) fail_here("arguments cannot follow var-keyword argument");
    if (at(TokenKind::Slash)) {
      if (seen_slash) fail_here("/ may appear only once");
      if (seen_star) fail_here("/ must be ahead of *");
      if (plain == 0) fail_here("at least one argument must precede /");
      take();
      seen_slash = true;
      for (std::size_t i = m; i < scratch_.size(); ++i)
        if (scratch_[i]->role_ == Role::PlainArg) scratch_[i]->role_ = Role::PosOnlyArg;
    } else if (at(TokenKind::Star)) {
      if (seen_star) fail_here("* argument may appear only once");
      take();
      seen_star = true;
      if (at(TokenKind::Comma) || at(end)) {
        bare_star = true;
      } else {
        param(Role::VarArg, true);
      }
    } else if (at(TokenKind::DoubleStar)) {
      take();
      param(Role::KwArg, false);
      if (at(TokenKind::Equal)) fail_here("var-keyword argument cannot have default value");
      seen_kwarg = true;
    } else {
      param(seen_star ? Role::KwOnlyArg : Role::PlainArg, false);
      if (seen_star)
        kwonly = true;
      else
        ++plain;
      if (accept(TokenKind::Equal)) {
        Ex d = expression();
        push(d.n, seen_star ? Role::KwDefault : Role::Default);
        if (!seen_star) seen_default = true;
      } else if (!seen_star && seen_default) {
        fail(prev(), "non-default argument follows default argument");
      }
    }
    if (!accept(TokenKind::Comma)) break;
  }
  if (!at(end)) unexpected();
  if (bare_star && !kwonly) fail_here("named arguments must follow bare *");
  std::uint32_t last = pos_ > 0 ? prev() : first;
  if (scratch_.size() == m) first = last = open_token;
  return make(NodeKind::arguments, first, last, m);
}

bool Parser::try_match_statement(Node** out) {
  // `match` is a soft keyword: only a statement when followed by a subject, ':' and NEWLINE.
  switch (kind(1)) {
    case TokenKind::Equal:
    case TokenKind::Dot:
    case TokenKind::Colon:
    case TokenKind::Newline:
    case TokenKind::Comma:
    case TokenKind::RPar:
    case TokenKind::Semi:
      return false;
    default:
      break;
  }
  if (is_augassign(kind(1))) return false;
  std::uint32_t save = pos_;
  std::size_t m = mark();
  std::size_t brackets = open_brackets_.size();
  int depth = depth_;
  std::uint32_t first = take();
  try {
    Ex s = star_named_expression();
    if (at(TokenKind::Comma)) {
      std::size_t tm = mark();
      push(s.n, Role::Elt);
      std::uint32_t last = s.last;
      while (accept(TokenKind::Comma)) {
        last = prev();
        if (at(TokenKind::Colon)) break;
        Ex x = star_named_expression();
        push(x.n, Role::Elt);
        last = x.last;
      }
      s = {make(NodeKind::Tuple, s.first, last, tm), s.first, last};
    } else if (s.n->kind_ == NodeKind::Starred) {
      fail_here();
    }
    push(s.n, Role::Subject);
    if (!at(TokenKind::Colon) || kind(1) != TokenKind::Newline) fail_here();
  } catch (SyntaxError&) {
    pos_ = save;
    scratch_.resize(m);
    open_brackets_.resize(brackets);
    depth_ = depth;
    pending_ = Ex{};
    return false;
  }
  take();  // ':'
  take();  // NEWLINE
  if (!at(TokenKind::Indent)) {
    std::uint32_t line = tree_.lines().locate(toks_[first].begin).line;
    fail_here("expected an indented block after 'match' statement on line " + std::to_string(line));
  }
  take();
  if (++block_depth_ > kMaxBlockDepth) fail(prev(), "too many levels of indentation");
  if (!at_name("case")) fail_here();
  while (at_name("case")) {
    std::uint32_t case_tok = take();
    std::size_t cm = mark();
    Node* p = patterns().n;
    push(p, Role::Pattern);
    if (accept(TokenKind::KwIf)) {
      Ex g = named_expression();
      push(g.n, Role::Guard);
    }
    block(Role::Body, case_tok, "'case' statement");
    push(make(NodeKind::match_case, p->first_, last_body_token(cm), cm), Role::Case);
  }
  if (!at(TokenKind::Dedent)) unexpected();
  take();
  --block_depth_;
  *out = make(NodeKind::Match, first, block_end_, m);
  return true;
}

}  // namespace torchport::syntax
