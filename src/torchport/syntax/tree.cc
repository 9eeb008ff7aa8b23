#include <torchport/syntax/tree.h>
#include <torchport/text/utf8.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

namespace torchport::syntax {

std::string_view node_kind_name(NodeKind k) {
  static constexpr std::array<std::string_view, 85> kNames = {"Module",
                                                              "FunctionDef",
                                                              "AsyncFunctionDef",
                                                              "ClassDef",
                                                              "Return",
                                                              "Delete",
                                                              "Assign",
                                                              "TypeAlias",
                                                              "AugAssign",
                                                              "AnnAssign",
                                                              "For",
                                                              "AsyncFor",
                                                              "While",
                                                              "If",
                                                              "With",
                                                              "AsyncWith",
                                                              "Match",
                                                              "Raise",
                                                              "Try",
                                                              "TryStar",
                                                              "Assert",
                                                              "Import",
                                                              "ImportFrom",
                                                              "Global",
                                                              "Nonlocal",
                                                              "Expr",
                                                              "Pass",
                                                              "Break",
                                                              "Continue",
                                                              "BoolOp",
                                                              "NamedExpr",
                                                              "BinOp",
                                                              "UnaryOp",
                                                              "Lambda",
                                                              "IfExp",
                                                              "Dict",
                                                              "Set",
                                                              "ListComp",
                                                              "SetComp",
                                                              "DictComp",
                                                              "GeneratorExp",
                                                              "Await",
                                                              "Yield",
                                                              "YieldFrom",
                                                              "Compare",
                                                              "Call",
                                                              "FormattedValue",
                                                              "Interpolation",
                                                              "JoinedStr",
                                                              "TemplateStr",
                                                              "Constant",
                                                              "Attribute",
                                                              "Subscript",
                                                              "Starred",
                                                              "Name",
                                                              "List",
                                                              "Tuple",
                                                              "Slice",
                                                              "comprehension",
                                                              "ExceptHandler",
                                                              "arguments",
                                                              "arg",
                                                              "keyword",
                                                              "alias",
                                                              "withitem",
                                                              "match_case",
                                                              "MatchValue",
                                                              "MatchSingleton",
                                                              "MatchSequence",
                                                              "MatchMapping",
                                                              "MatchClass",
                                                              "MatchStar",
                                                              "MatchAs",
                                                              "MatchOr",
                                                              "TypeVar",
                                                              "ParamSpec",
                                                              "TypeVarTuple",
                                                              "?",
                                                              "?",
                                                              "?",
                                                              "?",
                                                              "?",
                                                              "?",
                                                              "?",
                                                              "?"};
  static_assert(static_cast<int>(NodeKind::TypeVarTuple) == 76);
  return kNames[static_cast<std::size_t>(k)];
}

struct Tree::KindIndex {
  // Built on the first find_all, under the mutex; `built` lets every later call skip it. (Not a
  // std::once_flag: glibc's call_once ends with a futex wake system call, one per file.)
  std::atomic<bool> built{false};
  std::mutex mutex;
  std::array<std::vector<const Node*>, static_cast<std::size_t>(NodeKind::TypeVarTuple) + 1> nodes;
};

Tree::Tree(text::SourceFile source, std::vector<Token> tokens,
           std::vector<std::uint32_t> line_starts)
    : source_(std::move(source)),
      tokens_(std::move(tokens)),
      lines_(std::move(line_starts)),
      kinds_(std::make_unique<KindIndex>()) {}
Tree::Tree(Tree&&) noexcept = default;
Tree& Tree::operator=(Tree&&) noexcept = default;
Tree::~Tree() = default;

Tree::Released Tree::release() && { return {std::move(source_.text), std::move(lines_)}; }

std::string Tree::format(const text::Diagnostic& d) const {
  text::LineCol lc = lines_.locate(d.offset);
  return source_.path + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column + 1) + ": " +
         d.message;
}

