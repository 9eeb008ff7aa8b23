// Internals shared by parser*.cc and python2.cc. Not a public header.
//
// The parser is a recursive-descent parser over the significant (non-trivia) tokens that
// follows CPython's Grammar/python.gram. It stops at the first syntax error, as CPython does:
// errors unwind to Parser::run() as a SyntaxError exception (internal only; the public API
// returns diagnostics). Lookahead that CPython does by backtracking is bounded here: the only
// speculative parses are a `match` statement's subject and a parenthesized `with` item list,
// each re-parsed at most once, so parsing is linear.
#pragma once

#include <torchport/syntax/limits.h>
#include <torchport/syntax/tree.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::syntax {

/// Thrown inside the parser only; caught by Parser::run().
struct SyntaxError {
  std::uint32_t token;  ///< index into the token vector
  std::string message;
};

/// An expression with the tokens it was written with, parentheses included: `n` covers CPython's
/// span (`a` for `(a)`), `first`..`last` the outer tokens (`(`..`)`), which is where an enclosing
/// node such as `(a).b` starts.
struct Ex {
  Node* n = nullptr;
  std::uint32_t first = 0;
  std::uint32_t last = 0;
};

/// Contexts in which an expression is checked as a target.
enum class TargetCtx : std::uint8_t { Assign, Del, For, With, Aug, Ann, Walrus };

/// Whether a token of kind `k` can begin an expression.
bool starts_expression(TokenKind k);

class Parser {
 public:
  explicit Parser(Tree& tree);
  /// Parses the whole token stream into tree.root_; records the first error.
  void run();

