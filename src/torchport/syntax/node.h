// The concrete syntax tree of a Python module.
//
// NodeKind mirrors CPython's ast classes (same names), so that a rule writer who knows `ast`
// knows this tree. A node covers a contiguous range of tokens (`first_token`..`last_token`,
// inclusive) and that range is exactly CPython's span for the same node (lineno, col_offset,
// end_lineno, end_col_offset): a parenthesized `(a)` is a Name covering `a`, a parenthesized
// tuple includes its parentheses, a decorated def starts at `def`, a call ends at its `)`.
// Tokens that are not nodes (operators, keywords, the attribute name of an Attribute, the
// argument name of a keyword, ...) are reachable through `token()` and `extra_tokens()`; trivia
// (whitespace, comments) sit between the tokens, so the tree is lossless.
//
// Children are stored in source order. Each child carries a Role saying which field of its
// parent it fills (Call: Func, Arg, Keyword; Dict: Key, Value; ...). Nodes and child arrays are
// allocated in the Tree's arena; nodes are immutable once the parser is done.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace torchport::syntax {

enum class NodeKind : std::uint8_t {
  // ---- module ----
  Module,
  // ---- statements ----
  FunctionDef,
  AsyncFunctionDef,
  ClassDef,
  Return,
  Delete,
  Assign,
  TypeAlias,
  AugAssign,
  AnnAssign,
  For,
  AsyncFor,
  While,
  If,
  With,
  AsyncWith,
  Match,
  Raise,
  Try,
  TryStar,
  Assert,
  Import,
  ImportFrom,
  Global,
  Nonlocal,
  Expr,
  Pass,
  Break,
  Continue,
  // ---- expressions ----
  BoolOp,
  NamedExpr,
  BinOp,
  UnaryOp,
  Lambda,
  IfExp,
  Dict,
  Set,
  ListComp,
  SetComp,
  DictComp,
  GeneratorExp,
  Await,
  Yield,
  YieldFrom,
  Compare,
  Call,
  FormattedValue,
  Interpolation,
  JoinedStr,
  TemplateStr,
  Constant,
  Attribute,
  Subscript,
  Starred,
  Name,
  List,
  Tuple,
  Slice,
  // ---- helpers ----
  comprehension,
  ExceptHandler,
  arguments,
  arg,
  keyword,
  alias,
  withitem,
  match_case,
  // ---- patterns ----
  MatchValue,
  MatchSingleton,
  MatchSequence,
  MatchMapping,
  MatchClass,
  MatchStar,
  MatchAs,
  MatchOr,
  // ---- type parameters (PEP 695) ----
  TypeVar,
  ParamSpec,
  TypeVarTuple,
};

/// The ast class name ("Call", "withitem", ...).
std::string_view node_kind_name(NodeKind k);

/// True for statement kinds (FunctionDef .. Continue).
constexpr bool is_statement(NodeKind k) {
  return k >= NodeKind::FunctionDef && k <= NodeKind::Continue;
}
/// True for expression kinds (BoolOp .. Slice).
constexpr bool is_expression(NodeKind k) { return k >= NodeKind::BoolOp && k <= NodeKind::Slice; }

/// Which field of its parent a child fills. Names follow the ast field names.
enum class Role : std::uint8_t {
  None,        ///< the root
  Body,        ///< statement in a body (also Lambda/IfExp body, Expr/Return value is Value)
  OrElse,      ///< statement in `else:`/`elif` (If's elif is an If in OrElse); IfExp orelse
  FinalBody,   ///< statement in `finally:`
  Handler,     ///< ExceptHandler of Try/TryStar
  Decorator,   ///< decorator expression of FunctionDef/ClassDef
  Target,      ///< For/AugAssign/AnnAssign/NamedExpr/comprehension target; Assign targets
  Value,       ///< the value of Assign/AugAssign/AnnAssign/Return/Expr/Attribute/Subscript/
               ///< Starred/keyword/Await/Yield/YieldFrom/FormattedValue/MatchValue/TypeAlias,
               ///< a Dict value
  Func,        ///< Call.func
  Arg,         ///< Call positional argument (may be Starred)
  Keyword,     ///< Call/ClassDef keyword
  Base,        ///< ClassDef base
  Test,        ///< If/While/Assert/IfExp test
  Iter,        ///< For/comprehension iter
  Left,        ///< BinOp/Compare left
  Right,       ///< BinOp right
  Operand,     ///< UnaryOp operand; BoolOp values
  Comparator,  ///< Compare comparators
  Elt,         ///< List/Tuple/Set element; ListComp/SetComp/GeneratorExp elt
  Key,         ///< Dict key; DictComp key; MatchMapping key
  Generator,   ///< comprehension of a *Comp/GeneratorExp
  If,          ///< comprehension condition
  Slice,       ///< Subscript.slice
  Lower,
  Upper,
  Step,        ///< Slice parts
  Annotation,  ///< AnnAssign/arg annotation
  Returns,     ///< FunctionDef return annotation
  Args,        ///< FunctionDef/Lambda `arguments`
  TypeParam,   ///< TypeVar/ParamSpec/TypeVarTuple of a def/class/type alias
  Item,        ///< With withitem
  ContextExpr,
  OptionalVars,  ///< withitem parts
  Subject,       ///< Match subject
  Case,          ///< Match match_case
  Pattern,       ///< match_case/MatchAs pattern; MatchOr/MatchSequence/MatchClass patterns
  KwdPattern,    ///< MatchClass keyword pattern (name in the parent's extra_tokens)
  Guard,         ///< match_case guard
  Cls,           ///< MatchClass cls
  Exc,
  Cause,  ///< Raise
  Msg,    ///< Assert msg
  Type,   ///< ExceptHandler type
  Alias,  ///< Import/ImportFrom alias
  PosOnlyArg,
  PlainArg,
  VarArg,
  KwOnlyArg,
  KwArg,        ///< arguments' arg nodes
  Default,      ///< default of a positional parameter (arguments.defaults)
  KwDefault,    ///< default of a keyword-only parameter (arguments.kw_defaults)
  Bound,        ///< TypeVar bound
  TypeDefault,  ///< PEP 696 default of a type parameter
  FormatSpec,   ///< FormattedValue/Interpolation format_spec (a JoinedStr)
  Part,         ///< JoinedStr/TemplateStr value (Constant, FormattedValue, Interpolation)
  Name,         ///< TypeAlias name
};

