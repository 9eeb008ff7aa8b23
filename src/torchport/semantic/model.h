// The semantic model of one Python file: logical lines, scopes, imports and aliases, qualified
// names of dotted references, and device-valued names.
//
// Scopes, bindings and the context of every name come from the syntax tree (the parser is
// proven equal to CPython's ast), so they follow Python's own rules: module, function and
// lambda scopes with their parameters, class bodies (which do not enclose methods or
// comprehensions), comprehension scopes (whose first iterable is evaluated outside), walrus
// targets (bound in the enclosing function), `match` captures, `global`/`nonlocal`, and
// imports in any scope. `from a import *` is ignored (nothing is guessed). Simple assignments
// `x = torch.cuda` or `dev = torch.device("cuda")` give the name a meaning; a name rebound to
// anything else shadows the import in its scope (bindings are flow-insensitive, as Python's
// are: a name bound anywhere in a function is local to all of it).
//
// Logical lines, bracket matching and the dotted references are views of the lossless token
// stream, so rules can edit exact bytes. A reference is only made from a name in load
// context: a name being bound (assignment or loop target, parameter, capture) and a keyword
// argument's name are never references, and a reference whose last attribute is assigned
// (`self.is_cuda = ...`) is marked `store`.
#pragma once

#include <torchport/syntax/token.h>
#include <torchport/syntax/tree.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace torchport::semantic {

/// Index into the token vector.
using TokenIndex = std::uint32_t;

/// One logical line: the non-trivia tokens from the first token up to its NEWLINE.
struct Line {
  std::span<const TokenIndex> tokens;  ///< significant tokens (no trivia, NEWLINE, INDENT, DEDENT)
  std::uint32_t scope = 0;             ///< the scope the line's code runs in (0 = module)
  std::uint32_t depth = 0;             ///< indentation depth (number of open INDENTs)
  std::uint32_t begin = 0;             ///< byte offset of the line's first significant token
  std::uint32_t end = 0;               ///< byte offset just after the line's NEWLINE token
};

enum class ImportKind : std::uint8_t { Import, From };

/// One imported name: `import torch.cuda.amp as amp` or `from torch.cuda.amp import autocast`.
struct Import {
  ImportKind kind = ImportKind::Import;
  std::string module;  ///< "torch.cuda.amp" (the `from` module, or the imported module)
  std::string name;    ///< From: the imported name ("autocast"); Import: ""
  std::string bound;  ///< the local name it binds: "amp", "autocast", "torch" (`import torch.cuda`)
  std::string target;      ///< qualified name the bound name stands for
  std::uint32_t line = 0;  ///< index into lines()
  std::uint32_t scope = 0;
  TokenIndex module_begin = 0, module_end = 0;  ///< tokens of the dotted module path [begin, end)
  TokenIndex item_begin = 0, item_end = 0;      ///< tokens of this item incl. its `as` clause
};

/// What a name is bound to in a scope.
struct Binding {
  enum class Kind : std::uint8_t {
    Qualified,  ///< stands for a qualified name (import, `x = torch.cuda`)
    Device,     ///< holds a device value (`dev = torch.device("cuda")`, `device = "cuda"`)
    Other,      ///< anything else: shadows outer bindings
  };
  Kind kind = Kind::Other;
  std::string target;  ///< for Qualified
};

/// A dotted reference `a.b.c` in an expression (not an import statement, not after a dot).
struct Reference {
  TokenIndex first = 0;               ///< the head Name token
  TokenIndex last = 0;                ///< the last Name token of the chain
  std::span<const TokenIndex> names;  ///< every Name token of the chain
  std::string qualified;  ///< resolved qualified name ("" if the head is not an import/alias)
  std::uint32_t line = 0;
  std::uint32_t scope = 0;  ///< the scope the head name is resolved in
  bool store = false;       ///< the chain's last attribute is assigned or deleted (`a.b = 1`)
};

class Model {
 public:
  /// Builds the model of a parsed file. The tree must outlive the model. A tree with a syntax
  /// error gives lines and references but only module-level, token-free bindings.
  explicit Model(const syntax::Tree& tree);
  // Lines and references view token pools the model owns: it moves, it is not copied.
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;

  std::string_view text() const { return text_; }
  std::span<const syntax::Token> tokens() const { return tokens_; }
  std::string_view token_text(TokenIndex i) const { return tokens_[i].text(text_); }
  syntax::TokenKind kind(TokenIndex i) const { return tokens_[i].kind; }

