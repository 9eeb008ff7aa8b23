// The parser's driver: token cursor, node building, error reporting. The grammar itself is in
// parser_statements.cc, parser_expressions.cc and parser_patterns.cc.
#include <torchport/syntax/lexer.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/parser_impl.h>

#include <algorithm>
#include <cstddef>
#include <new>
#include <optional>
#include <utility>

namespace torchport::syntax {

Parser::Parser(Tree& tree) : tree_(tree), toks_(tree.tokens_), src_(tree.source_.text) {
  // Filled in one pass through pointers (dense code has more significant tokens than trivia,
  // and a push_back per token was a visible part of parsing); END_MARKER is always last, so
  // there is at least one.
  // The loop reads and writes through local pointers: a TokenKind is a byte, and a store of a
  // byte may alias anything, so with members the compiler reloaded toks_'s size and both
  // arrays' addresses after every store.
  const Token* const toks = toks_.data();
  const auto count = static_cast<std::uint32_t>(toks_.size());
  std::uint32_t* const sig = new std::uint32_t[count];
  TokenKind* const sig_kind = new TokenKind[count];
  sig_.reset(sig);
  sig_kind_.reset(sig_kind);
  std::uint32_t n = 0;
  // Unrolled: the loop's own compare and branch were a third of its instructions.
#pragma GCC unroll 4
  for (std::uint32_t i = 0; i < count; ++i) {
    const TokenKind k = toks[i].kind;
    sig[n] = i;
    sig_kind[n] = k;
    n += is_trivia(k) ? 0 : 1;
  }
  sig_size_ = n;
  scratch_.reserve(256);
}

std::uint32_t Parser::expect(TokenKind k, const char* what) {
  if (!at(k)) {
    if (what != nullptr && k != TokenKind::Newline && !at(TokenKind::EndMarker) &&
        !at(TokenKind::Error))
      fail(tok(), std::string("expected '") + what + "'");
    unexpected();
  }
  return take();
}

void Parser::fail(std::uint32_t token, std::string message) {
  throw SyntaxError{token, std::move(message)};
}

void Parser::unexpected() {
  const Token& t = toks_[tok()];
  switch (t.kind) {
    case TokenKind::Indent:
      fail(tok(), "unexpected indent");
    case TokenKind::Dedent:
      fail(tok(), "unindent does not match any outer indentation level");
    case TokenKind::EndMarker:
      if (!open_brackets_.empty()) {
        std::uint32_t b = open_brackets_.back();
        fail(b, "'" + std::string(text_of(b)) + "' was never closed");
      }
      fail(tok(), "unexpected EOF while parsing");
    case TokenKind::RPar:
    case TokenKind::RSqb:
    case TokenKind::RBrace:
      if (open_brackets_.empty()) fail(tok(), "unmatched '" + std::string(text_of(tok())) + "'");
      {
        std::string_view open = text_of(open_brackets_.back());
        std::string_view close = text_of(tok());
        bool match = (open == "(" && close == ")") || (open == "[" && close == "]") ||
                     (open == "{" && close == "}");
        if (!match)
          fail(tok(), "closing parenthesis '" + std::string(close) +
                          "' does not match opening parenthesis '" + std::string(open) + "'");
      }
      fail(tok(), "invalid syntax");
    case TokenKind::Error:
      fail(tok(), "invalid token");
    default:
      fail(tok(), "invalid syntax");
  }
}

Node* Parser::make(NodeKind kind, std::uint32_t first, std::uint32_t last, std::size_t child_mark,
                   std::size_t extra_mark) {
  // One arena allocation for the node, its children and its extra tokens, in that order (the
  // node's size is a multiple of a pointer's alignment, so the arrays after it are aligned).
  static_assert(sizeof(Node) % alignof(const Node*) == 0);
  const std::size_t count = scratch_.size() - child_mark;
  const std::size_t ecount = extra_mark == SIZE_MAX ? 0 : extra_scratch_.size() - extra_mark;
  std::byte* mem = static_cast<std::byte*>(tree_.arena_.allocate(
      sizeof(Node) + count * sizeof(const Node*) + ecount * sizeof(std::uint32_t), alignof(Node)));
  Node* n = new (mem) Node();
  ++tree_.made_[static_cast<std::size_t>(kind)];
  n->kind_ = kind;
  n->first_ = first;
  n->last_ = last;
  if (count != 0) {
    const Node** kids = reinterpret_cast<const Node**>(mem + sizeof(Node));
    std::uint32_t below = 0;
    for (std::size_t i = 0; i < count; ++i) {
      Node* c = scratch_[child_mark + i];
      c->parent_ = n;
      kids[i] = c;
      below = std::max(below, c->height_);
    }
    n->height_ = below + 1;
    n->children_ = kids;
    n->child_count_ = static_cast<std::uint32_t>(count);
    scratch_.resize(child_mark);
    // Loops build some trees without recursing (a + b + ..., x.f().g()...): the bound on the
    // tree's height is checked here, where every node is made, so that no walk over any tree
    // the parser returns can exhaust its stack (tree.h, kMaxNesting).
    if (n->height_ > kMaxNesting) fail_too_deep(n);
  }
  if (ecount != 0) {
    auto* ex = reinterpret_cast<std::uint32_t*>(mem + sizeof(Node) + count * sizeof(const Node*));
    std::copy(extra_scratch_.begin() + static_cast<std::ptrdiff_t>(extra_mark),
              extra_scratch_.end(), ex);
    n->extra_ = ex;
    n->extra_count_ = static_cast<std::uint32_t>(ecount);
    extra_scratch_.resize(extra_mark);
  }
  return n;
}

void Parser::fail_too_deep(const Node* n) {
  // Reported at the deepest leaf: where a loop-built tree (the first term of a long sum, the
  // receiver of a long chain) is nested deepest.
  const Node* deepest = n;
  while (deepest->child_count_ != 0)
    for (std::uint32_t i = 0; i < deepest->child_count_; ++i)
      if (deepest->children_[i]->height_ + 1 == deepest->height_) {
        deepest = deepest->children_[i];
        break;
      }
  fail(deepest->first_, kTooDeep);
}

void Parser::warn(std::uint32_t token, std::string message) {
  tree_.diagnostics_.push_back(
      text::Diagnostic{text::Severity::Warning, toks_[token].begin, std::move(message)});
}

void Parser::run() {
  std::vector<text::Diagnostic>& diags = tree_.diagnostics_;
  // A copy, not a pointer into `diags`: the grammar's warn() appends to that vector while
  // file() runs, and a reallocation would leave a pointer dangling (`except X, e:` in a file
  // with a lexical error was a heap-use-after-free).
  std::optional<text::Diagnostic> lex_error;
  for (const text::Diagnostic& d : diags)
    if (d.severity == text::Severity::Error) {
      lex_error = d;
      break;
    }
  std::uint32_t lex_offset = lex_error ? lex_error->offset : UINT32_MAX;
  try {
    tree_.root_ = file();
    if (!lex_error) return;
    text::Diagnostic d = *lex_error;
    std::string hint = python2_message(tree_, UINT32_MAX, d.message);
    if (!hint.empty()) d.message = std::move(hint);
    diags.erase(std::remove_if(
                    diags.begin(), diags.end(),
                    [](const text::Diagnostic& x) { return x.severity == text::Severity::Error; }),
                diags.end());
    diags.insert(diags.begin(), std::move(d));
  } catch (SyntaxError& e) {
    text::Diagnostic d;
    std::uint32_t offset = toks_[e.token].begin;
    if (e.message == "invalid syntax") {
      // As CPython: a generic error gives way to a lexical error anywhere in the file, then to
      // a bracket left open at the end of the file.
      if (lex_error) {
        lex_offset = 0;
      } else {
        std::vector<std::uint32_t> open;
        for (std::uint32_t i = 0; i < toks_.size(); ++i) {
          TokenKind k = toks_[i].kind;
          if (k == TokenKind::LPar || k == TokenKind::LSqb || k == TokenKind::LBrace) {
            open.push_back(i);
          } else if ((k == TokenKind::RPar || k == TokenKind::RSqb || k == TokenKind::RBrace) &&
                     !open.empty()) {
            open.pop_back();
          }
        }
        if (!open.empty()) {
          e.token = open.back();
          offset = toks_[e.token].begin;
          e.message = "'" + std::string(text_of(e.token)) + "' was never closed";
        }
      }
    }
    if (lex_error && lex_offset <= offset) {
      d = *lex_error;
    } else {
      d.offset = offset;
      d.message = std::move(e.message);
    }
    std::string hint = python2_message(tree_, e.token, d.message);
    if (!hint.empty()) d.message = std::move(hint);
    diags.erase(std::remove_if(
                    diags.begin(), diags.end(),
                    [](const text::Diagnostic& x) { return x.severity == text::Severity::Error; }),
                diags.end());
    diags.insert(diags.begin(), std::move(d));
    scratch_.clear();
    Node* root = make(NodeKind::Module, 0, static_cast<std::uint32_t>(toks_.size() - 1), 0);
    tree_.root_ = root;
  }
  tree_.ok_ = false;
}

Tree parse(text::SourceFile source) {
  LexResult lexed = tokenize(source.text);
  Tree tree(std::move(source), std::move(lexed.tokens), std::move(lexed.line_starts));
  tree.diagnostics_ = std::move(lexed.diagnostics);
  Parser parser(tree);
  parser.run();
  return tree;
}

Tree parse(std::string path, std::string text) {
  text::SourceFile source;
  source.path = std::move(path);
  source.text = std::move(text);
  source.encoding = "utf-8";
  return parse(std::move(source));
}

}  // namespace torchport::syntax