/// Bits of Node::flags.
enum NodeFlag : std::uint16_t {
  kParenthesized = 1 << 0,      ///< an expression written inside (redundant) parentheses
  kString = 1 << 1,             ///< Constant: a str literal (possibly implicitly concatenated)
  kBytes = 1 << 2,              ///< Constant: a bytes literal
  kNumber = 1 << 3,             ///< Constant: int, float or imaginary literal
  kNone = 1 << 4,               ///< Constant: None
  kTrue = 1 << 5,               ///< Constant: True
  kFalse = 1 << 6,              ///< Constant: False
  kEllipsis = 1 << 7,           ///< Constant: ...
  kDebug = 1 << 8,              ///< FormattedValue/Interpolation: has `=` (self-documenting)
  kStarredAnnotation = 1 << 9,  ///< arg: `*args: *Ts` (PEP 646)
  kImplicitConcat = 1 << 10,    ///< Constant/JoinedStr made of several adjacent literals
};

/// No token (e.g. keyword.token() for `**kwargs`).
inline constexpr std::uint32_t kNoToken = 0xffffffffu;

class Node {
 public:
  NodeKind kind() const { return kind_; }
  /// The field of the parent this node fills.
  Role role() const { return role_; }
  std::uint16_t flags() const { return flags_; }
  bool has(NodeFlag f) const { return (flags_ & f) != 0; }
  const Node* parent() const { return parent_; }

  /// First and last token (inclusive) of the node's span; indices into Tree::tokens().
  std::uint32_t first_token() const { return first_; }
  std::uint32_t last_token() const { return last_; }

  /// The node's own token, by kind: Name → the identifier; Attribute → the attribute name;
  /// keyword → the argument name (kNoToken for `**kw`); FunctionDef/ClassDef/arg/TypeVar/
  /// ParamSpec/TypeVarTuple → the name; alias → the `as` name (kNoToken without `as`);
  /// ExceptHandler → the `as` name; MatchAs/MatchStar → the captured name (kNoToken for `_`);
  /// MatchMapping → the `**rest` name; BinOp/UnaryOp/AugAssign → the operator; Constant and
  /// JoinedStr → the first string token; otherwise kNoToken.
  std::uint32_t token() const { return token_; }
  /// More tokens, by kind: Compare → the first token of each operator (`not in`, `is not` are
  /// two tokens: the first is stored); BoolOp → each `and`/`or`; Global/Nonlocal → each name;
  /// alias → the Name tokens of the dotted name; ImportFrom → the Name tokens of the module;
  /// MatchClass → the keyword names of the keyword patterns.
  std::span<const std::uint32_t> extra_tokens() const { return {extra_, extra_count_}; }
  /// ImportFrom → level (number of leading dots); FormattedValue/Interpolation → conversion
  /// character ('s', 'r', 'a') or 0; otherwise 0.
  std::uint32_t aux() const { return aux_; }

  std::span<const Node* const> children() const { return {children_, child_count_}; }
  /// The number of nodes on the longest path from this node down to a leaf (1 for a leaf).
  /// The parser bounds it (kMaxNesting in tree.h), so every recursive walk is bounded too.
  std::uint32_t height() const { return height_; }
  /// The first child with role `r`, or nullptr.
  const Node* child(Role r) const {
    for (std::uint32_t i = 0; i < child_count_; ++i)
      if (children_[i]->role_ == r) return children_[i];
    return nullptr;
  }