  const std::vector<Line>& lines() const { return lines_; }
  /// The file's String tokens, in order: a rule that reads string literals walks these, not
  /// every token.
  std::span<const TokenIndex> string_tokens() const { return string_tokens_; }
  /// The file's FStringMiddle tokens (an f-string's literal text), in order.
  std::span<const TokenIndex> fstring_middle_tokens() const { return fstring_middle_tokens_; }
  /// The file's Name tokens, in order.
  std::span<const TokenIndex> identifier_tokens() const {
    return {identifier_tokens_.get(), identifier_count_};
  }
  const std::vector<Import>& imports() const { return imports_; }
  const std::vector<Reference>& references() const { return references_; }

  /// The line a significant token belongs to, or nullopt for trivia.
  std::optional<std::uint32_t> line_of(TokenIndex i) const {
    if (i >= tokens_.size() || line_of_token_[i] < 0) return std::nullopt;
    return static_cast<std::uint32_t>(line_of_token_[i]);
  }

  /// True for a name token in store or del context (an assignment, loop, `with`/`except` or
  /// walrus target, a parameter, a capture, an `as` name, a def/class name) and for the attribute
  /// name of an assigned attribute (`is_cuda` in `self.is_cuda = x`). Such tokens are never
  /// rewritten.
  bool is_store(TokenIndex i) const { return i < context_.size() && (context_[i] & kStore) != 0; }

  /// Resolves `name` as seen from code in `scope` (innermost function scope, then module).
  std::optional<Binding> lookup(std::string_view name, std::uint32_t scope) const;

  /// The local name bound to exactly the qualified name `qualified` at module level, e.g.
  /// "t" after `import torch as t`; nullopt if the module is not imported under a plain name.
  std::optional<std::string> module_alias(std::string_view qualified) const;

  /// The Reference whose chain contains token `i`, if any.
  const Reference* reference_at(TokenIndex i) const {
    if (i >= reference_of_token_.size() || reference_of_token_[i] < 0) return nullptr;
    return &references_[static_cast<std::size_t>(reference_of_token_[i])];
  }

  /// Significant-token navigation within the whole file (skip trivia and INDENT/DEDENT/NL).
  std::optional<TokenIndex> next(TokenIndex i) const;
  std::optional<TokenIndex> prev(TokenIndex i) const;

  /// For an opening bracket, its matching closing bracket (and vice versa); nullopt if unmatched.
  std::optional<TokenIndex> match(TokenIndex bracket) const {
    if (bracket >= match_.size() || match_[bracket] < 0) return std::nullopt;
    return static_cast<TokenIndex>(match_[bracket]);
  }
  /// The innermost unclosed `(`, `[` or `{` that encloses token `i`, if any.
  std::optional<TokenIndex> enclosing_open(TokenIndex i) const {
    if (i >= tokens_.size() || enclosing_[i] < 0) return std::nullopt;
    return static_cast<TokenIndex>(enclosing_[i]);
  }

  /// Byte offset after which new top-level statements can be inserted: the end of the line of
  /// the last import in the leading import block (after the docstring and __future__ imports).
  /// Returns the offset of the line start following that import (or the end of the text).
  std::uint32_t import_block_end() const;
  /// The end of the line (after its line break) of the first module-level `import torch...` /
  /// `from torch... import` statement, or nullopt.
  std::optional<std::uint32_t> after_first_torch_import() const;
  /// The outermost function scope that encloses code running in `scope` (`scope` itself
  /// included), through class bodies and nested functions; 0 for code that runs at module level
  /// (the module, a class body or a comprehension there).
  std::uint32_t outermost_function(std::uint32_t scope) const;
  /// The line-break text the file uses ("\n", "\r\n" or "\r").
  std::string_view newline() const { return newline_; }

 private:
  void build_lines();
  void build_imports_and_bindings(const syntax::Tree& tree);
  friend class Binder;
  void build_references();
  /// `name` views the text (or is empty): the scopes keep the view.
  void bind(std::uint32_t scope, std::string_view name, Binding b);
  /// lookup() without copying: the binding, or a shared Device/Other binding for merged or
  /// conflicting ones; nullptr if unbound.
  const Binding* find_binding(std::string_view name, std::uint32_t scope) const;
  /// find_binding() where only a Qualified or Device answer matters: nullptr at once when no
  /// binding of `name` made so far in the file is either (then find_binding() could only
  /// answer an Other binding, or none). Most names (locals, builtins, parameters) are never
  /// bound to a qualified name or a device: their references skip the scope walk and the hash.
  const Binding* find_meaningful(std::string_view name, std::uint32_t scope) const {
    const std::uint32_t h = name_hash(name);
    if ((meaningful_[h / 64] & (std::uint64_t{1} << (h % 64))) == 0) return nullptr;
    return find_binding(name, scope);
  }
  /// A cheap hash of a name, for meaningful_.
  static std::uint32_t name_hash(std::string_view name) {
    if (name.empty()) return 0;
    std::uint32_t h = static_cast<std::uint32_t>(name.size());
    h = h * 131 + static_cast<unsigned char>(name.front());
    h = h * 131 + static_cast<unsigned char>(name[name.size() / 2]);
    h = h * 131 + static_cast<unsigned char>(name.back());
    return h % kMeaningfulBits;
  }
  std::uint32_t line_end_offset(std::uint32_t line) const;

