#include <torchport/semantic/model.h>

#include <algorithm>
#include <cctype>

namespace torchport::semantic {

using syntax::TokenKind;

namespace {

bool significant(TokenKind k) {
  return !syntax::is_trivia(k) && k != TokenKind::Newline && k != TokenKind::Indent &&
         k != TokenKind::Dedent && k != TokenKind::EndMarker;
}

bool is_open(TokenKind k) {
  return k == TokenKind::LPar || k == TokenKind::LSqb || k == TokenKind::LBrace;
}
bool is_close(TokenKind k) {
  return k == TokenKind::RPar || k == TokenKind::RSqb || k == TokenKind::RBrace;
}

}  // namespace

bool is_cuda_device_string(std::string_view s) {
  if (s == "cuda") return true;
  if (s.size() <= 5 || s.substr(0, 5) != "cuda:") return false;
  return std::all_of(s.begin() + 5, s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<StringValue> string_value(std::string_view text, const syntax::Token& tok) {
  if (tok.kind != TokenKind::String) return std::nullopt;
  std::string_view t = tok.text(text);
  std::size_t p = 0;
  while (p < t.size() && t[p] != '"' && t[p] != '\'') ++p;
  if (p == t.size()) return std::nullopt;
  std::string_view prefix = t.substr(0, p);
  for (char c : prefix) {
    if (c == 'b' || c == 'B') return std::nullopt;
  }
  char q = t[p];
  std::size_t qlen = (t.size() >= p + 6 && t[p + 1] == q && t[p + 2] == q) ? 3 : 1;
  if (t.size() < p + 2 * qlen) return std::nullopt;
  std::string_view value = t.substr(p + qlen, t.size() - p - 2 * qlen);
  if (value.find('\\') != std::string_view::npos) return std::nullopt;
  return StringValue{value, static_cast<std::uint32_t>(tok.begin + p + qlen), q, prefix};
}

Model::Model(std::string_view text, std::span<const syntax::Token> tokens)
    : text_(text), tokens_(tokens) {
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
  build_imports_and_bindings();
  build_references();
}

void Model::build_lines() {
  const auto n = static_cast<TokenIndex>(tokens_.size());
  line_of_token_.assign(n, -1);
  match_.assign(n, -1);
  enclosing_.assign(n, -1);
  std::vector<TokenIndex> open;
  std::uint32_t depth = 0;
  Line cur;
  // Each line's tokens are a contiguous run of line_tokens_: [line_start, size()) for the
  // current line. The spans are set once the pool stops growing.
  line_tokens_.reserve(n / 2 + 1);
  std::size_t line_start = 0;
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  lines_.reserve(n / 8 + 1);
  // Scope stack: (depth of the def/class line, scope id, is_class).
  struct Frame {
    std::int64_t depth;
    std::uint32_t scope;
    bool is_class;
  };
  std::vector<Frame> stack{{-1, 0, false}};
  scopes_.push_back(Scope{0, {}, {}});

  auto finish = [&](std::uint32_t end_offset) {
    if (line_tokens_.size() == line_start) return;
    runs.emplace_back(line_start, line_tokens_.size() - line_start);
    const std::span<const TokenIndex> toks(line_tokens_.data() + line_start,
                                           line_tokens_.size() - line_start);
    line_start = line_tokens_.size();
    cur.depth = depth;
    cur.end = end_offset;
    cur.begin = tokens_[toks.front()].begin;
    while (stack.size() > 1 && static_cast<std::int64_t>(depth) <= stack.back().depth) {
      stack.pop_back();
    }
    cur.scope = stack.back().scope;
    const auto idx = static_cast<std::uint32_t>(lines_.size());
    for (TokenIndex t : toks) line_of_token_[t] = static_cast<std::int32_t>(idx);
    // A def/class line opens a scope for the lines indented under it.
    std::size_t k = 0;
    if (k < toks.size() && tokens_[toks[k]].kind == TokenKind::KwAsync) ++k;
    if (k < toks.size()) {
      TokenKind kk = tokens_[toks[k]].kind;
      if (kk == TokenKind::KwDef || kk == TokenKind::KwClass) {
        std::uint32_t parent = cur.scope;
        // Methods do not see the class body's names.
        for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
          if (!it->is_class) {
            parent = it->scope;
            break;
          }
        }
        const auto id = static_cast<std::uint32_t>(scopes_.size());
        scopes_.push_back(Scope{parent, {}, {}});
        stack.push_back(Frame{static_cast<std::int64_t>(depth), id, kk == TokenKind::KwClass});
      }
    }
    lines_.push_back(std::move(cur));
    cur = Line{};
  };

  for (TokenIndex i = 0; i < n; ++i) {
    const TokenKind k = tokens_[i].kind;
    if (!open.empty()) enclosing_[i] = static_cast<std::int32_t>(open.back());
    if (k == TokenKind::Indent) {
      ++depth;
      continue;
    }
    if (k == TokenKind::Dedent) {
      if (depth > 0) --depth;
      continue;
    }
    if (k == TokenKind::Newline || k == TokenKind::EndMarker) {
      finish(tokens_[i].end);
      open.clear();
      continue;
    }
    if (!significant(k)) continue;
    if (is_open(k)) {
      open.push_back(i);
    } else if (is_close(k) && !open.empty()) {
      match_[open.back()] = static_cast<std::int32_t>(i);
      match_[i] = static_cast<std::int32_t>(open.back());
      open.pop_back();
      enclosing_[i] = open.empty() ? -1 : static_cast<std::int32_t>(open.back());
    }
    line_tokens_.push_back(i);
  }
  finish(static_cast<std::uint32_t>(text_.size()));
  for (std::size_t li = 0; li < lines_.size(); ++li)
    lines_[li].tokens = {line_tokens_.data() + runs[li].first, runs[li].second};
}

void Model::bind(std::uint32_t scope, std::string_view name, Binding b) {
  // Small scopes are searched linearly; from kIndexFrom names on, through an index.
  constexpr std::size_t kIndexFrom = 16;
  Scope& sc = scopes_[scope];
  sc.names.emplace_back(name, std::move(b));
  if (sc.index.empty() && sc.names.size() < kIndexFrom) return;
  const auto first =
      sc.index.empty() ? std::uint32_t{0} : static_cast<std::uint32_t>(sc.names.size() - 1);
  for (auto idx = first; idx < sc.names.size(); ++idx) {
    auto [it, inserted] = sc.index.try_emplace(sc.names[idx].first, Scope::Merged{idx});
    if (inserted) continue;
    // The same steps as Merge::add, on indexes (`names` may move as it grows).
    Scope::Merged& m = it->second;
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
  for (std::uint32_t s = scope;; s = scopes_[s].parent) {
    const Scope& sc = scopes_[s];
    Merge m;
    if (sc.index.empty()) {
      for (const auto& [n, b] : sc.names)
        if (n == name) m.add(b);
    } else if (auto it = sc.index.find(name); it != sc.index.end()) {
      const Scope::Merged& x = it->second;
      return x.conflict ? &kConflict : x.device ? &kMergedDevice : &sc.names[x.first].second;
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

// Reads a dotted name starting at position p of `toks` (significant token indexes).
std::string dotted(const Model& m, std::span<const TokenIndex> toks, std::size_t& p) {
  std::string out;
  while (p < toks.size()) {
    TokenKind k = m.kind(toks[p]);
    if (k == TokenKind::Dot) {
      out += '.';
      ++p;
    } else if (k == TokenKind::Ellipsis) {
      out += "...";
      ++p;
    } else if (k == TokenKind::Name && (out.empty() || out.back() == '.')) {
      out += m.token_text(toks[p]);
      ++p;
    } else {
      break;
    }
  }
  return out;
}

}  // namespace

void Model::build_imports_and_bindings() {
  for (std::uint32_t li = 0; li < lines_.size(); ++li) {
    const Line& line = lines_[li];
    const auto& t = line.tokens;
    const std::uint32_t scope = line.scope;
    std::size_t p = 0;
    TokenKind k0 = kind(t[0]);
    if (k0 == TokenKind::KwImport) {
      p = 1;
      while (p < t.size()) {
        Import im;
        im.kind = ImportKind::Import;
        im.line = li;
        im.scope = scope;
        im.item_begin = t[p];
        im.module_begin = t[p];
        std::size_t mstart = p;
        im.module = dotted(*this, t, p);
        im.module_end = p > mstart ? t[p - 1] + 1 : t[p];
        // The bound name, as a view of the text: the `as` name, else the module's first name
        // ("" for a module path that starts with dots).
        std::string_view bound;
        if (p < t.size() && kind(t[p]) == TokenKind::KwAs && p + 1 < t.size()) {
          bound = token_text(t[p + 1]);
          im.bound = std::string(bound);
          im.target = im.module;
          p += 2;
        } else {
          im.bound = im.module.substr(0, im.module.find('.'));
          im.target = im.bound;
          if (!im.bound.empty()) bound = token_text(t[mstart]);
        }
        im.item_end = t[p - 1] + 1;
        if (!im.module.empty()) {
          bind(scope, bound, Binding{Binding::Kind::Qualified, im.target});
          imports_.push_back(std::move(im));
        }
        while (p < t.size() && kind(t[p]) != TokenKind::Comma) ++p;
        ++p;
      }
      continue;
    }
    if (k0 == TokenKind::KwFrom) {
      p = 1;
      std::size_t mstart = p;
      std::string module = dotted(*this, t, p);
      TokenIndex mb = t[mstart];
      TokenIndex me = p > mstart ? t[p - 1] + 1 : mb;
      if (p >= t.size() || kind(t[p]) != TokenKind::KwImport) continue;
      ++p;
      while (p < t.size()) {
        TokenKind k = kind(t[p]);
        if (k == TokenKind::LPar || k == TokenKind::RPar || k == TokenKind::Comma) {
          ++p;
          continue;
        }
        if (k != TokenKind::Name) break;  // `*` or garbage: nothing is bound
        Import im;
        im.kind = ImportKind::From;
        im.line = li;
        im.scope = scope;
        im.module = module;
        im.module_begin = mb;
        im.module_end = me;
        im.item_begin = t[p];
        std::string_view bound = token_text(t[p]);
        im.name = std::string(bound);
        ++p;
        if (p + 1 < t.size() && kind(t[p]) == TokenKind::KwAs) {
          bound = token_text(t[p + 1]);
          p += 2;
        }
        im.bound = std::string(bound);
        im.item_end = t[p - 1] + 1;
        im.target = module + "." + im.name;
        bind(scope, bound, Binding{Binding::Kind::Qualified, im.target});
        imports_.push_back(std::move(im));
      }
      continue;
    }
    // def / class names and parameters.
    std::size_t k = (k0 == TokenKind::KwAsync) ? 1 : 0;
    if (k < t.size() && (kind(t[k]) == TokenKind::KwDef || kind(t[k]) == TokenKind::KwClass)) {
      if (k + 1 < t.size() && kind(t[k + 1]) == TokenKind::Name) {
        bind(scope, token_text(t[k + 1]), Binding{});
      }
      if (kind(t[k]) == TokenKind::KwDef && k + 2 < t.size() && kind(t[k + 2]) == TokenKind::LPar) {
        // The new scope is the one created for this line: the next scope id after those of
        // earlier lines. Find it as the scope of the first line indented under this one.
        std::uint32_t inner = scope;
        for (std::uint32_t lj = li + 1; lj < lines_.size(); ++lj) {
          if (lines_[lj].depth <= line.depth) break;
          inner = lines_[lj].scope;
          break;
        }
        auto close = match(t[k + 2]);
        for (std::size_t q = k + 3; q < t.size() && (!close || t[q] < *close); ++q) {
          if (kind(t[q]) != TokenKind::Name) continue;
          auto en = enclosing_open(t[q]);
          if (!en || *en != t[k + 2]) continue;
          TokenKind before = kind(t[q - 1]);
          if (before == TokenKind::LPar || before == TokenKind::Comma ||
              before == TokenKind::Star || before == TokenKind::DoubleStar) {
            if (inner != scope) bind(inner, token_text(t[q]), Binding{});
          }
        }
      }
      continue;
    }
    // for NAME[, NAME] in ...
    if (k0 == TokenKind::KwFor) {
      for (std::size_t q = 1; q < t.size() && kind(t[q]) != TokenKind::KwIn; ++q) {
        if (kind(t[q]) == TokenKind::Name) bind(scope, token_text(t[q]), Binding{});
      }
      continue;
    }
    // with ... as NAME / except ... as NAME
    for (std::size_t q = 0; q + 1 < t.size(); ++q) {
      if (kind(t[q]) == TokenKind::KwAs && kind(t[q + 1]) == TokenKind::Name &&
          !enclosing_open(t[q])) {
        bind(scope, token_text(t[q + 1]), Binding{});
      }
    }
    // Assignments: targets are the names before the top-level `=` signs.
    std::vector<std::size_t> eqs;
    for (std::size_t q = 0; q < t.size(); ++q) {
      if (kind(t[q]) == TokenKind::Equal && !enclosing_open(t[q])) eqs.push_back(q);
    }
    if (eqs.empty()) continue;
    const std::size_t rhs = eqs.back() + 1;
    // Classify the value.
    Binding value{};
    bool from_string = false;
    if (rhs < t.size()) {
      std::size_t q = rhs;
      if (kind(t[q]) == TokenKind::Name) {
        std::string chain = dotted(*this, t, q);
        auto head = chain.substr(0, chain.find('.'));
        const Binding* b = find_binding(head, scope);
        if (q == t.size() && b && b->kind == Binding::Kind::Qualified) {
          value = Binding{Binding::Kind::Qualified, b->target + chain.substr(head.size())};
        } else if (q == t.size() && b && b->kind == Binding::Kind::Device) {
          value = Binding{Binding::Kind::Device, {}};
        } else if (q < t.size() && kind(t[q]) == TokenKind::LPar && b &&
                   b->kind == Binding::Kind::Qualified &&
                   b->target + chain.substr(head.size()) == "torch.device") {
          value = Binding{Binding::Kind::Device, {}};
        }
      }
      if (value.kind == Binding::Kind::Other) {
        from_string = true;
        // A device string anywhere at the top level of the value: "cuda", f"cuda:{i}",
        // "cuda" if cond else "cpu".
        for (std::size_t r = rhs; r < t.size(); ++r) {
          if (enclosing_open(t[r]) &&
              (rhs >= t.size() || enclosing_open(t[r]) != enclosing_open(t[rhs]))) {
            continue;
          }
          if (auto sv = string_value(text_, tokens_[t[r]]);
              sv && is_cuda_device_string(sv->value)) {
            value = Binding{Binding::Kind::Device, {}};
          }
          if (kind(t[r]) == TokenKind::FStringStart && r + 1 < t.size() &&
              kind(t[r + 1]) == TokenKind::FStringMiddle &&
              token_text(t[r + 1]).substr(0, 5) == "cuda:") {
            value = Binding{Binding::Kind::Device, {}};
          }
        }
      }
    }
    // A device string makes a device variable only under a device-like name (`device`,
    // `dev`, `train_device`, `DEVICE`): `name = "cuda"` is just a string.
    auto device_like = [](std::string_view n) {
      std::string lower(n);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return lower.find("device") != std::string::npos || lower == "dev" ||
             lower.ends_with("_dev") || lower.starts_with("dev_");
    };
    for (std::size_t e = 0; e < eqs.size(); ++e) {
      const std::size_t from = e == 0 ? 0 : eqs[e - 1] + 1;
      const std::size_t to = eqs[e];
      // A single name (optionally annotated: `x: T = v`) gets the value; tuple targets and
      // attribute/subscript targets bind their names as Other.
      if (to - from >= 1 && kind(t[from]) == TokenKind::Name &&
          (to - from == 1 || kind(t[from + 1]) == TokenKind::Colon)) {
        Binding v = value;
        if (v.kind == Binding::Kind::Device && from_string && !device_like(token_text(t[from]))) {
          v = Binding{};
        }
        bind(scope, token_text(t[from]), v);
        continue;
      }
      for (std::size_t q = from; q < to; ++q) {
        if (kind(t[q]) == TokenKind::Name && !enclosing_open(t[q]) &&
            (q == from || kind(t[q - 1]) == TokenKind::Comma) &&
            (q + 1 == to || kind(t[q + 1]) == TokenKind::Comma)) {
          bind(scope, token_text(t[q]), Binding{});
        }
      }
    }
  }
}

void Model::build_references() {
  reference_of_token_.assign(tokens_.size(), -1);
  references_.reserve(tokens_.size() / 8 + 1);
  // A name token is in at most one reference: with this capacity the pool never moves, so the
  // references' spans stay valid.
  name_tokens_.reserve(line_tokens_.size());
  for (std::uint32_t li = 0; li < lines_.size(); ++li) {
    const auto& t = lines_[li].tokens;
    TokenKind k0 = kind(t[0]);
    if (k0 == TokenKind::KwImport || k0 == TokenKind::KwFrom) continue;
    const std::size_t kd = k0 == TokenKind::KwAsync ? 1 : 0;
    const bool is_def =
        kd + 2 < t.size() && kind(t[kd]) == TokenKind::KwDef && kind(t[kd + 2]) == TokenKind::LPar;
    const TokenIndex def_paren = is_def ? t[kd + 2] : 0;
    for (std::size_t p = 0; p < t.size(); ++p) {
      if (kind(t[p]) != TokenKind::Name) continue;
      if (p > 0) {
        TokenKind before = kind(t[p - 1]);
        if (before == TokenKind::Dot || before == TokenKind::KwDef ||
            before == TokenKind::KwClass) {
          continue;
        }
      }
      // A parameter name of a def is not a use (its annotation and default are).
      if (is_def && p > 0 && enclosing_open(t[p]) && *enclosing_open(t[p]) == def_paren) {
        const TokenKind before = kind(t[p - 1]);
        if (before == TokenKind::LPar || before == TokenKind::Comma || before == TokenKind::Star ||
            before == TokenKind::DoubleStar) {
          continue;
        }
      }
      // A keyword argument name `f(name=...)` is not a reference.
      if (p + 1 < t.size() && kind(t[p + 1]) == TokenKind::Equal && enclosing_open(t[p]) &&
          kind(*enclosing_open(t[p])) == TokenKind::LPar) {
        continue;
      }
      // A plain name being bound (`x = ...`, `x: T = ...`) is not a use.
      if (p == 0 && t.size() > 1 &&
          (kind(t[1]) == TokenKind::Equal || kind(t[1]) == TokenKind::Colon)) {
        continue;
      }
      std::size_t q = p;
      while (q + 2 < t.size() && kind(t[q + 1]) == TokenKind::Dot &&
             kind(t[q + 2]) == TokenKind::Name) {
        q += 2;
      }
      Reference ref;
      ref.first = t[p];
      ref.line = li;
      const std::size_t names_at = name_tokens_.size();
      for (std::size_t r = p; r <= q; r += 2) name_tokens_.push_back(t[r]);
      ref.names = {name_tokens_.data() + names_at, name_tokens_.size() - names_at};
      ref.last = t[q];
      const Binding* b = find_binding(token_text(t[p]), lines_[li].scope);
      if (b && b->kind == Binding::Kind::Qualified) {
        std::size_t size = b->target.size();
        for (std::size_t r = 1; r < ref.names.size(); ++r) size += 1 + tokens_[ref.names[r]].size();
        ref.qualified.reserve(size);
        ref.qualified = b->target;
        for (std::size_t r = 1; r < ref.names.size(); ++r) {
          ref.qualified += '.';
          ref.qualified += token_text(ref.names[r]);
        }
      }
      const auto idx = static_cast<std::int32_t>(references_.size());
      for (TokenIndex n : ref.names) reference_of_token_[n] = idx;
      references_.push_back(std::move(ref));
      p = q;
    }
  }
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
