#include <torchport/semantic/model.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

namespace torchport::semantic {

using syntax::TokenKind;

namespace {

bool significant(TokenKind k) {
  return !syntax::is_trivia(k) && k != TokenKind::Newline && k != TokenKind::Indent &&
         k != TokenKind::Dedent && k != TokenKind::EndMarker;
}

}  // namespace

bool is_cuda_device_string(std::string_view s) {
  if (s == "cuda") return true;
  if (s.size() <= 5 || s.substr(0, 5) != "cuda:") return false;
  return std::all_of(s.begin() + 5, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<StringValue> string_value(std::string_view text, const syntax::Token& tok) {
  if (tok.kind != TokenKind::String) return std::nullopt;
  // The lexer's flags say what a scan of the literal would find: its prefix's length, bytes,
  // triple quotes, a backslash between the quotes.
  if ((tok.flags & (syntax::kTokenBytes | syntax::kTokenHasBackslash)) != 0) return std::nullopt;
  const char* const t = text.data() + tok.begin;
  const std::uint32_t p = tok.prefix_size();
  const std::uint32_t qlen = (tok.flags & syntax::kTokenTripleQuoted) != 0 ? 3 : 1;
  const std::string_view value(t + p + qlen, tok.size() - p - 2 * qlen);
  return StringValue{value, tok.begin + p + qlen, t[p], std::string_view(t, p)};
}

Model::Model(const syntax::Tree& tree) : text_(tree.text()), tokens_(tree.tokens()) {
  const std::string_view text = text_;
  if (auto nl = text.find_first_of("\r\n"); nl != std::string_view::npos) {
    if (text[nl] == '\n') {
      newline_ = "\n";
    } else if (nl + 1 < text.size() && text[nl + 1] == '\n') {
      newline_ = "\r\n";
    } else {
      newline_ = "\r";
    }
  }
  build_lines();
  build_imports_and_bindings(tree);
  build_references();
}

void Model::build_lines() {
  const auto n = static_cast<TokenIndex>(tokens_.size());
  const syntax::Token* const toks = tokens_.data();
  line_of_token_.reset(new std::int32_t[n]);
  match_.assign(n, -1);
  enclosing_.reset(new std::int32_t[n]);
  // Each line's tokens are a contiguous run of the pool, which has room for every token: it
  // never moves, so a line's span is set when the line ends. Identifiers likewise.
  line_tokens_.reset(new TokenIndex[n + 1]);
  identifier_tokens_.reset(new TokenIndex[n + 1]);
  std::int32_t* const line_of = line_of_token_.get();
  std::int32_t* const enclosing = enclosing_.get();
  std::int32_t* const match = match_.data();
  TokenIndex* const pool = line_tokens_.get();
  TokenIndex* ids = identifier_tokens_.get();
  string_tokens_.reserve(n / 32 + 1);
  lines_.reserve(n / 8 + 1);
  scopes_.push_back(Scope{});
  std::vector<TokenIndex> open;
  std::int32_t innermost = -1;  // open.back(), or -1 when no bracket is open
  std::uint32_t depth = 0;
  std::size_t line_start = 0;  // the current line's first entry in the pool
  std::size_t used = 0;        // entries of the pool written

  auto finish = [&](std::uint32_t end_offset) {
    if (used == line_start) return;
    Line cur;
    cur.tokens = {pool + line_start, used - line_start};
    cur.depth = depth;
    cur.end = end_offset;
    cur.begin = toks[pool[line_start]].begin;
    cur.scope = 0;  // set from the tree by the binder
    lines_.push_back(cur);
    line_start = used;
  };

  // One test for trivia (most tokens), one switch for the rest; `line` is the index the
  // current line gets when finish() pushes it.
  auto line = static_cast<std::int32_t>(lines_.size());
  for (TokenIndex i = 0; i < n; ++i) {
    const TokenKind k = toks[i].kind;
    enclosing[i] = innermost;
    if (syntax::is_trivia(k)) {
      line_of[i] = -1;
      continue;
    }
    switch (k) {
      case TokenKind::Indent:
        ++depth;
        line_of[i] = -1;
        continue;
      case TokenKind::Dedent:
        if (depth > 0) --depth;
        line_of[i] = -1;
        continue;
      case TokenKind::Newline:
      case TokenKind::EndMarker:
        line_of[i] = -1;
        finish(toks[i].end);
        line = static_cast<std::int32_t>(lines_.size());
        open.clear();
        innermost = -1;
        continue;
      case TokenKind::LPar:
      case TokenKind::LSqb:
      case TokenKind::LBrace:
        open.push_back(i);
        innermost = static_cast<std::int32_t>(i);
        break;
      case TokenKind::RPar:
      case TokenKind::RSqb:
      case TokenKind::RBrace:
        if (!open.empty()) {
          match[open.back()] = static_cast<std::int32_t>(i);
          match[i] = static_cast<std::int32_t>(open.back());
          open.pop_back();
          innermost = open.empty() ? -1 : static_cast<std::int32_t>(open.back());
          enclosing[i] = innermost;
        }
        break;
      case TokenKind::String:
        string_tokens_.push_back(i);
        break;
      case TokenKind::FStringMiddle:
        fstring_middle_tokens_.push_back(i);
        break;
      case TokenKind::Name:
        *ids++ = i;
        break;
      default:
        break;
    }
    line_of[i] = line;
    pool[used++] = i;
  }
  finish(static_cast<std::uint32_t>(text_.size()));
  identifier_count_ = static_cast<std::size_t>(ids - identifier_tokens_.get());
}

namespace {

/// The scope index's hash of a name, inline (names are short: std::hash's out-of-line
/// _Hash_bytes cost more than the bytes): the name read eight bytes at a time (its last word
/// overlapping the one before), four at a time or three bytes for short names, each word
/// multiplied in; the high bits are folded into the low ones the index's mask keeps.
std::size_t index_hash(std::string_view name) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const char* p = name.data();
  const std::size_t n = name.size();
  std::uint64_t h = n;
  auto mix = [&](std::uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  };
  if (n >= 8) {
    std::uint64_t w;
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(&w, p + i, 8);
      mix(w);
    }
    std::memcpy(&w, p + n - 8, 8);
    mix(w);
  } else if (n >= 4) {
    std::uint32_t x, y;
    std::memcpy(&x, p, 4);
    std::memcpy(&y, p + n - 4, 4);
    mix((std::uint64_t{x} << 32) | y);
  } else if (n > 0) {
    mix((std::uint64_t{static_cast<unsigned char>(p[0])} << 16) |
        (std::uint64_t{static_cast<unsigned char>(p[n / 2])} << 8) |
        static_cast<unsigned char>(p[n - 1]));
  }
  return static_cast<std::size_t>(h ^ (h >> 32));
}

}  // namespace

const Model::Scope::Merged* Model::Scope::Index::find(std::string_view name,
                                                      const Scope& sc) const {
  if (slots.empty()) return nullptr;
  const std::size_t mask = slots.size() - 1;
  for (std::size_t h = index_hash(name) & mask;; h = (h + 1) & mask) {
    if (slots[h] == 0) return nullptr;
    const Merged& m = merged[slots[h] - 1];
    if (sc.names[m.first].first == name) return &m;
  }
}

std::pair<Model::Scope::Merged*, bool> Model::Scope::Index::insert(std::uint32_t idx,
                                                                   const Scope& sc) {
  // At most half full: a probe meets a free slot soon.
  if ((merged.size() + 1) * 2 > slots.size()) {
    slots.assign(std::max<std::size_t>(64, slots.size() * 2), 0);
    const std::size_t mask = slots.size() - 1;
    for (std::uint32_t i = 0; i < merged.size(); ++i) {
      std::size_t h = index_hash(sc.names[merged[i].first].first) & mask;
      while (slots[h] != 0) h = (h + 1) & mask;
      slots[h] = i + 1;
    }
  }
  const std::string_view name = sc.names[idx].first;
  const std::size_t mask = slots.size() - 1;
  std::size_t h = index_hash(name) & mask;
  for (; slots[h] != 0; h = (h + 1) & mask) {
    Merged& m = merged[slots[h] - 1];
    if (sc.names[m.first].first == name) return {&m, false};
  }
  merged.push_back(Merged{idx});
  slots[h] = static_cast<std::uint32_t>(merged.size());
  return {&merged.back(), true};
}

void Model::bind(std::uint32_t scope, std::string_view name, Binding b) {
  // Small scopes are searched linearly; from kIndexFrom names on, through an index.
  constexpr std::size_t kIndexFrom = 16;
  Scope& sc = scopes_[scope];
  if (b.kind != Binding::Kind::Other) {
    const std::uint32_t h = name_hash(name);
    meaningful_[h / 64] |= std::uint64_t{1} << (h % 64);
  }
  sc.names.emplace_back(name, std::move(b));
  if (sc.index.empty() && sc.names.size() < kIndexFrom) return;
  const auto first =
      sc.index.empty() ? std::uint32_t{0} : static_cast<std::uint32_t>(sc.names.size() - 1);
  for (auto idx = first; idx < sc.names.size(); ++idx) {
    auto [entry, inserted] = sc.index.insert(idx, sc);
    if (inserted) continue;
    // The same steps as Merge::add, on indexes (`names` may move as it grows).
    Scope::Merged& m = *entry;
    const Binding& added = sc.names[idx].second;
    const Binding& found = sc.names[m.first].second;
    if (m.device || added.kind == Binding::Kind::Device || found.kind == Binding::Kind::Device)
      m.device = true;
    else if (added.kind != found.kind || added.target != found.target)
      m.conflict = true;
  }
}

namespace {

const Binding kMergedDevice{Binding::Kind::Device, {}};
const Binding kConflict{Binding::Kind::Other, {}};

/// Merges the bindings of one name in one scope, in binding order, as lookup() documents.
struct Merge {
  const Binding* found = nullptr;
  bool conflict = false;
  void add(const Binding& b) {
    if (!found) {
      found = &b;
    } else if (b.kind == Binding::Kind::Device || found->kind == Binding::Kind::Device) {
      found = &kMergedDevice;
    } else if (b.kind != found->kind || b.target != found->target) {
      conflict = true;
    }
  }
  const Binding* result() const { return conflict ? &kConflict : found; }
};

}  // namespace

const Binding* Model::find_binding(std::string_view name, std::uint32_t scope) const {
  // Most scopes declare nothing `global` or `nonlocal`: no search then.
  auto declared = [&](const std::vector<std::string_view>& v) {
    return !v.empty() && std::find(v.begin(), v.end(), name) != v.end();
  };
  for (std::uint32_t s = scope;; s = scopes_[s].parent) {
    const Scope& sc = scopes_[s];
    if (s != 0 && declared(sc.globals)) s = 0;       // `global name`: only the module's binding
    if (s != 0 && declared(sc.nonlocals)) continue;  // bound in an enclosing function
    const Scope& at = scopes_[s];
    Merge m;
    if (at.index.empty()) {
      for (const auto& [n, b] : at.names)
        if (n == name) m.add(b);
    } else if (const Scope::Merged* found = at.index.find(name, at)) {
      const Scope::Merged& x = *found;
      return x.conflict ? &kConflict : x.device ? &kMergedDevice : &at.names[x.first].second;
    }
    if (m.found) return m.result();
    if (s == 0) return nullptr;
  }
}

std::optional<Binding> Model::lookup(std::string_view name, std::uint32_t scope) const {
  const Binding* b = find_binding(name, scope);
  if (!b) return std::nullopt;
  return *b;
}

std::uint32_t Model::outermost_function(std::uint32_t scope) const {
  std::uint32_t best = 0;
  for (std::uint32_t s = scope; s != 0 && s < scopes_.size(); s = scopes_[s].parent) {
    if (scopes_[s].kind == ScopeKind::Function) best = s;
  }
  return best;
}

std::optional<std::string> Model::module_alias(std::string_view qualified) const {
  for (const auto& [n, b] : scopes_[0].names) {
    if (b.kind == Binding::Kind::Qualified && b.target == qualified) {
      const Binding* again = find_binding(n, 0);
      if (again && again->kind == Binding::Kind::Qualified && again->target == qualified)
        return std::string(n);
    }
  }
  return std::nullopt;
}

namespace {

using syntax::Node;
using syntax::NodeKind;
using syntax::Role;

bool is_pattern(NodeKind k) { return k >= NodeKind::MatchValue && k <= NodeKind::MatchOr; }

// A device string built at run time or written out: "cuda", "cuda:0", f"cuda:{i}",
// "cuda:%d" % i, "cuda:" + str(i), "cuda:{}".format(i), and either branch of `a if c else b` or
// an operand of `x or "cuda"`.
bool cuda_prefix(std::string_view v) { return v == "cuda" || v.starts_with("cuda:"); }

}  // namespace

/// Builds scopes, bindings, imports and the context of every name from the syntax tree.
class Binder {
 public:
  Binder(Model& m, const syntax::Tree& t) : m_(m), t_(t) {}