  std::string_view text_;
  std::span<const syntax::Token> tokens_;
  std::vector<Line> lines_;
  /// The lines' tokens, line after line (with room for every token).
  std::unique_ptr<TokenIndex[]> line_tokens_;
  std::vector<TokenIndex> name_tokens_;            ///< the references' name chains
  std::vector<TokenIndex> string_tokens_;          ///< every String token
  std::vector<TokenIndex> fstring_middle_tokens_;  ///< every FStringMiddle token
  /// Every Name token, in order (identifier_count_ of them, room for every token).
  std::unique_ptr<TokenIndex[]> identifier_tokens_;
  std::size_t identifier_count_ = 0;
  // Per token, every entry written by build_lines (so not filled before):
  std::unique_ptr<std::int32_t[]> line_of_token_;  ///< -1 for trivia
  std::vector<std::int32_t> match_;                ///< matching bracket or -1
  std::unique_ptr<std::int32_t[]> enclosing_;      ///< innermost open bracket or -1
  std::vector<Import> imports_;
  std::vector<Reference> references_;
  std::vector<std::int32_t> reference_of_token_;
  static constexpr std::uint8_t kStore = 1;  ///< store context (see is_store)
  static constexpr std::uint8_t kLoad = 2;   ///< a Name node in load context
  std::vector<std::uint8_t> context_;        ///< per token: kStore | kLoad
  /// Per Name token in load context: the scope it is resolved in (other entries are never
  /// written nor read; released once the references are built).
  std::unique_ptr<std::uint32_t[]> scope_of_;
  enum class ScopeKind : std::uint8_t { Module, Function, Class, Comprehension };
  struct Scope {
    std::uint32_t parent = 0;
    ScopeKind kind = ScopeKind::Module;
    std::vector<std::string_view> globals;    ///< `global` names: bound and resolved in module
    std::vector<std::string_view> nonlocals;  ///< `nonlocal` names: resolved in the parent
    std::vector<std::pair<std::string_view, Binding>> names;  ///< in binding order; last wins
    /// The bindings of one name merged so far (as find_binding() merges them), kept up to date
    /// by bind(), so that a lookup costs O(1) however often the name is bound.
    struct Merged {
      std::uint32_t first = 0;  ///< index in `names` of the first binding
      bool device = false;      ///< merged into a Device binding
      bool conflict = false;    ///< bindings of different kinds or targets
    };
    /// name -> its merged bindings (only for scopes with many names): open addressing over a
    /// power-of-two table of indexes into `merged`, no node per name. A name is read back as
    /// names[merged[i].first].first.
    struct Index {
      std::vector<std::uint32_t> slots;  ///< 1 + an index into `merged`; 0 = free
      std::vector<Merged> merged;        ///< one per distinct name, in binding order
      bool empty() const { return merged.empty(); }
      /// The entry of `name`, or nullptr.
      const Merged* find(std::string_view name, const Scope& sc) const;
      /// The entry of the name of sc.names[idx]: a new one (second: true) or the name's.
      std::pair<Merged*, bool> insert(std::uint32_t idx, const Scope& sc);
    };
    Index index;
  };
  std::vector<Scope> scopes_;
  /// A filter of the names that have a Qualified or Device binding somewhere in the file
  /// (bit name_hash(name)), set by bind(): see find_meaningful().
  static constexpr std::uint32_t kMeaningfulBits = 2048;
  std::array<std::uint64_t, kMeaningfulBits / 64> meaningful_{};
  std::string_view newline_ = "\n";
};

/// A string literal token's value when it is simple (no escapes needed to read it): the
/// text between its quotes and the byte offset of that text. nullopt for bytes literals,
/// implicit concatenations are separate tokens.
struct StringValue {
  std::string_view value;
  std::uint32_t value_begin = 0;  ///< byte offset of the first value byte in the file
  char quote = '"';
  std::string_view prefix;  ///< "", "r", "u", ...
};
std::optional<StringValue> string_value(std::string_view text, const syntax::Token& tok);

/// True if `s` is a CUDA device string: "cuda" or "cuda:<digits>".
bool is_cuda_device_string(std::string_view s);

}  // namespace torchport::semantic