namespace {

/// Appends `n` and its subtree, in pre-order, to the lists whose ends `out` holds (one per
/// kind, each with room for every node of its kind). Recursive: the parser bounds the tree's
/// height (kMaxNesting), and each frame holds two pointers.
void index_kinds(const Node* n, const Node*** out) {
  *out[static_cast<std::size_t>(n->kind())]++ = n;
  for (const Node* c : n->children()) index_kinds(c, out);
}

}  // namespace

const std::vector<const Node*>& Tree::find_all(NodeKind kind) const {
  if (!kinds_->built.load(std::memory_order_acquire)) build_kind_index();
  return kinds_->nodes[static_cast<std::size_t>(kind)];
}

void Tree::build_kind_index() const {
  const std::lock_guard lock(kinds_->mutex);
  if (kinds_->built.load(std::memory_order_relaxed)) return;
  if (root_ != nullptr) {
    // One pre-order walk writes each node into its kind's run of one scratch array, through
    // a plain pointer per kind (no capacity check per node): the parser counted the nodes of
    // each kind it made (at least as many as the tree holds), which sizes the runs. Each list
    // is then copied from its run in one piece (a resize would first zero every entry).
    auto& lists = kinds_->nodes;
    constexpr std::size_t kKinds = std::tuple_size_v<std::remove_reference_t<decltype(lists)>>;
    std::array<const Node**, kKinds> begin;
    std::array<const Node**, kKinds> out;
    std::size_t total = 0;
    for (std::uint32_t m : made_) total += m;
    const std::unique_ptr<const Node*[]> runs(new const Node*[total]);
    std::size_t at = 0;
    for (std::size_t k = 0; k < kKinds; ++k) {
      begin[k] = out[k] = runs.get() + at;
      at += made_[k];
    }
    index_kinds(root_, out.data());
    for (std::size_t k = 0; k < kKinds; ++k)
      if (out[k] != begin[k]) lists[k].assign(begin[k], out[k]);
  }
  kinds_->built.store(true, std::memory_order_release);
}

std::string_view Tree::other_name(const Node& n) const {
  if (n.kind() == NodeKind::TypeAlias) {
    const Node* nm = n.child(Role::Name);
    return nm != nullptr ? token_text(nm->token()) : std::string_view();
  }
  return {};
}

std::string Tree::alias_name(const Node& alias) const {
  std::string out;
  for (std::uint32_t t : alias.extra_tokens()) {
    if (!out.empty()) out += '.';
    out += token_text(t);
  }
  return out;
}

std::string Tree::module(const Node& import_from) const {
  std::string out;
  for (std::uint32_t t : import_from.extra_tokens()) {
    if (!out.empty()) out += '.';
    out += token_text(t);
  }
  return out;
}

std::vector<CmpOp> Tree::compare_ops(const Node& compare) const {
  std::vector<CmpOp> ops;
  for (std::uint32_t t : compare.extra_tokens()) {
    switch (tokens_[t].kind) {
      case TokenKind::EqEqual:
        ops.push_back(CmpOp::Eq);
        break;
      case TokenKind::NotEqual:
        ops.push_back(CmpOp::NotEq);
        break;
      case TokenKind::Less:
        ops.push_back(CmpOp::Lt);
        break;
      case TokenKind::LessEqual:
        ops.push_back(CmpOp::LtE);
        break;
      case TokenKind::Greater:
        ops.push_back(CmpOp::Gt);
        break;
      case TokenKind::GreaterEqual:
        ops.push_back(CmpOp::GtE);
        break;
      case TokenKind::KwIn:
        ops.push_back(CmpOp::In);
        break;
      case TokenKind::KwNot:
        ops.push_back(CmpOp::NotIn);
        break;
      case TokenKind::KwIs: {
        // `is not`: the next significant token is `not`.
        std::uint32_t i = t + 1;
        while (i < tokens_.size() && is_trivia(tokens_[i].kind)) ++i;
        ops.push_back(i < tokens_.size() && tokens_[i].kind == TokenKind::KwNot ? CmpOp::IsNot
                                                                                : CmpOp::Is);
        break;
      }
      default:
        break;
    }
  }
  return ops;
}