  /// The children with one role, in source order: `for (const Node* a : call.children(Role::Arg))`.
  class RoleRange {
   public:
    class iterator {
     public:
      using value_type = const Node*;
      using difference_type = std::ptrdiff_t;
      iterator() = default;
      iterator(const Node* const* p, const Node* const* e, Role r) : p_(p), e_(e), r_(r) { skip(); }
      const Node* operator*() const { return *p_; }
      iterator& operator++() {
        ++p_;
        skip();
        return *this;
      }
      iterator operator++(int) {
        iterator t = *this;
        ++*this;
        return t;
      }
      bool operator==(const iterator& o) const { return p_ == o.p_; }

     private:
      void skip() {
        while (p_ != e_ && (*p_)->role_ != r_) ++p_;
      }
      const Node* const* p_ = nullptr;
      const Node* const* e_ = nullptr;
      Role r_ = Role::None;
    };
    RoleRange(std::span<const Node* const> all, Role r) : all_(all), r_(r) {}
    iterator begin() const { return {all_.data(), all_.data() + all_.size(), r_}; }
    iterator end() const {
      const Node* const* e = all_.data() + all_.size();
      return {e, e, r_};
    }
    bool empty() const { return begin() == end(); }
    std::size_t size() const {
      std::size_t n = 0;
      for (auto it = begin(); it != end(); ++it) ++n;
      return n;
    }

   private:
    std::span<const Node* const> all_;
    Role r_;
  };
  RoleRange children(Role r) const { return {children(), r}; }

  // ---- typed accessors (nullptr / empty when the node has no such field) ----
  const Node* func() const { return child(Role::Func); }          ///< Call
  RoleRange args() const { return children(Role::Arg); }          ///< Call positional args
  RoleRange keywords() const { return children(Role::Keyword); }  ///< Call/ClassDef keywords
  const Node* value() const { return child(Role::Value); }        ///< see Role::Value
  RoleRange targets() const { return children(Role::Target); }    ///< Assign targets
  const Node* target() const { return child(Role::Target); }      ///< For/AugAssign/AnnAssign/...
  const Node* annotation() const { return child(Role::Annotation); }    ///< AnnAssign/arg
  const Node* iter() const { return child(Role::Iter); }                ///< For/comprehension
  const Node* test() const { return child(Role::Test); }                ///< If/While/IfExp/Assert
  const Node* left() const { return child(Role::Left); }                ///< BinOp/Compare
  const Node* right() const { return child(Role::Right); }              ///< BinOp
  RoleRange comparators() const { return children(Role::Comparator); }  ///< Compare
  RoleRange body() const { return children(Role::Body); }               ///< statement bodies
  RoleRange orelse() const { return children(Role::OrElse); }
  RoleRange decorators() const { return children(Role::Decorator); }       ///< FunctionDef/ClassDef
  RoleRange bases() const { return children(Role::Base); }                 ///< ClassDef
  const Node* arguments() const { return child(Role::Args); }              ///< FunctionDef/Lambda
  const Node* returns() const { return child(Role::Returns); }             ///< FunctionDef
  const Node* slice() const { return child(Role::Slice); }                 ///< Subscript
  RoleRange items() const { return children(Role::Item); }                 ///< With
  const Node* context_expr() const { return child(Role::ContextExpr); }    ///< withitem
  const Node* optional_vars() const { return child(Role::OptionalVars); }  ///< withitem
  RoleRange aliases() const { return children(Role::Alias); }              ///< Import/ImportFrom
  RoleRange elts() const { return children(Role::Elt); }                   ///< List/Tuple/Set
  RoleRange parts() const { return children(Role::Part); }            ///< JoinedStr/TemplateStr
  RoleRange generators() const { return children(Role::Generator); }  ///< comprehensions
  const Node* subject() const { return child(Role::Subject); }        ///< Match
  RoleRange cases() const { return children(Role::Case); }            ///< Match
  const Node* pattern() const { return child(Role::Pattern); }        ///< match_case/MatchAs
  RoleRange type_params() const { return children(Role::TypeParam); }

 private:
  friend class Parser;
  friend class TreeBuilder;

  NodeKind kind_ = NodeKind::Module;
  Role role_ = Role::None;
  std::uint16_t flags_ = 0;
  std::uint32_t first_ = 0;
  std::uint32_t last_ = 0;
  std::uint32_t token_ = kNoToken;
  std::uint32_t aux_ = 0;
  std::uint32_t child_count_ = 0;
  std::uint32_t extra_count_ = 0;
  std::uint32_t height_ = 1;  // fills the padding before parent_: nodes stay 56 bytes
  const Node* parent_ = nullptr;
  const Node* const* children_ = nullptr;
  const std::uint32_t* extra_ = nullptr;
};

}  // namespace torchport::syntax