  void run() {
    const std::size_t n = m_.tokens_.size();
    m_.context_.assign(n, 0);
    m_.scope_of_.reset(new std::uint32_t[n]);
    line_set_.assign(m_.lines_.size(), 0);
    for (const Node* c : t_.root().children()) node(*c, 0);
  }

 private:
  using Kind = Model::ScopeKind;

  std::uint32_t new_scope(std::uint32_t enclosing, Kind kind) {
    // Class bodies do not enclose the functions, classes and comprehensions inside them.
    std::uint32_t parent = enclosing;
    while (parent != 0 && m_.scopes_[parent].kind == Kind::Class)
      parent = m_.scopes_[parent].parent;
    Model::Scope s;
    s.parent = parent;
    s.kind = kind;
    s.names.reserve(4);  // parameters and a few locals: one allocation instead of three
    m_.scopes_.push_back(std::move(s));
    return static_cast<std::uint32_t>(m_.scopes_.size() - 1);
  }

  void mark_line(std::uint32_t first_token, std::uint32_t scope) {
    auto li = m_.line_of(first_token);
    if (!li || line_set_[*li]) return;
    line_set_[*li] = 1;
    m_.lines_[*li].scope = scope;
  }

  static bool contains(const std::vector<std::string_view>& v, std::string_view name) {
    return !v.empty() && std::find(v.begin(), v.end(), name) != v.end();
  }

