// Rule family TP310: the device-selection idiom of a script's command line, ported as one unit.
//
// What it does (non-host targets, unless --keep-device-flags):
//   The argparse flag that switches CUDA on or off (`--cuda`, `--use-cuda`, `--no-cuda`,
//   `--disable-cuda`, also with `_`) becomes the target's flag: `--accel` / `--no-accel` for
//   accelerator, `--npu` / `--no-npu` for npu, and so on. The old flag stays, as a deprecated
//   alias of the new one (its help says so), so command lines and launch scripts keep working.
//   Every read of the flag's dest (`args.no_cuda`) reads the new dest; the names the script
//   derives from it (`use_cuda`, `cuda_kwargs`: a `cuda` part in the name, bound once in the
//   file) are renamed (`use_accel`, `accel_kwargs`); the flag's help and the messages that name
//   the flag say the target's word instead of CUDA.
//   For accelerator, the vendor-only flags the new idiom covers (`--mps`, `--no-mps`, `--xpu`,
//   `--no-xpu`, of the same polarity) are folded in: they become aliases too, and the statements
//   that only served them go (`use_mps = not args.no_mps and ...`, an `elif use_mps:` branch,
//   an `if <available>: if not args.mps: print(...)` warning). torch.accelerator picks MPS or
//   XPU by itself. For mps and xpu, the target's own flag of the same polarity (`--no-mps` next
//   to `--no-cuda`) is folded into the ported flag the same way (`--no-cuda` becomes a deprecated
//   alias of `--no-mps`; `use_mps = ...` and the `elif use_mps:` branch go): left as it was,
//   `--no-mps` alone would no longer turn the MPS off, since the CUDA branch now selects it too.
// Why:
//   After the device rules, `--cuda` silently means "any accelerator" and the `--mps` branch is
//   dead code. Maintainers who ported their examples to torch.accelerator replaced the block
//   with one --accel / --no-accel flag and use_accel (issue 19).
// Example (accelerator):
//   parser.add_argument("--no-cuda", action="store_true", default=False, help="disables CUDA
//   training") use_cuda = not args.no_cuda and torch.accelerator.is_available()
// Becomes:
//   parser.add_argument("--no-accel", action="store_true", default=False, help="disables
//   accelerator training") parser.add_argument("--no-cuda", dest="no_accel", action="store_true",
//   help="deprecated alias of --no-accel") use_accel = not args.no_accel and
//   torch.accelerator.is_available()
// Safety:
//   It runs on the output of the other rules (the driver's second pass), so it only renames and
//   deletes whole statements. Nothing is done unless the whole unit is understood: one flag
//   definition with action="store_true", no other spelling of its dest (getattr, a string), no
//   clash with a name the file already uses; a CUDA flag left as it is gets an UNKNOWN row with the
//   reason (it now switches the target's device). A derived name bound more than once, or a folded
//   flag used anywhere else, is left as it is. The row is labelled: the command line changes
//   (the old flags still work).
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/context.h>
#include <torchport/syntax/tree.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