  // ---- token cursor (over significant tokens) ----
  // pos_ is always inside sig_ (it ends with END_MARKER, and take() stops there), so the
  // current token's kind is one load from sig_kind_, the kinds of sig_ side by side.
  TokenKind kind() const { return sig_kind_[pos_]; }
  TokenKind kind(std::uint32_t ahead) const {
    std::uint32_t i = pos_ + ahead;
    return sig_kind_[i < sig_size_ ? i : sig_size_ - 1];
  }
  std::uint32_t tok() const { return sig_[pos_]; }
  std::uint32_t tok(std::uint32_t ahead) const {
    std::uint32_t i = pos_ + ahead;
    return sig_[i < sig_size_ ? i : sig_size_ - 1];
  }
  std::string_view text_of(std::uint32_t token) const { return toks_[token].text(src_); }
  bool at(TokenKind k) const { return kind() == k; }
  bool at_name(std::string_view s, std::uint32_t ahead = 0) const {
    return kind(ahead) == TokenKind::Name && text_of(tok(ahead)) == s;
  }
  std::uint32_t take() {
    std::uint32_t t = tok();
    if (pos_ + 1 < sig_size_) ++pos_;
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  std::uint32_t expect(TokenKind k, const char* what);
  /// The token before the current one (the last consumed significant token).
  std::uint32_t prev() const { return sig_[pos_ > 0 ? pos_ - 1 : 0]; }
  [[noreturn]] void fail(std::uint32_t token, std::string message);
  [[noreturn]] void fail_here(std::string message = "invalid syntax") {
    fail(tok(), std::move(message));
  }
  [[noreturn]] void unexpected();
  /// Records a warning at `token`; parsing goes on.
  void warn(std::uint32_t token, std::string message);
  /// Consumes an opening bracket and remembers it for "'(' was never closed".
  std::uint32_t open_bracket() {
    std::uint32_t t = tok();
    if (open_brackets_.size() >= 200) fail(t, "too many nested parentheses");
    open_brackets_.push_back(t);
    return take();
  }
  /// Consumes the closing bracket of kind `k` (or reports the mismatch).
  std::uint32_t close_bracket(TokenKind k) {
    if (!at(k)) unexpected();
    if (!open_brackets_.empty()) open_brackets_.pop_back();
    return take();
  }

  // ---- building nodes ----
  std::size_t mark() const { return scratch_.size(); }
  std::size_t xmark() const { return extra_scratch_.size(); }
  void push(Node* n, Role r) {
    n->role_ = r;
    scratch_.push_back(n);
  }
  void push_extra(std::uint32_t token) { extra_scratch_.push_back(token); }
  /// A node of `kind` over tokens first..last whose children are scratch_[child_mark..] and
  /// whose extra tokens are extra_scratch_[extra_mark..] (both popped).
  Node* make(NodeKind kind, std::uint32_t first, std::uint32_t last, std::size_t child_mark,
             std::size_t extra_mark = SIZE_MAX);
  /// make() for a node without children or extra tokens, inline: most nodes the parser makes
  /// are leaves (Name, Constant), and make()'s call, its saved registers and its tests of the
  /// two scratch vectors cost more than the leaf's allocation and stores.
  Node* leaf(NodeKind kind, std::uint32_t first, std::uint32_t last) {
    Node* n = new (tree_.arena_.allocate(sizeof(Node), alignof(Node))) Node();
    ++tree_.made_[static_cast<std::size_t>(kind)];
    n->kind_ = kind;
    n->first_ = first;
    n->last_ = last;
    return n;
  }
  /// make()'s error when node `n` is higher than kMaxNesting. Out of line and cold, so that
  /// make(), which runs for every node, does not carry its registers.
  [[noreturn, gnu::cold, gnu::noinline]] void fail_too_deep(const Node* n);

  // ---- depth guard ----
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.fail_here(kTooDeep);
    }
    ~DepthGuard() { --p.depth_; }
  };
  // The grammar's own recursion (unary operators, lambdas, conditional expressions, patterns):
  // one guard a level, each level at least one node, so kMaxNesting bounds it too.
  static constexpr int kMaxDepth = static_cast<int>(kMaxNesting);

  // ---- statements (parser_statements.cc) ----
  Node* file();
  void statement();
  void simple_statements();
  void simple_statement();
  void block(Role role, std::uint32_t header_token, const char* what);
  void compound_or_simple();
  Node* decorated();
  Node* function_def(std::uint32_t first, std::size_t decorator_mark);
  Node* class_def(std::uint32_t first, std::size_t decorator_mark);
  Node* if_statement(bool elif);
  Node* while_statement();
  Node* for_statement(std::uint32_t first, bool is_async);
  Node* with_statement(std::uint32_t first, bool is_async);
  Node* try_statement();
  Node* import_statement();
  Node* from_import_statement();
  Node* expression_statement();
  Node* type_alias();
  void type_params();
  Node* parameters(bool lambda, std::uint32_t open_token);
  bool try_match_statement(Node** out);
  void with_item();
  std::uint32_t last_body_token(std::size_t mark) const;

  // ---- expressions (parser_expressions.cc) ----
  Ex star_expressions();
  Ex star_expression();
  Ex star_named_expression();
  Ex named_expression();
  Ex expression();
  Ex disjunction();
  Ex conjunction();
  Ex inversion();
  Ex comparison();
  Ex binary(int min_prec);
  Ex factor();
  Ex power();
  Ex primary(bool allow_await);
  Ex atom();
  Ex trailers(Ex e);
  Ex paren_atom();
  Ex list_atom();
  Ex brace_atom();
  Ex strings();
  void fstring(std::size_t parts_mark, TokenKind end_kind);
  void replacement_field(TokenKind end_kind);
  Ex lambda_expr();
  Ex yield_expr();
  Ex slices();
  Ex slice_item();
  void call_arguments(bool allow_genexp, std::uint32_t open_token);
  void comprehension_clauses();
  Ex star_targets();
  Ex star_target();
  Ex bitwise_or() { return binary(1); }
  Ex starred_bitwise_or();
  Node* wrap_tuple(std::uint32_t first, std::uint32_t last, std::size_t child_mark);
  void check_target(const Ex& e, TargetCtx ctx);
  std::string describe(const Node& n) const;
  Ex with_parens(Ex inner, std::uint32_t open, std::uint32_t close);

  // ---- patterns (parser_patterns.cc) ----
  Ex patterns();
  Ex pattern();
  Ex or_pattern();
  Ex closed_pattern();
  Node* closed_pattern_node();
  Node* literal_or_value_pattern();
  Node* signed_number(std::uint32_t& first);

  // ---- state ----
  Tree& tree_;
  const std::vector<Token>& toks_;
  std::string_view src_;
  // The significant tokens (indices into toks_) and their kinds, sig_size_ of each: arrays that
  // are filled once, never zeroed first.
  std::unique_ptr<std::uint32_t[]> sig_;
  std::unique_ptr<TokenKind[]> sig_kind_;  ///< toks_[sig_[i]].kind
  std::uint32_t sig_size_ = 0;
  std::uint32_t pos_ = 0;
  int depth_ = 0;
  int block_depth_ = 0;
  /// The last token before the NEWLINE of the latest simple-statement line: where a compound
  /// statement ends (CPython: its last non-whitespace token, a trailing ';' included).
  std::uint32_t block_end_ = 0;
  /// Format specs enclosing the current replacement field (CPython allows two levels).
  int spec_depth_ = 0;
  /// A primary expression() parsed before descending the precedence levels: primary() returns
  /// it (and clears it) instead of parsing one.
  Ex pending_;
  std::vector<Node*> scratch_;
  std::vector<std::uint32_t> extra_scratch_;
  std::vector<std::uint32_t> open_brackets_;
};

/// When the error at token `error_token` looks like Python 2 code, the message to report
/// instead of `message` (ending with "(this file looks like Python 2 code)"); else empty.
std::string python2_message(const Tree& tree, std::uint32_t error_token, std::string_view message);

}  // namespace torchport::syntax