  /// The scope a binding of `name` made in `scope` lands in (global/nonlocal redirect it).
  std::uint32_t binding_scope(std::uint32_t scope, std::string_view name) const {
    const Model::Scope& s = m_.scopes_[scope];
    if (contains(s.globals, name)) return 0;
    if (contains(s.nonlocals, name)) return s.parent;
    return scope;
  }

  void bind_token(std::uint32_t scope, std::uint32_t tok, Binding b) {
    if (tok == syntax::kNoToken) return;
    m_.context_[tok] |= Model::kStore;
    m_.scope_of_[tok] = scope;
    const std::string_view name = m_.token_text(tok);
    m_.bind(binding_scope(scope, name), name, std::move(b));
  }

  /// An assignment target: names are bound (Name targets get `value`), attribute and
  /// subscript bases are loads, an assigned attribute's name is marked store.
  void target(const Node& t, std::uint32_t scope, const Binding& value) {
    switch (t.kind()) {
      case NodeKind::Name:
        bind_token(scope, t.token(), value);
        return;
      case NodeKind::Tuple:
      case NodeKind::List:
      case NodeKind::Starred:
        for (const Node* c : t.children()) target(*c, scope, Binding{});
        return;
      case NodeKind::Attribute:
        if (const Node* v = t.value()) expr(*v, scope);
        if (t.token() != syntax::kNoToken) m_.context_[t.token()] |= Model::kStore;
        return;
      default:
        expr(t, scope);
    }
  }