namespace torchport::rules {

namespace {

/// TP310 (device-flags): the command line's --cuda/--no-cuda flag, use_cuda and cuda_kwargs ported
/// as one unit to the target's idiom (--accel, use_accel; old flags kept as deprecated aliases).
/// Its one producer: every TP310 finding is made here.
Finding tp310(Draft d) { return finding("TP310", std::move(d)); }

}  // namespace

using syntax::Node;
using syntax::NodeKind;
using syntax::Role;
using syntax::TokenKind;

namespace {

struct Flag {
  const Node* stmt = nullptr;  ///< the Expr statement
  const Node* opt = nullptr;   ///< the option string
  std::string option;          ///< "--no-cuda"
  std::string dest;            ///< "no_cuda"
  std::string device;          ///< "cuda", "mps", "xpu"
  bool negative = false;
  std::string parser;   ///< the source of the parser expression ("parser")
  std::string refused;  ///< why it cannot be ported ("" = it can)
};

/// "cuda"/"mps"/"xpu" and the polarity of a device flag's option ("--no-cuda"), or "".
std::pair<std::string, bool> device_of(std::string_view option) {
  if (!option.starts_with("--")) return {};
  std::string norm(option.substr(2));
  std::replace(norm.begin(), norm.end(), '_', '-');
  for (std::string_view dev : {"cuda", "mps", "xpu"}) {
    const std::string d(dev);
    if (norm == d || norm == "use-" + d) return {d, false};
    if (norm == "no-" + d || norm == "disable-" + d) return {d, true};
  }
  return {};
}

/// `<p>.add_argument("--no-cuda", action="store_true", ...)`: a device flag, with `refused` set
/// when it is not one this rule can port (another action or type, a dest of its own, ...).
/// nullopt when the call defines no device flag.
std::optional<Flag> device_flag(const syntax::Tree& t, const Node* call) {
  const Node* f = call->func();
  if (!f || f->kind() != NodeKind::Attribute || t.name(*f) != "add_argument") return {};
  Flag fl;
  int options = 0;
  for (const Node* a : call->args()) {
    if (a->kind() != NodeKind::Constant || !t.is_string(*a)) continue;
    std::optional<std::string> s = t.string_value(*a);
    if (!s || !s->starts_with("-")) continue;
    ++options;
    auto [dev, negative] = device_of(*s);
    if (!dev.empty() && fl.device.empty()) {
      fl.device = dev;
      fl.negative = negative;
      fl.option = *s;
      fl.opt = a;
    }
  }
  if (fl.device.empty()) return {};
  fl.dest = flow::option_dest(fl.option);
  fl.stmt = call;
  auto refuse = [&](std::string why) {
    fl.refused = std::move(why);
    return fl;
  };
  const Node* stmt = call->parent();
  if (!stmt || stmt->kind() != NodeKind::Expr || call->role() != Role::Value)
    return refuse("the call is not a statement of its own");
  if (options != 1 || call->args().size() != 1) return refuse("it has more than one option string");
  if (fl.opt->first_token() != fl.opt->last_token())
    return refuse("its option is a concatenated string");
  bool store_true = false;
  for (const Node* k : call->keywords()) {
    std::string_view kw = t.name(*k);
    const Node* v = k->value();
    std::optional<std::string> sv =
        v && v->kind() == NodeKind::Constant && t.is_string(*v) ? t.string_value(*v) : std::nullopt;
    if (kw == "action") {
      store_true = sv && *sv == "store_true";
    } else if (kw == "dest") {
      if (!sv || *sv != fl.dest) return refuse("it has a dest of its own");
    } else if (kw == "default") {
      if (!v) return refuse("its default is not False");
      auto [vb, ve] = t.byte_range(*v);
      if (t.text().substr(vb, ve - vb) != "False") return refuse("its default is not False");
    } else if (kw != "help") {
      return refuse("it has " + (kw.empty() ? std::string("**kwargs") : std::string(kw) + "=") +
                    ", not only action=\"store_true\"");
    }
  }
  if (!store_true) return refuse("it is not action=\"store_true\"");
  fl.stmt = stmt;
  auto [pb, pe] = t.byte_range(*f->value());
  fl.parser = std::string(t.text().substr(pb, pe - pb));
  return fl;
}

/// "use_cuda" -> "use_accel": the `cuda` part of a snake_case name replaced; "" if none.
std::string renamed(std::string_view name, std::string_view word) {
  std::string out;
  bool hit = false;
  std::size_t i = 0;
  while (i <= name.size()) {
    std::size_t j = name.find('_', i);
    if (j == std::string_view::npos) j = name.size();
    std::string_view part = name.substr(i, j - i);
    if (part == "cuda") {
      out += word;
      hit = true;
    } else {
      out += part;
    }
    if (j < name.size()) out += '_';
    i = j + 1;
  }
  return hit ? out : std::string();
}

bool contains(const Node* outer, const Node* inner) {
  for (const Node* p = inner; p; p = p->parent())
    if (p == outer) return true;
  return false;
}

class Porter {
 public:
  Porter(const syntax::Tree& t, const semantic::Model& m, const catalogue::Target& target)
      : t_(t), m_(m), accel_(target.runtime_device()) {
    word_ = accel_ ? "accel" : target.device;
    if (accel_) {
      display_ = target.name;  // the device-agnostic target: "accelerator"
    } else {
      for (char c : target.device)
        display_ += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }

  std::vector<Finding> run();

 private:
  using OptWords = std::vector<std::pair<std::string, std::string>>;
  /// The deprecated alias of the old flags, after the flag's statement.
  fix::Edit alias_line(const Flag& fl, const std::vector<std::string>& aliases,
                       const std::string& new_option, const std::string& new_dest) const;
  /// Derived names: a `cuda` part, bound once, from the flag (`reads`) or inside a branch on it.
  void rename_derived(const std::vector<const Node*>& reads, std::vector<fix::Edit>& edits,
                      std::vector<std::string>& notes) const;
  /// Strings that name the flag, and the flag's help.
  void reword_strings(const Flag& fl, const OptWords& opt_words,
                      std::vector<fix::Edit>& edits) const;
  /// The TP310 finding: the flag ported, with its notes and edits.
  Finding ported(const Flag& fl, const std::string& new_option,
                 const std::vector<std::string>& notes, std::vector<fix::Edit> edits) const;
  std::uint32_t line_start(std::uint32_t o) const {
    while (o > 0 && t_.text()[o - 1] != '\n' && t_.text()[o - 1] != '\r') --o;
    return o;
  }
  std::uint32_t line_end(std::uint32_t o) const {  // after the line break
    std::string_view s = t_.text();
    while (o < s.size() && s[o] != '\n' && s[o] != '\r') ++o;
    if (o < s.size() && s[o] == '\r') ++o;
    if (o < s.size() && s[o] == '\n') ++o;
    return o;
  }
  /// Whole lines of a statement alone on them (nothing but blanks or a comment around it).
  std::optional<std::pair<std::uint32_t, std::uint32_t>> whole_lines(const Node* n) const {
    auto [b, e] = t_.byte_range(*n);
    std::uint32_t lb = line_start(b), le = line_end(e);
    std::string_view before = t_.text().substr(lb, b - lb);
    if (before.find_first_not_of(" \t") != std::string_view::npos) return {};
    std::string_view after = t_.text().substr(e, le - e);
    std::size_t k = after.find_first_not_of(" \t\r\n");
    if (k != std::string_view::npos && after[k] != '#') return {};
    return std::pair{lb, le};
  }
  std::string_view src(const Node* n) const {
    auto [b, e] = t_.byte_range(*n);
    return t_.text().substr(b, e - b);
  }
  /// Store-context occurrences of an identifier in the file.
  int bindings(std::string_view id) const {
    int n = 0;
    for (std::uint32_t i = 0; i < t_.tokens().size(); ++i)
      if (t_.tokens()[i].kind == TokenKind::Name && t_.token_text(i) == id && m_.is_store(i)) ++n;
    return n;
  }
  /// `id` is a name somewhere in the file outside the byte ranges `gone` (statements that go).
  bool identifier_used(std::string_view id, const std::vector<fix::Edit>& gone = {}) const {
    for (std::uint32_t i = 0; i < t_.tokens().size(); ++i) {
      if (t_.tokens()[i].kind != TokenKind::Name || t_.token_text(i) != id) continue;
      const std::uint32_t at = t_.tokens()[i].begin;
      if (std::none_of(gone.begin(), gone.end(), [&](const fix::Edit& e) {
            return e.replacement.empty() && at >= e.begin && at < e.end;
          }))
        return true;
    }
    return false;
  }
  /// Attribute reads `<ns>.<dest>`, where <ns> is a name the file binds to parse_args().
  std::vector<const Node*> dest_reads(std::string_view dest) const {
    std::vector<const Node*> out;
    for (const Node* a : t_.find_all(NodeKind::Attribute))
      if (t_.name(*a) == dest && a->value() && a->value()->kind() == NodeKind::Name &&
          namespaces_.count(std::string(t_.name(*a->value()))))
        out.push_back(a);
    return out;
  }
  /// The dest spelled as a string where argparse's namespace is reached another way
  /// (getattr(args, "no_cuda"), vars(args)["no_cuda"]), or assigned.
  bool dest_spelled_elsewhere(const Flag& f) const {
    for (const Node* c : t_.find_all(NodeKind::Constant)) {
      if (c == f.opt || !t_.is_string(*c)) continue;
      std::optional<std::string> v = t_.string_value(*c);
      if (!v || *v != f.dest) continue;
      const Node* p = c->parent();
      if (!p) continue;
      if (p->kind() == NodeKind::Subscript) return true;
      if (p->kind() == NodeKind::Call && p->func() && p->func()->kind() == NodeKind::Name) {
        std::string_view fn = t_.name(*p->func());
        if (fn == "getattr" || fn == "setattr" || fn == "hasattr" || fn == "delattr") return true;
      }
    }
    for (const Node* a : t_.find_all(NodeKind::Attribute))
      if (t_.name(*a) == f.dest && m_.is_store(a->token())) return true;
    return false;
  }
  /// The names bound to the parsed flags: `args = parser.parse_args()`, `args, _ =
  /// parser.parse_known_args()`, and `opt = get_args()` where get_args (a function of this file)
  /// returns parse_args() or a name bound to it.
  void find_namespaces() {
    std::set<std::string> parsers;  // functions of the file that return the parsed flags
    auto parsed = [&](const Node* v) {
      if (!v || v->kind() != NodeKind::Call || !v->func()) return false;
      const Node* fn = v->func();
      if (fn->kind() == NodeKind::Attribute)
        return t_.name(*fn) == "parse_args" || t_.name(*fn) == "parse_known_args";
      return fn->kind() == NodeKind::Name && parsers.count(std::string(t_.name(*fn))) > 0;
    };
    for (int pass = 0; pass < 3; ++pass) {
      for (const Node* a : t_.find_all(NodeKind::Assign)) {
        if (a->targets().size() != 1 || !parsed(a->value())) continue;
        const Node* target = *a->targets().begin();
        if (target->kind() == NodeKind::Tuple && !target->elts().empty())
          target = *target->elts().begin();  // args, unknown = parser.parse_known_args()
        if (target->kind() == NodeKind::Name) namespaces_.insert(std::string(t_.name(*target)));
      }
      for (const Node* r : t_.find_all(NodeKind::Return)) {
        const Node* v = r->value();
        bool returns = parsed(v) || (v && v->kind() == NodeKind::Name &&
                                     namespaces_.count(std::string(t_.name(*v))) > 0);
        const Node* fn = r->parent();
        while (fn && fn->kind() != NodeKind::FunctionDef) fn = fn->parent();
        if (returns && fn) parsers.insert(std::string(t_.name(*fn)));
      }
    }
  }
  std::string article(std::string_view w) const {
    if (w.size() <= 3)
      return std::string_view("AEFHILMNORSX").find(w.front()) != std::string_view::npos ? "an"
                                                                                        : "a";
    return std::string_view("aeiouAEIOU").find(w.front()) != std::string_view::npos ? "an" : "a";
  }
  /// A string token's text with the old options and CUDA replaced.
  std::string reword(std::string_view s,
                     const std::vector<std::pair<std::string, std::string>>& opts) const;
  bool fold(const Flag& f, std::vector<fix::Edit>& edits, std::vector<std::string>& notes);

  const syntax::Tree& t_;
  const semantic::Model& m_;
  bool accel_;
  std::string word_, display_;
  std::set<std::string> namespaces_;  ///< names bound to parse_args(): "args"
};

std::string Porter::reword(std::string_view s,
                           const std::vector<std::pair<std::string, std::string>>& opts) const {
  std::string out(s);
  auto replace_all = [&](std::string_view from, std::string_view to, bool whole_option) {
    std::size_t p = 0;
    while ((p = out.find(from, p)) != std::string::npos) {
      std::size_t q = p + from.size();
      bool ok = true;
      if (whole_option && q < out.size() &&
          (std::isalnum(static_cast<unsigned char>(out[q])) || out[q] == '-' || out[q] == '_'))
        ok = false;
      if (ok) {
        out.replace(p, from.size(), to);
        p += to.size();
      } else {
        p = q;
      }
    }
  };
  for (const auto& [from, to] : opts) replace_all(from, to, true);
  replace_all("a CUDA ", article(display_) + " " + display_ + " ", false);
  replace_all("A CUDA ",
              std::string(1, static_cast<char>(std::toupper(article(display_)[0]))) +
                  article(display_).substr(1) + " " + display_ + " ",
              false);
  replace_all("CUDA", display_, false);
  // "enables cuda": the lower-case word, whole.
  std::string lower;
  for (char c : display_) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t p = out.find("cuda"); p != std::string::npos; p = out.find("cuda", p)) {
    auto word_char = [&](std::size_t i) {
      return std::isalnum(static_cast<unsigned char>(out[i])) || out[i] == '_' || out[i] == '-';
    };
    if ((p > 0 && word_char(p - 1)) || (p + 4 < out.size() && word_char(p + 4))) {
      p += 4;
      continue;
    }
    out.replace(p, 4, lower);
    p += lower.size();
  }
  return out;
}

/// Folds a vendor flag the accelerator idiom covers: its statements go, or nothing happens.
bool Porter::fold(const Flag& f, std::vector<fix::Edit>& edits, std::vector<std::string>& notes) {
  if (dest_spelled_elsewhere(f)) return false;
  std::vector<fix::Edit> mine;
  std::set<const Node*> removed;
  auto remove_stmt = [&](const Node* s) {
    if (removed.count(s)) return true;
    auto r = whole_lines(s);
    if (!r) return false;
    removed.insert(s);
    mine.push_back({r->first, r->second, ""});
    return true;
  };
  // An `elif <test>:` clause removed up to the next clause.
  auto remove_elif = [&](const Node* e) {
    if (removed.count(e)) return true;
    if (e->kind() != NodeKind::If || e->role() != Role::OrElse ||
        t_.tokens()[e->first_token()].kind != TokenKind::KwElif)
      return false;
    std::uint32_t b = line_start(t_.tokens()[e->first_token()].begin);
    std::uint32_t end;
    if (e->orelse().empty()) {
      end = line_end(t_.byte_range(*e).end);
    } else {
      const Node* o = *e->orelse().begin();
      std::uint32_t k = o->first_token();
      if (t_.tokens()[k].kind != TokenKind::KwElif) {
        while (k > 0 && t_.tokens()[k].kind != TokenKind::KwElse) --k;
      }
      end = line_start(t_.tokens()[k].begin);
    }
    removed.insert(e);
    mine.push_back({b, end, ""});
    return true;
  };
  // `use_mps = not args.no_mps and torch.backends.mps.is_available()`
  std::vector<std::string> vars;
  std::vector<const Node*> reads = dest_reads(f.dest);
  for (const Node* r : reads) {
    const Node* s = r;
    while (s && !syntax::is_statement(s->kind())) s = s->parent();
    if (s && s->kind() == NodeKind::Assign && s->targets().size() == 1 &&
        (*s->targets().begin())->kind() == NodeKind::Name) {
      std::string_view v = t_.name(**s->targets().begin());
      if (bindings(v) != 1) return false;
      if (!remove_stmt(s)) return false;
      vars.emplace_back(v);
      continue;
    }
    // `elif args.mps:`
    if (r->role() == Role::Test && r->parent() && remove_elif(r->parent())) continue;
    // A warning: `if <available> and not args.mps: print(...)`, or the same as two nested ifs.
    const Node* warn = r;
    while (warn && warn->kind() != NodeKind::If) warn = warn->parent();
    auto only_calls = [](const Node* i) {
      return std::all_of(i->body().begin(), i->body().end(),
                         [](const Node* b) { return b->kind() == NodeKind::Expr; });
    };
    if (warn && contains(warn->test(), r) && warn->orelse().empty() && only_calls(warn) &&
        t_.tokens()[warn->first_token()].kind == TokenKind::KwIf) {
      const Node* outer = warn->parent();
      if (outer && outer->kind() == NodeKind::If && outer->orelse().empty() &&
          outer->body().size() == 1 && *outer->body().begin() == warn &&
          t_.tokens()[outer->first_token()].kind == TokenKind::KwIf)
        warn = outer;
      if (!remove_stmt(warn)) return false;
      continue;
    }
    return false;
  }
  for (const std::string& v : vars) {
    for (const Node* n : t_.find_all(NodeKind::Name)) {
      if (t_.name(*n) != v || m_.is_store(n->token())) continue;
      bool inside = false;
      for (const Node* s : removed) inside = inside || contains(s, n);
      if (inside) continue;
      if (n->role() == Role::Test && n->parent() && remove_elif(n->parent())) continue;
      return false;
    }
  }
  if (!remove_stmt(f.stmt)) return false;
  edits.insert(edits.end(), mine.begin(), mine.end());
  notes.push_back(f.option + " folded in (" + std::to_string(mine.size() - 1) +
                  " statement(s) or branch(es) that only served it removed)");
  return true;
}

std::vector<Finding> Porter::run() {
  std::vector<Flag> flags, refused;
  for (const Node* c : t_.find_all(NodeKind::Call))
    if (std::optional<Flag> f = device_flag(t_, c))
      (f->refused.empty() ? flags : refused).push_back(std::move(*f));
  // A CUDA flag left as it is now switches the target's device: said, never silent.
  std::vector<Finding> kept;
  auto keep = [&](const Flag& f, std::string_view why) {
    Draft k;
    k.op = Operation::Unknown;
    k.api = f.option;
    k.message = "the command line keeps " + f.option + " as it is (" + std::string(why) +
                "): it now switches the " + display_ + "; rename it by hand if its name matters";
    auto [b, e] = t_.byte_range(*f.stmt);
    k.begin = b;
    k.end = e;
    kept.push_back(tp310(std::move(k)));
  };
  for (const Flag& f : refused)
    if (f.device == "cuda") keep(f, f.refused);
  find_namespaces();
  std::vector<const Flag*> cuda;
  for (const Flag& f : flags)
    if (f.device == "cuda") cuda.push_back(&f);
  if (cuda.empty()) return kept;
  if (cuda.size() + kept.size() > 1) {
    for (const Flag* f : cuda) keep(*f, "the file defines more than one CUDA flag");
    return kept;
  }
  const Flag& fl = *cuda.front();
  if (namespaces_.empty()) {
    keep(fl, "no `args = parser.parse_args()` binds the parsed flags in this file");
    return kept;
  }
  if (dest_spelled_elsewhere(fl)) {
    keep(fl, "its dest is also reached by name (getattr, a subscript) or assigned");
    return kept;
  }
  const std::string new_option = [&] {
    std::string o = fl.option;
    std::size_t p = o.rfind("cuda");
    return o.replace(p, 4, word_);
  }();
  const std::string new_dest = flow::option_dest(new_option);
  std::vector<fix::Edit> edits;
  std::vector<std::string> notes;
  // The target's own flag of the same polarity (`--no-mps` for mps, next to `--no-cuda`): folded
  // into the ported CUDA flag, so that one flag switches the device, as before (left as it was,
  // `--no-mps` alone would no longer turn the MPS off: the CUDA branch now selects it too).
  const Flag* own = nullptr;
  if (!accel_)
    for (const Flag& f : flags)
      if (f.device == word_ && f.negative == fl.negative) own = &f;
  std::vector<std::string> own_notes;
  const bool folded_own = own && fold(*own, edits, own_notes);
  auto gone = [&](const Node* n) {
    const std::uint32_t at = t_.byte_range(*n).begin;
    return std::any_of(edits.begin(), edits.end(), [&](const fix::Edit& e) {
      return e.replacement.empty() && at >= e.begin && at < e.end;
    });
  };
  bool clash = new_dest == fl.dest;
  for (const Node* r : dest_reads(new_dest)) clash = clash || !gone(r);
  for (const Flag& f : flags)
    clash = clash || (f.option == new_option && !(folded_own && &f == own));
  if (clash) {
    if (own && !folded_own)
      keep(fl, new_option + " or args." + new_dest + " is already used; " + own->option +
                   " alone no longer turns the " + display_ +
                   " off: the CUDA branch selects it "
                   "too");
    else
      keep(fl, new_option + " or args." + new_dest + " is already used");
    return kept;
  }

  const char quote = t_.token_text(fl.opt->first_token()).back();
  auto quoted = [&](std::string_view s) { return std::string(1, quote) + std::string(s) + quote; };
  // The flag itself, and its reads.
  auto [ob, oe] = t_.byte_range(*fl.opt);
  edits.push_back({ob, oe, quoted(new_option)});
  std::vector<const Node*> reads = dest_reads(fl.dest);
  for (const Node* r : reads) {
    std::uint32_t tok = r->token();
    edits.push_back({t_.tokens()[tok].begin, t_.tokens()[tok].end, new_dest});
  }
  notes.push_back(fl.option + " is now " + new_option + " (" + fl.option +
                  " stays, a deprecated alias); args." + fl.dest + " is args." + new_dest + " (" +
                  std::to_string(reads.size()) + " read(s))");
  notes.insert(notes.end(), own_notes.begin(), own_notes.end());
  // Vendor flags of the same polarity the accelerator idiom covers.
  std::vector<std::string> aliases{fl.option};
  std::vector<std::pair<std::string, std::string>> opt_words{{fl.option, new_option}};
  if (folded_own && own->option != new_option) {
    aliases.push_back(own->option);
    opt_words.emplace_back(own->option, new_option);
  }
  if (accel_)
    for (const Flag& f : flags)
      if (f.device != "cuda" && f.negative == fl.negative && fold(f, edits, notes)) {
        aliases.push_back(f.option);
        opt_words.emplace_back(f.option, new_option);
      }
  edits.push_back(alias_line(fl, aliases, new_option, new_dest));
  rename_derived(reads, edits, notes);
  reword_strings(fl, opt_words, edits);
  return {ported(fl, new_option, notes, std::move(edits))};
}

fix::Edit Porter::alias_line(const Flag& fl, const std::vector<std::string>& aliases,
                             const std::string& new_option, const std::string& new_dest) const {
  const char quote = t_.token_text(fl.opt->first_token()).back();
  auto quoted = [&](std::string_view s) { return std::string(1, quote) + std::string(s) + quote; };
  auto [sb, se] = t_.byte_range(*fl.stmt);
  std::uint32_t ls = line_start(sb), le = line_end(se);
  std::string indent(t_.text().substr(ls, sb - ls));
  std::string line = indent + fl.parser + ".add_argument(";
  for (const std::string& a : aliases) line += quoted(a) + ", ";
  line += "dest=" + quoted(new_dest) + ", action=" + quoted("store_true") +
          ", help=" + quoted("deprecated alias of " + new_option) + ")";
  std::string nl(m_.newline());
  if (le == se)
    line = nl + line;  // the file ends on the statement, without a line break
  else
    line += nl;
  return {le, le, line};
}

void Porter::rename_derived(const std::vector<const Node*>& reads, std::vector<fix::Edit>& edits,
                            std::vector<std::string>& notes) const {
  std::vector<std::string> derived;
  auto uses_flag = [&](const Node* n) {
    for (const Node* r : reads)
      if (contains(n, r)) return true;
    for (const Node* x : t_.find_all(NodeKind::Name))
      if (contains(n, x) &&
          std::find(derived.begin(), derived.end(), std::string(t_.name(*x))) != derived.end())
        return true;
    return false;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (const Node* a : t_.find_all(NodeKind::Assign)) {
      if (a->targets().size() != 1 || (*a->targets().begin())->kind() != NodeKind::Name) continue;
      std::string name(t_.name(**a->targets().begin()));
      if (std::find(derived.begin(), derived.end(), name) != derived.end()) continue;
      std::string to = renamed(name, word_);
      if (to.empty() || bindings(name) != 1 || identifier_used(to, edits)) continue;
      bool from_flag = uses_flag(a->value());
      for (const Node* p = a->parent(); p && !from_flag; p = p->parent())
        if (p->kind() == NodeKind::If && uses_flag(p->test())) from_flag = true;
      if (!from_flag) continue;
      derived.push_back(name);
    }
  }
  for (const std::string& name : derived) {
    std::string to = renamed(name, word_);
    int n = 0;
    for (std::uint32_t i = 0; i < t_.tokens().size(); ++i) {
      if (t_.tokens()[i].kind != TokenKind::Name || t_.token_text(i) != name) continue;
      // Only identifiers: not an attribute name, not a keyword argument's name.
      std::optional<std::uint32_t> prev = m_.prev(i), next = m_.next(i);
      if (prev && t_.tokens()[*prev].kind == TokenKind::Dot) continue;
      if (next && t_.token_text(*next) == "=" && m_.enclosing_open(i) &&
          t_.token_text(*m_.enclosing_open(i)) == "(" && !m_.is_store(i))
        continue;
      edits.push_back({t_.tokens()[i].begin, t_.tokens()[i].end, to});
      ++n;
    }
    notes.push_back(name + " is " + to + " (" + std::to_string(n) + " place(s))");
  }
}

void Porter::reword_strings(const Flag& fl, const OptWords& opt_words,
                            std::vector<fix::Edit>& edits) const {
  for (const Node* c : t_.find_all(NodeKind::Constant)) {
    if (!t_.is_string(*c) || c == fl.opt) continue;
    bool help = c->parent() && c->parent()->kind() == NodeKind::keyword &&
                t_.name(*c->parent()) == "help" && c->parent()->parent() == fl.stmt->value();
    for (std::uint32_t k = c->first_token(); k <= c->last_token(); ++k) {
      if (t_.tokens()[k].kind != TokenKind::String) continue;
      std::string_view s = t_.token_text(k);
      bool names_flag = false;
      for (const auto& [from, to] : opt_words)
        names_flag = names_flag || s.find(from) != std::string_view::npos;
      if (!help && !names_flag) continue;
      std::string w = reword(s, opt_words);
      if (w != s) edits.push_back({t_.tokens()[k].begin, t_.tokens()[k].end, w});
    }
  }
}

Finding Porter::ported(const Flag& fl, const std::string& new_option,
                       const std::vector<std::string>& notes, std::vector<fix::Edit> edits) const {
  // Renames and rewordings inside a statement that goes are not edits of their own.
  std::vector<fix::Edit> deletions;
  for (const fix::Edit& e : edits)
    if (e.replacement.empty() && e.end > e.begin) deletions.push_back(e);
  std::erase_if(edits, [&](const fix::Edit& e) {
    return !(e.replacement.empty() && e.end > e.begin) &&
           std::any_of(deletions.begin(), deletions.end(), [&](const fix::Edit& d) {
             return e.begin >= d.begin && e.end <= d.end && (e.end > e.begin || e.begin > d.begin);
           });
  });
  std::sort(edits.begin(), edits.end(),
            [](const fix::Edit& a, const fix::Edit& b) { return a.begin < b.begin; });
  Draft f;
  f.op = Operation::Modify;
  f.api = fl.option;
  f.message = "device flags ported to the " + display_ + " idiom: ";
  for (std::size_t i = 0; i < notes.size(); ++i) f.message += (i ? "; " : "") + notes[i];
  f.message += " (--keep-device-flags keeps the CUDA-shaped command line)";
  f.changes =
      "changes the command line: " + new_option + " replaces " + fl.option + ", which still works";
  auto [fb, fe] = t_.byte_range(*fl.stmt);
  f.begin = fb;
  f.end = fe;
  fix::Fix fx;
  fx.edits = std::move(edits);
  f.fix = std::move(fx);
  return tp310(std::move(f));
}

}  // namespace

bool defines_cuda_flag(const syntax::Tree& tree) {
  // (every file is searched, for its 'g', the rarest of its bytes, paired with its 'a'; see
  // contains())
  if (!tree.ok() || !contains(tree.text(), "add_argument", 6)) return false;
  for (const Node* c : tree.find_all(NodeKind::Call))
    if (std::optional<Flag> f = device_flag(tree, c); f && f->device == "cuda") return true;
  return false;
}

std::vector<Finding> port_device_idiom(const syntax::Tree& tree, const semantic::Model& model,
                                       const catalogue::Catalogue& cat, const Options& opts) {
  const catalogue::Target* target = cat.target(opts.target);
  if (!tree.ok() || !target || target->host || !opts.port_idiom || !defines_cuda_flag(tree))
    return {};
  return Porter(tree, model, *target).run();
}

}  // namespace torchport::rules
