// A parsed Python module: the source text, its tokens, the syntax tree and the diagnostics.
//
// Typical use by a rule:
//
//   syntax::Tree tree = syntax::parse(std::move(source));       // parser.h
//   if (!tree.ok()) { report tree.diagnostics(); return; }
//   for (const syntax::Node* call : tree.find_all(syntax::NodeKind::Call)) {
//     const syntax::Node* f = call->func();
//     if (f->kind() == syntax::NodeKind::Attribute && tree.name(*f) == "cuda") {
//       auto [begin, end] = tree.byte_range(*f);      // exact bytes to rewrite
//       ...
//     }
//   }
//
// Positions: byte offsets into source().text (UTF-8, BOM removed); LineCol as CPython counts
// (line from 1, column in UTF-8 bytes from 0). A node's span equals CPython's ast span.
//
// When the file has a syntax error, ok() is false, diagnostics() holds the error (the first
// one, as CPython reports it) and root() is an empty Module covering the whole file.
#pragma once

#include <torchport/syntax/arena.h>
#include <torchport/syntax/node.h>
#include <torchport/syntax/token.h>
#include <torchport/text/diagnostic.h>
#include <torchport/text/line_index.h>
#include <torchport/text/source.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace torchport::syntax {

struct ByteRange {
  std::uint32_t begin;  ///< offset of the first byte
  std::uint32_t end;    ///< offset one past the last byte
};

/// Comparison operators, as ast's cmpop classes.
enum class CmpOp : std::uint8_t { Eq, NotEq, Lt, LtE, Gt, GtE, Is, IsNot, In, NotIn };

class Tree {
 public:
  /// `line_starts`: the lexer's (LexResult::line_starts) for the text's line index.
  Tree(text::SourceFile source, std::vector<Token> tokens, std::vector<std::uint32_t> line_starts);
  Tree(Tree&&) noexcept;
  Tree& operator=(Tree&&) noexcept;
  ~Tree();

  // ---- the file ----
  const text::SourceFile& source() const { return source_; }
  const std::string& path() const { return source_.path; }
  std::string_view text() const { return source_.text; }
  const std::vector<Token>& tokens() const { return tokens_; }
  std::string_view token_text(std::uint32_t index) const { return tokens_[index].text(text()); }
  const text::LineIndex& lines() const { return lines_; }
  /// The text and the line index, given up by a tree that is about to go (the rules have run):
  /// the caller keeps them without a copy. The tree must not be used after, only destroyed.
  struct Released {
    std::string text;
    text::LineIndex lines;
  };
  Released release() &&;

  // ---- the tree ----
  const Node& root() const { return *root_; }
  /// True when the file parsed without error.
  bool ok() const { return ok_; }
  /// Syntax errors (and lexical errors) in file order; at most one error today.
  const std::vector<text::Diagnostic>& diagnostics() const { return diagnostics_; }
  /// `path:line:col: message`, line 1-based, col 1-based (in bytes, like a compiler; CPython's
  /// 0-based col_offset plus one).
  std::string format(const text::Diagnostic& d) const;

  // ---- positions ----
  ByteRange byte_range(const Node& n) const {
    return {tokens_[n.first_token()].begin, tokens_[n.last_token()].end};
  }
  /// The exact source text of the node (its span, no surrounding trivia).
  std::string_view text(const Node& n) const {
    ByteRange r = byte_range(n);
    return text().substr(r.begin, r.end - r.begin);
  }
  text::LineCol start(const Node& n) const { return lines_.locate(byte_range(n).begin); }
  text::LineCol end(const Node& n) const { return lines_.locate(byte_range(n).end); }
  ByteRange token_range(std::uint32_t index) const {
    return {tokens_[index].begin, tokens_[index].end};
  }

  // ---- searching ----
  /// Every node of `kind`, in pre-order (source order). The first call indexes the whole tree
  /// by kind in one walk (thread-safe); later calls return that index's list.
  const std::vector<const Node*>& find_all(NodeKind kind) const;

  // ---- typed accessors that need the text ----
  /// The identifier: Name → id; Attribute → attr; keyword → arg ("" for **kw);
  /// FunctionDef/AsyncFunctionDef/ClassDef/arg/TypeVar/ParamSpec/TypeVarTuple → name;
  /// ExceptHandler/MatchAs/MatchStar → the bound name ("" if none); alias → asname ("" if none);
  /// TypeAlias → the alias name. Empty for other kinds.
  /// Inline for the kinds whose own token is the name (rules ask millions of times), the rest
  /// out of line.
  std::string_view name(const Node& n) const {
    switch (n.kind()) {
      case NodeKind::Name:
      case NodeKind::Attribute:
      case NodeKind::keyword:
      case NodeKind::FunctionDef:
      case NodeKind::AsyncFunctionDef:
      case NodeKind::ClassDef:
      case NodeKind::arg:
      case NodeKind::TypeVar:
      case NodeKind::ParamSpec:
      case NodeKind::TypeVarTuple:
      case NodeKind::ExceptHandler:
      case NodeKind::MatchAs:
      case NodeKind::MatchStar:
      case NodeKind::alias:
        return n.token() == kNoToken ? std::string_view() : token_text(n.token());
      default:
        return other_name(n);
    }
  }
  /// alias: the dotted name ("os.path", "*"), without any whitespace inside it.
  std::string alias_name(const Node& alias) const;
  /// ImportFrom: the module ("" for `from . import x`); level() gives the dots.
  std::string module(const Node& import_from) const;
  std::uint32_t level(const Node& import_from) const { return import_from.aux(); }
  /// Compare: the operators, one per comparator.
  std::vector<CmpOp> compare_ops(const Node& compare) const;
  /// Constant: true for str/bytes literals.
  bool is_string(const Node& constant) const {
    return constant.has(kString) || constant.has(kBytes);
  }
  /// Constant str/bytes: the decoded value (UTF-8; bytes as their byte values) when every part
  /// is a plain literal whose escapes we decode (all but \N{...}); nullopt otherwise.
  std::optional<std::string> string_value(const Node& constant) const;
  /// String token: its prefix letters as written ("", "rb", "F", ...).
  std::string_view string_prefix(std::uint32_t token) const;

 private:
  /// name() for the kinds whose name is not their own token (TypeAlias; "" for the rest).
  std::string_view other_name(const Node& n) const;
  friend class Parser;
  friend Tree parse(text::SourceFile source);
  text::SourceFile source_;
  std::vector<Token> tokens_;
  text::LineIndex lines_;
  Arena arena_;
  const Node* root_ = nullptr;
  bool ok_ = true;
  std::vector<text::Diagnostic> diagnostics_;
  struct KindIndex;  ///< the nodes by kind, filled by the first find_all
  std::unique_ptr<KindIndex> kinds_;
  void build_kind_index() const;
  /// Nodes of each kind the parser made, counted by Parser::make: the capacity find_all
  /// reserves for each kind's list (at least enough; a failed speculative parse or a syntax
  /// error discards some).
  std::array<std::uint32_t, static_cast<std::size_t>(NodeKind::TypeVarTuple) + 1> made_{};
};

/// Pre-order walk from `n`. `visit(const Node&)` may return void, or bool: false skips the
/// node's children.
template <class Visitor>
void walk(const Node& n, Visitor&& visit) {
  if constexpr (std::is_same_v<decltype(visit(n)), bool>) {
    if (!visit(n)) return;
  } else {
    visit(n);
  }
  for (const Node* c : n.children()) walk(*c, visit);
}

}  // namespace torchport::syntax