  void node(const Node& n, std::uint32_t scope) {
    if (syntax::is_expression(n.kind())) {
      expr(n, scope);
    } else if (syntax::is_statement(n.kind())) {
      stmt(n, scope);
    } else if (is_pattern(n.kind())) {
      pattern(n, scope);
    } else if (n.kind() == NodeKind::ExceptHandler) {
      if (const Node* ty = n.child(Role::Type)) expr(*ty, scope);
      bind_token(scope, n.token(), Binding{});
      for (const Node* c : n.body()) node(*c, scope);
    } else if (n.kind() == NodeKind::match_case) {
      for (const Node* c : n.children()) node(*c, scope);
    } else if (n.kind() == NodeKind::withitem) {
      if (const Node* e = n.context_expr()) expr(*e, scope);
      if (const Node* v = n.optional_vars()) target(*v, scope, Binding{});
    } else {
      expr(n, scope);
    }
  }

  void pattern(const Node& p, std::uint32_t scope) {
    switch (p.kind()) {
      case NodeKind::MatchAs:
      case NodeKind::MatchStar:
      case NodeKind::MatchMapping:
        bind_token(scope, p.token(), Binding{});
        break;
      default:
        break;
    }
    for (const Node* c : p.children()) node(*c, scope);
  }

  /// Parameters: defaults and annotations are evaluated in `outer`, names bound in `inner`.
  void parameters(const Node* args, std::uint32_t outer, std::uint32_t inner) {
    if (!args) return;
    for (const Node* c : args->children()) {
      if (c->kind() == NodeKind::arg) {
        if (const Node* a = c->annotation()) expr(*a, outer);
        bind_token(inner, c->token(), Binding{});
      } else {
        expr(*c, outer);
      }
    }
  }

  void comprehension(const Node& n, std::uint32_t scope) {
    std::uint32_t inner = scope;
    bool first = true;
    for (const Node* g : n.generators()) {
      if (const Node* it = g->iter()) expr(*it, first ? scope : inner);
      if (first) inner = new_scope(scope, Kind::Comprehension);
      first = false;
      if (const Node* tg = g->target()) target(*tg, inner, Binding{});
      for (const Node* c : g->children(Role::If)) expr(*c, inner);
    }
    for (const Node* c : n.children())
      if (c->role() != Role::Generator) expr(*c, inner);
  }