std::string_view Tree::string_prefix(std::uint32_t token) const {
  std::string_view s = token_text(token);
  std::size_t i = 0;
  while (i < s.size() && s[i] != '\'' && s[i] != '"') ++i;
  return s.substr(0, i);
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes one literal token (prefix, quotes, body). False when it cannot (\N{...}, bad escape).
bool decode_literal(std::string_view tok, std::string& out) {
  std::size_t i = 0;
  bool raw = false, bytes = false;
  while (i < tok.size() && tok[i] != '\'' && tok[i] != '"') {
    char c = static_cast<char>(tok[i] | 0x20);
    if (c == 'r') raw = true;
    if (c == 'b') bytes = true;
    if (c == 'f' || c == 't') return false;
    ++i;
  }
  if (i >= tok.size()) return false;
  char q = tok[i];
  std::size_t qlen = (tok.size() - i >= 6 && tok[i + 1] == q && tok[i + 2] == q) ? 3 : 1;
  if (tok.size() < i + 2 * qlen) return false;
  std::string_view body = tok.substr(i + qlen, tok.size() - i - 2 * qlen);
  out.reserve(out.size() + body.size());
  for (std::size_t k = 0; k < body.size(); ++k) {
    // A run of bytes that stand for themselves is copied at once.
    std::size_t run = k;
    while (run < body.size() && body[run] != '\r' && (raw || body[run] != '\\')) ++run;
    if (run != k) {
      out.append(body.substr(k, run - k));
      if (run == body.size()) break;
      k = run;
    }
    char c = body[k];
    if (c == '\r') {  // newlines inside literals are normalised to \n, as CPython does
      out += '\n';
      if (k + 1 < body.size() && body[k + 1] == '\n') ++k;
      continue;
    }
    if (c != '\\' || raw) {
      out += c;
      continue;
    }
    if (++k >= body.size()) return false;
    char e = body[k];
    switch (e) {
      case '\n':
        break;
      case '\r':
        if (k + 1 < body.size() && body[k + 1] == '\n') ++k;
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (bytes && e != 'x') {
          out += '\\';
          out += e;
          break;
        }
        std::uint32_t v = 0;
        for (std::size_t j = 1; j <= n; ++j) {
          if (k + j >= body.size()) return false;
          int h = hex_value(body[k + j]);
          if (h < 0) return false;
          v = v * 16 + static_cast<std::uint32_t>(h);
        }
        k += n;
        if (bytes) {
          out += static_cast<char>(v);
        } else {
          if (v > 0x10FFFF) return false;
          text::append_utf8(out, v);
        }
        break;
      }
      case 'N':
        if (bytes) {
          out += "\\N";
          break;
        }
        return false;
      default:
        if (e >= '0' && e <= '7') {
          std::uint32_t v = static_cast<std::uint32_t>(e - '0');
          for (int j = 0; j < 2 && k + 1 < body.size() && body[k + 1] >= '0' && body[k + 1] <= '7';
               ++j)
            v = v * 8 + static_cast<std::uint32_t>(body[++k] - '0');
          if (bytes) {
            out += static_cast<char>(v & 0xFF);
          } else {
            text::append_utf8(out, v);
          }
        } else {
          out += '\\';  // unknown escapes stay as written (with a warning in CPython)
          out += e;
        }
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> Tree::string_value(const Node& constant) const {
  if (constant.kind() != NodeKind::Constant || !is_string(constant)) return std::nullopt;
  std::string out;
  for (std::uint32_t t = constant.first_token(); t <= constant.last_token(); ++t) {
    if (tokens_[t].kind != TokenKind::String) continue;
    if (!decode_literal(token_text(t), out)) return std::nullopt;
  }
  return out;
}

}  // namespace torchport::syntax