  void expr(const Node& e, std::uint32_t scope) {
    switch (e.kind()) {
      case NodeKind::Name:
        if (e.token() != syntax::kNoToken) {
          m_.context_[e.token()] |= Model::kLoad;
          m_.scope_of_[e.token()] = scope;
        }
        return;
      case NodeKind::Lambda: {
        const std::uint32_t inner = new_scope(scope, Kind::Function);
        parameters(e.arguments(), scope, inner);
        for (const Node* c : e.children())
          if (c->role() != Role::Args) expr(*c, inner);
        return;
      }
      case NodeKind::ListComp:
      case NodeKind::SetComp:
      case NodeKind::DictComp:
      case NodeKind::GeneratorExp:
        comprehension(e, scope);
        return;
      case NodeKind::NamedExpr: {
        const Node* v = e.value();
        if (v) expr(*v, scope);
        std::uint32_t s = scope;
        while (s != 0 && m_.scopes_[s].kind == Kind::Comprehension) s = m_.scopes_[s].parent;
        bool from_string = false;
        if (const Node* tg = e.target(); tg && tg->kind() == NodeKind::Name) {
          Binding b = v ? classify(*v, scope, from_string) : Binding{};
          if (from_string && b.kind == Binding::Kind::Device && !device_like(tg->token()))
            b = Binding{};
          bind_token(s, tg->token(), b);
        }
        return;
      }
      default:
        // Most children of an expression are expressions: expr() at once, not through node().
        for (const Node* c : e.children()) {
          if (syntax::is_expression(c->kind()))
            expr(*c, scope);
          else
            node(*c, scope);
        }
    }
  }

  bool device_like(std::uint32_t tok) const {
    std::string lower(m_.token_text(tok));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find("device") != std::string::npos || lower == "dev" || lower.ends_with("_dev") ||
           lower.starts_with("dev_");
  }

  /// The qualified name a Name/Attribute chain stands for, or "".
  std::string chain_target(const Node& e, std::uint32_t scope, const Binding** head) const {
    if (e.kind() == NodeKind::Name) {
      const Binding* b = m_.find_meaningful(m_.token_text(e.token()), scope);
      if (head) *head = b;
      if (b && b->kind == Binding::Kind::Qualified) return b->target;
      return {};
    }
    if (e.kind() == NodeKind::Attribute && e.value()) {
      std::string base = chain_target(*e.value(), scope, head);
      if (base.empty()) return {};
      return base + "." + std::string(m_.token_text(e.token()));
    }
    return {};
  }

  /// chain_target(e, scope, nullptr) == want, without building the chain's string: the
  /// attributes are matched against want's tail, last first, and the head's target against
  /// what is left.
  bool chain_is(const Node& e, std::uint32_t scope, std::string_view want) const {
    if (e.kind() == NodeKind::Name) {
      const Binding* b = m_.find_meaningful(m_.token_text(e.token()), scope);
      return b && b->kind == Binding::Kind::Qualified && !b->target.empty() && b->target == want;
    }
    if (e.kind() == NodeKind::Attribute && e.value()) {
      const std::string_view attr = m_.token_text(e.token());
      if (want.size() <= attr.size() || !want.ends_with(attr) ||
          want[want.size() - attr.size() - 1] != '.')
        return false;
      return chain_is(*e.value(), scope, want.substr(0, want.size() - attr.size() - 1));
    }
    return false;
  }

  bool device_string(const Node& e) const {
    switch (e.kind()) {
      case NodeKind::Constant:
        if (auto v = t_.string_value(e)) return cuda_prefix(*v);
        return false;
      case NodeKind::JoinedStr: {
        // f"cuda:{i}": the literal text before the first replacement field.
        if (e.token() == syntax::kNoToken || m_.kind(e.token()) != TokenKind::FStringStart)
          return false;
        auto mid = m_.next(e.token());
        return mid && m_.kind(*mid) == TokenKind::FStringMiddle && cuda_prefix(m_.token_text(*mid));
      }
      case NodeKind::IfExp:
        return (e.child(Role::Body) && device_string(*e.child(Role::Body))) ||
               (e.child(Role::OrElse) && device_string(*e.child(Role::OrElse)));
      case NodeKind::BoolOp:
        for (const Node* c : e.children())
          if (device_string(*c)) return true;
        return false;
      case NodeKind::BinOp:
        return e.left() && e.left()->kind() == NodeKind::Constant && device_string(*e.left());
      case NodeKind::Call: {
        const Node* f = e.func();
        return f && f->kind() == NodeKind::Attribute && m_.token_text(f->token()) == "format" &&
               f->value() && f->value()->kind() == NodeKind::Constant && device_string(*f->value());
      }
      default:
        return false;
    }
  }

  /// 2 when `e` is a device value (torch.device(...), a device variable, or either branch of
  /// `a if c else b` / an operand of `a or b` being one), 1 when it is a device string only,
  /// 0 otherwise.
  int device_kind(const Node& e, std::uint32_t scope) const {
    switch (e.kind()) {
      case NodeKind::Name: {
        const Binding* b = m_.find_meaningful(m_.token_text(e.token()), scope);
        return b && b->kind == Binding::Kind::Device ? 2 : 0;
      }
      case NodeKind::Call:
        if (e.func() && chain_is(*e.func(), scope, "torch.device")) return 2;
        return device_string(e) ? 1 : 0;
      case NodeKind::IfExp: {
        int k = 0;
        for (const Node* c : e.children())
          if (c->role() != Role::Test) k = std::max(k, device_kind(*c, scope));
        return k;
      }
      case NodeKind::BoolOp: {
        int k = 0;
        for (const Node* c : e.children()) k = std::max(k, device_kind(*c, scope));
        return k;
      }
      default:
        return device_string(e) ? 1 : 0;
    }
  }

  /// What an assigned value makes of a plain name: an alias of a qualified name, a device
  /// value, or something else. `from_string` is set when only a device string says "device".
  Binding classify(const Node& v, std::uint32_t scope, bool& from_string) const {
    const Binding* head = nullptr;
    if (v.kind() == NodeKind::Name || v.kind() == NodeKind::Attribute) {
      std::string q = chain_target(v, scope, &head);
      if (!q.empty()) return Binding{Binding::Kind::Qualified, std::move(q)};
      if (v.kind() == NodeKind::Name && head && head->kind == Binding::Kind::Device)
        return Binding{Binding::Kind::Device, {}};
      // `device_type = device.type`: the type of a device value (a name bound to it is
      // compared with "cuda" as a device is).
      if (v.kind() == NodeKind::Attribute && m_.token_text(v.token()) == "type" && v.value() &&
          v.value()->kind() == NodeKind::Name) {
        const Binding* b = m_.find_meaningful(m_.token_text(v.value()->token()), scope);
        if (b && b->kind == Binding::Kind::Device) return Binding{Binding::Kind::Device, {}};
      }
    }
    const int k = device_kind(v, scope);
    if (k == 2) return Binding{Binding::Kind::Device, {}};
    from_string = true;
    if (k == 1) return Binding{Binding::Kind::Device, {}};
    return Binding{};
  }

  void assignment(const Node& n, std::uint32_t scope) {
    const Node* v = n.value();
    if (v) expr(*v, scope);
    if (const Node* a = n.annotation()) expr(*a, scope);
    bool from_string = false;
    const Binding value = v ? classify(*v, scope, from_string) : Binding{};
    for (const Node* tg : n.children(Role::Target)) {
      if (tg->kind() == NodeKind::Name) {
        Binding b = value;
        if (b.kind == Binding::Kind::Device && from_string && !device_like(tg->token()))
          b = Binding{};
        target(*tg, scope, b);
      } else {
        target(*tg, scope, Binding{});
      }
    }
  }

  void import(const Node& n, std::uint32_t scope) {
    const auto line = m_.line_of(n.first_token()).value_or(0);
    if (n.kind() == NodeKind::Import) {
      for (const Node* al : n.aliases()) {
        auto names = al->extra_tokens();
        if (names.empty()) continue;
        Import im;
        im.kind = ImportKind::Import;
        im.line = line;
        im.scope = scope;
        im.module = t_.alias_name(*al);
        im.module_begin = names.front();
        im.module_end = names.back() + 1;
        im.item_begin = al->first_token();
        im.item_end = al->last_token() + 1;
        std::string_view bound;
        if (al->token() != syntax::kNoToken) {
          bound = m_.token_text(al->token());
          im.target = im.module;
          m_.context_[al->token()] |= Model::kStore;
        } else {
          bound = m_.token_text(names.front());
          im.target = std::string(bound);
        }
        im.bound = std::string(bound);
        m_.bind(binding_scope(scope, bound), bound, Binding{Binding::Kind::Qualified, im.target});
        m_.imports_.push_back(std::move(im));
      }
      return;
    }
    // from MODULE import ...
    std::string module(t_.level(n), '.');
    module += t_.module(n);
    const TokenIndex mb = m_.next(n.first_token()).value_or(n.first_token());
    TokenIndex me = mb;
    for (std::optional<TokenIndex> i = mb; i; i = m_.next(*i)) {
      const TokenKind k = m_.kind(*i);
      if (k != TokenKind::Dot && k != TokenKind::Ellipsis && k != TokenKind::Name) break;
      me = *i + 1;
    }
    for (const Node* al : n.aliases()) {
      auto names = al->extra_tokens();
      if (names.empty() || t_.alias_name(*al) == "*") continue;  // nothing is guessed
      Import im;
      im.kind = ImportKind::From;
      im.line = line;
      im.scope = scope;
      im.module = module;
      im.module_begin = mb;
      im.module_end = me;
      im.item_begin = al->first_token();
      im.item_end = al->last_token() + 1;
      im.name = t_.alias_name(*al);
      std::string_view bound = m_.token_text(names.front());
      if (al->token() != syntax::kNoToken) {
        bound = m_.token_text(al->token());
        m_.context_[al->token()] |= Model::kStore;
      }
      im.bound = std::string(bound);
      im.target = module + "." + im.name;
      m_.bind(binding_scope(scope, bound), bound, Binding{Binding::Kind::Qualified, im.target});
      m_.imports_.push_back(std::move(im));
    }
  }

  void stmt(const Node& n, std::uint32_t scope) {
    mark_line(n.first_token(), scope);
    switch (n.kind()) {
      case NodeKind::FunctionDef:
      case NodeKind::AsyncFunctionDef: {
        for (const Node* d : n.decorators()) {
          mark_line(d->first_token(), scope);
          expr(*d, scope);
        }
        if (const Node* r = n.returns()) expr(*r, scope);
        bind_token(scope, n.token(), Binding{});
        const std::uint32_t inner = new_scope(scope, Kind::Function);
        parameters(n.arguments(), scope, inner);
        for (const Node* c : n.body()) node(*c, inner);
        return;
      }
      case NodeKind::ClassDef: {
        for (const Node* d : n.decorators()) {
          mark_line(d->first_token(), scope);
          expr(*d, scope);
        }
        for (const Node* c : n.children())
          if (c->role() == Role::Base || c->role() == Role::Keyword) expr(*c, scope);
        bind_token(scope, n.token(), Binding{});
        const std::uint32_t inner = new_scope(scope, Kind::Class);
        for (const Node* c : n.body()) node(*c, inner);
        return;
      }
      case NodeKind::Assign:
      case NodeKind::AnnAssign:
        assignment(n, scope);
        return;
      case NodeKind::AugAssign:
        if (const Node* v = n.value()) expr(*v, scope);
        if (const Node* tg = n.target()) {
          if (tg->kind() == NodeKind::Name) {
            // Read and rebound: a load for resolution, never rewritten.
            m_.scope_of_[tg->token()] = scope;
            bind_token(scope, tg->token(), Binding{});
          } else {
            target(*tg, scope, Binding{});
          }
        }
        return;
      case NodeKind::For:
      case NodeKind::AsyncFor:
        for (const Node* c : n.children()) {
          if (c->role() == Role::Target)
            target(*c, scope, Binding{});
          else
            node(*c, scope);
        }
        return;
      case NodeKind::Delete:
        for (const Node* c : n.children()) target(*c, scope, Binding{});
        return;
      case NodeKind::Import:
      case NodeKind::ImportFrom:
        import(n, scope);
        return;
      case NodeKind::Global:
      case NodeKind::Nonlocal: {
        auto& list =
            n.kind() == NodeKind::Global ? m_.scopes_[scope].globals : m_.scopes_[scope].nonlocals;
        for (std::uint32_t tok : n.extra_tokens()) list.push_back(m_.token_text(tok));
        return;
      }
      case NodeKind::TypeAlias:
        for (const Node* c : n.children()) {
          if (c->role() == Role::Name)
            target(*c, scope, Binding{});
          else
            node(*c, scope);
        }
        return;
      default:
        for (const Node* c : n.children()) {
          if (syntax::is_expression(c->kind()))
            expr(*c, scope);
          else
            node(*c, scope);
        }
    }
  }

  Model& m_;
  const syntax::Tree& t_;
  std::vector<std::uint8_t> line_set_;
};

void Model::build_imports_and_bindings(const syntax::Tree& tree) { Binder(*this, tree).run(); }

void Model::build_references() {
  reference_of_token_.assign(tokens_.size(), -1);
  references_.reserve(identifier_count_);  // a reference has a name at least: never grows
  // A name token is in at most one reference: with this capacity the pool never moves, so the
  // references' spans stay valid.
  name_tokens_.reserve(identifier_count_);
  const syntax::Token* const toks = tokens_.data();
  const auto n = static_cast<TokenIndex>(tokens_.size());
  // The next token of the same logical line after `i`, or `n`: trivia is skipped, and a
  // NEWLINE (which ends every line; INDENT and DEDENT only follow it) is no Dot nor Name, so
  // a chain never runs past its line.
  auto next_in_line = [&](TokenIndex i) {
    TokenIndex j = i + 1;
    while (j < n && syntax::is_trivia(toks[j].kind)) ++j;
    return j;
  };
  // Only a name in load context heads a reference: never a name being bound, a parameter, a
  // keyword argument's name, an attribute name or an imported name. The Name tokens are
  // walked in order; a chain's later names are skipped (`done`).
  std::size_t done = 0;  // tokens before this one are in a reference already
  // The last lookups, by name and scope: the same head (`torch`, `nn`) is looked up again and
  // again in one scope, and no binding changes any more.
  struct Memo {
    std::string_view name;
    std::uint32_t scope = UINT32_MAX;
    const Binding* binding = nullptr;
  };
  std::array<Memo, 64> memo{};
  for (std::size_t p = 0; p < identifier_count_; ++p) {
    const TokenIndex head = identifier_tokens_[p];
    if (head < done || (context_[head] & kLoad) == 0) continue;
    const std::size_t names_at = name_tokens_.size();
    name_tokens_.push_back(head);
    TokenIndex last = head;
    for (;;) {
      const TokenIndex dot = next_in_line(last);
      if (dot >= n || toks[dot].kind != TokenKind::Dot) break;
      const TokenIndex name = next_in_line(dot);
      if (name >= n || toks[name].kind != TokenKind::Name) break;
      name_tokens_.push_back(name);
      last = name;
    }
    done = last + 1;
    Reference ref;
    ref.first = head;
    ref.line = static_cast<std::uint32_t>(line_of_token_[head]);
    ref.names = {name_tokens_.data() + names_at, name_tokens_.size() - names_at};
    ref.last = last;
    ref.scope = scope_of_[head];
    ref.store = (context_[last] & kStore) != 0 && last != head;
    const std::string_view head_text = token_text(head);
    const std::uint32_t h = name_hash(head_text);
    const Binding* b = nullptr;
    if ((meaningful_[h / 64] & (std::uint64_t{1} << (h % 64))) != 0) {
      Memo& m = memo[(h ^ (ref.scope * 31)) % memo.size()];
      if (m.scope != ref.scope || m.name != head_text)
        m = Memo{head_text, ref.scope, find_binding(head_text, ref.scope)};
      b = m.binding;
    }
    if (b && b->kind == Binding::Kind::Qualified) {
      std::size_t size = b->target.size();
      for (std::size_t r = 1; r < ref.names.size(); ++r) size += 1 + toks[ref.names[r]].size();
      ref.qualified.reserve(size);
      ref.qualified = b->target;
      for (std::size_t r = 1; r < ref.names.size(); ++r) {
        ref.qualified += '.';
        ref.qualified += token_text(ref.names[r]);
      }
    }
    const auto idx = static_cast<std::int32_t>(references_.size());
    for (TokenIndex t : ref.names) reference_of_token_[t] = idx;
    references_.push_back(std::move(ref));
  }
  scope_of_.reset();  // only the references needed it
}

std::optional<TokenIndex> Model::next(TokenIndex i) const {
  for (TokenIndex j = i + 1; j < tokens_.size(); ++j) {
    if (significant(tokens_[j].kind)) return j;
  }
  return std::nullopt;
}

std::optional<TokenIndex> Model::prev(TokenIndex i) const {
  for (TokenIndex j = i; j-- > 0;) {
    if (significant(tokens_[j].kind)) return j;
  }
  return std::nullopt;
}

std::uint32_t Model::line_end_offset(std::uint32_t line) const { return lines_[line].end; }

std::uint32_t Model::import_block_end() const {
  std::optional<std::uint32_t> last;
  for (std::uint32_t li = 0; li < lines_.size(); ++li) {
    const Line& l = lines_[li];
    if (l.depth != 0) break;
    TokenKind k0 = kind(l.tokens[0]);
    if (k0 == TokenKind::KwImport || k0 == TokenKind::KwFrom) {
      last = li;
      continue;
    }
    // The module docstring may come first.
    if (li == 0 && k0 == TokenKind::String &&
        std::all_of(l.tokens.begin(), l.tokens.end(),
                    [&](TokenIndex t) { return kind(t) == TokenKind::String; })) {
      last = li;
      continue;
    }
    break;
  }
  if (!last) return 0;
  return line_end_offset(*last);
}

std::optional<std::uint32_t> Model::after_first_torch_import() const {
  for (const Import& im : imports_) {
    if (im.scope != 0 || lines_[im.line].depth != 0) continue;
    if (im.module == "torch" || im.module.starts_with("torch.")) return line_end_offset(im.line);
  }
  return std::nullopt;
}

}  // namespace torchport::semantic
