#include <torchport/flow/device_values.h>
#include <torchport/flow/project_values.h>
#include <torchport/semantic/model.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace torchport::flow {

using syntax::Node;
using syntax::NodeKind;
using syntax::Role;

void Value::merge(const Value& o) {
  sources |= o.sources;
  for (const Node* n : o.literals)
    if (std::find(literals.begin(), literals.end(), n) == literals.end()) literals.push_back(n);
}

namespace {

bool is_scope(const Node& n) {
  switch (n.kind()) {
    case NodeKind::Module:
    case NodeKind::FunctionDef:
    case NodeKind::AsyncFunctionDef:
    case NodeKind::Lambda:
    case NodeKind::ClassDef:
      return true;
    default:
      return false;
  }
}

// The environment variables that hold a process's rank or local rank (torchrun, SLURM, Open MPI).
bool rank_variable(std::string_view v) {
  static constexpr std::array<std::string_view, 6> kNames = {
      "LOCAL_RANK",          "RANK", "SLURM_LOCALID", "SLURM_PROCID", "OMPI_COMM_WORLD_LOCAL_RANK",
      "OMPI_COMM_WORLD_RANK"};
  return std::find(kNames.begin(), kNames.end(), v) != kNames.end();
}

/// A multimap filled once, then only read: entries are appended in source order and grouped by
/// key on the first lookup (a stable sort, so each key's values keep their source order). One
/// vector instead of a hash node and a vector per key: the index of a module costs a few
/// allocations, and most of its keys are never looked up.
/// An order of names for grouping them, not for showing them: by length first, so that most
/// comparisons need no memcmp.
struct NameLess {
  bool operator()(std::string_view a, std::string_view b) const {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  }
};

template <class K, class V, class Less>
class FlatMultimap {
 public:
  using Entry = std::pair<K, V>;
  void add(K key, V value) {
    entries_.emplace_back(std::move(key), std::move(value));
    sorted_ = false;
  }
  /// The last entry added (to complete it before any lookup).
  V& back() { return entries_.back().second; }
  bool empty() const { return entries_.empty(); }
  /// The values of `key`, in the order they were added.
  std::span<const Entry> find(const K& key) const {
    sort();
    const auto [lo, hi] =
        std::equal_range(entries_.begin(), entries_.end(), Entry{key, V{}},
                         [](const Entry& a, const Entry& b) { return Less{}(a.first, b.first); });
    return {lo, hi};
  }
  /// Every entry, grouped by key.
  std::span<const Entry> grouped() const {
    sort();
    return entries_;
  }

 private:
  void sort() const {
    if (sorted_) return;
    std::stable_sort(entries_.begin(), entries_.end(),
                     [](const Entry& a, const Entry& b) { return Less{}(a.first, b.first); });
    sorted_ = true;
  }
  mutable std::vector<Entry> entries_;
  mutable bool sorted_ = true;
};

// Calls whose result is a rank or a device index, by the called attribute's name:
// torch.distributed.get_rank() / get_node_local_rank(), torch.cuda.current_device().
bool index_call(std::string_view attr) {
  return attr == "get_rank" || attr == "get_local_rank" || attr == "get_node_local_rank" ||
         attr == "current_device";
}

}  // namespace

struct DeviceValues::Impl {
  const syntax::Tree& t;
  using Key = std::pair<const Node*, std::string_view>;  // (scope, name)
  struct KeyLess {
    bool operator()(const Key& a, const Key& b) const {
      if (a.first != b.first) return std::less<const Node*>{}(a.first, b.first);
      return NameLess{}(a.second, b.second);
    }
  };
  using NodeLess = std::less<const Node*>;
  using Nodes = std::span<const std::pair<std::string_view, const Node*>>;
  /// Bound values per (scope, name); nullptr = a binding whose value is not an expression
  /// (a loop target, an import, a tuple unpacked from a call...).
  FlatMultimap<Key, const Node*, KeyLess> binds;
  struct Param {
    const Node* def = nullptr;
    std::size_t position = 0;  ///< among the positional parameters; SIZE_MAX for keyword-only
    const Node* default_value = nullptr;
  };
  /// The parameters per (function, name); a name given twice is its last parameter.
  FlatMultimap<Key, Param, KeyLess> params;
  /// Values assigned to `X.attr` anywhere in the module, by attribute name; argparse defaults.
  FlatMultimap<std::string_view, const Node*, NameLess> attrs;
  FlatMultimap<std::string_view, const Node*, NameLess> attr_targets;  ///< `X.a = `
  std::unordered_set<std::string> int_options;                 ///< argparse dests with type=int
  FlatMultimap<std::string_view, const Node*, NameLess> defs;  ///< name -> defs
  /// Every call of the module by its callee's name.
  FlatMultimap<std::string_view, const Node*, NameLess> calls;
  std::unordered_set<std::string_view> spawned;              ///< functions started by mp.spawn
  FlatMultimap<const Node*, const Node*, NodeLess> returns;  ///< def -> return values
  std::unordered_map<std::string, std::vector<const Node*>> option_values;  ///< dest -> defaults
  std::vector<OptionFact> option_facts;
  /// What an import binds: the absolute module, and the imported name ("" for the module).
  struct ImportRef {
    std::string module;
    std::string name;
  };
  /// The import aliases per (scope, name), when the analysis knows the project; read into an
  /// ImportRef only when asked (import_ref).
  FlatMultimap<Key, const Node*, KeyLess> imports;
  ModuleContext where;

  mutable std::unordered_map<const Node*, Value> memo;
  mutable bool cut = false;                                   ///< the current walk hit a cut
  mutable std::unordered_map<const Node*, Value> query_memo;  ///< cut values, this query only
  /// The nodes being evaluated, outermost first (at most kMaxSteps: a linear search).
  mutable std::vector<const Node*> active;
  Value unknown_;

  Impl(const syntax::Tree& tree, ModuleContext w) : t(tree), where(std::move(w)) {
    unknown_.add(Source::Unknown);
    index(t.root(), &t.root(), nullptr);
  }

  // ---- indexing ----

  void bind(const Node* scope, const Node& target, const Node* value) {
    switch (target.kind()) {
      case NodeKind::Name:
        binds.add({scope, t.name(target)}, value);
        break;
      case NodeKind::Attribute:
        attrs.add(t.name(target), value);
        attr_targets.add(t.name(target), &target);
        break;
      case NodeKind::Tuple:
      case NodeKind::List: {
        // `a, b = x, y` pairs the elements; anything else unpacks an unknown value.
        std::vector<const Node*> values;
        if (value && (value->kind() == NodeKind::Tuple || value->kind() == NodeKind::List))
          for (const Node* e : value->elts()) values.push_back(e);
        std::size_t i = 0;
        const auto elts = target.elts();
        const bool paired = values.size() == elts.size();
        for (const Node* e : elts) {
          bind(scope, *e, paired ? values[i] : nullptr);
          ++i;
        }
        break;
      }
      case NodeKind::Starred:
        if (const Node* v = target.value()) bind(scope, *v, nullptr);
        break;
      default:
        break;
    }
  }

  void parameters(const Node& def) {
    const Node* args = def.arguments();
    if (!args) return;
    std::size_t position = 0;
    bool last = false;  // a default that follows belongs to the last parameter added
    for (const Node* c : args->children()) {
      switch (c->role()) {
        case Role::PosOnlyArg:
        case Role::PlainArg:
          params.add({&def, t.name(*c)}, Param{&def, position++, nullptr});
          last = true;
          break;
        case Role::KwOnlyArg:
          params.add({&def, t.name(*c)}, Param{&def, SIZE_MAX, nullptr});
          last = true;
          break;
        case Role::VarArg:
        case Role::KwArg:
          binds.add({&def, t.name(*c)}, nullptr);
          last = false;
          break;
        case Role::Default:
        case Role::KwDefault:
          if (last) params.back().default_value = c;
          break;
        default:
          break;
      }
    }
  }

  void argparse_option(const Node& call, bool add_argument) {
    std::string dest;
    const Node* default_value = nullptr;
    bool has_default = false, is_int = false;
    OptionFact fact;
    fact.add_argument = add_argument;
    for (const Node* a : call.args()) {
      if (a->kind() != NodeKind::Constant || !t.is_string(*a)) return;
      auto s = t.string_value(*a);
      if (!s || s->empty() || (*s)[0] != '-') return;
      if (fact.first.empty()) fact.first = *s;
      fact.dests.push_back(option_dest(*s));
      if (dest.empty() || s->starts_with("--")) {
        dest = option_dest(*s);
      }
    }
    for (const Node* k : call.keywords()) {
      const std::string_view kw = t.name(*k);
      if (kw == "dest" && k->value() && k->value()->kind() == NodeKind::Constant) {
        if (auto s = t.string_value(*k->value())) dest = *s;
      } else if (kw == "default") {
        default_value = k->value();
        has_default = true;
      } else if (kw == "type" && k->value() && k->value()->kind() == NodeKind::Name) {
        is_int = t.name(*k->value()) == "int";
      }
    }
    if (dest.empty()) return;
    if (std::find(fact.dests.begin(), fact.dests.end(), dest) == fact.dests.end())
      fact.dests.push_back(dest);
    fact.is_int = is_int;
    fact.has_default = has_default;
    fact.default_value = default_value;
    option_facts.push_back(std::move(fact));
    if (is_int) int_options.insert(dest);
    auto& values = option_values[dest];
    if (has_default) values.push_back(default_value);
  }

  /// An import's binding, when the analysis knows the project (project_values.h): `import a.b`
  /// binds the module a, `import a.b as x` the module a.b, `from m import x` the name x of m
  /// (which may itself be a module of the package m).
  /// nullopt for an alias that binds nothing known (`*`, a relative import above the top).
  std::optional<ImportRef> import_ref(const Node& alias, std::string_view bound) const {
    const Node* stmt = alias.parent();
    if (!stmt) return std::nullopt;
    std::string dotted = t.alias_name(alias);
    if (dotted.empty() || dotted == "*") return std::nullopt;
    if (stmt->kind() == NodeKind::Import)
      return ImportRef{t.name(alias).empty() ? std::string(bound) : dotted, ""};
    if (stmt->kind() != NodeKind::ImportFrom) return std::nullopt;
    std::string mod = t.module(*stmt);
    if (const std::uint32_t level = t.level(*stmt); level > 0)
      mod = ProjectValues::resolve_relative(where.module, where.is_package, level, mod);
    if (mod.empty()) return std::nullopt;
    return ImportRef{std::move(mod), std::move(dotted)};
  }

  void call(const Node& c) {
    const Node* f = c.func();
    if (!f) return;
    std::string_view name;
    if (f->kind() == NodeKind::Name || f->kind() == NodeKind::Attribute) name = t.name(*f);
    if (name.empty()) return;
    calls.add(name, &c);
    // argparse's add_argument, and configargparse's group.add (OpenNMT-py and others)
    if ((name == "add_argument" || name == "add") && f->kind() == NodeKind::Attribute)
      argparse_option(c, name == "add_argument");
    if (name == "spawn" || name == "start_processes") {
      auto args = c.args();
      if (!args.empty() && (*args.begin())->kind() == NodeKind::Name)
        spawned.insert(t.name(**args.begin()));
    }
  }

  /// `scope`: the innermost scope node; `def`: the innermost function (for returns).
  void index(const Node& n, const Node* scope, const Node* def) {
    switch (n.kind()) {
      case NodeKind::FunctionDef:
      case NodeKind::AsyncFunctionDef:
        binds.add({scope, t.name(n)}, nullptr);
        defs.add(t.name(n), &n);
        parameters(n);
        for (const Node* c : n.children()) {
          const bool inner = c->role() == Role::Body;
          index(*c, inner ? &n : scope, inner ? &n : def);
        }
        return;
      case NodeKind::Lambda:
        parameters(n);
        for (const Node* c : n.children()) index(*c, c->role() == Role::Body ? &n : scope, def);
        return;
      case NodeKind::ClassDef:
        binds.add({scope, t.name(n)}, nullptr);
        for (const Node* c : n.children()) index(*c, c->role() == Role::Body ? &n : scope, def);
        return;
      case NodeKind::Assign:
        for (const Node* target : n.targets()) bind(scope, *target, n.value());
        break;
      case NodeKind::AnnAssign:
        if (n.value() && n.target()) bind(scope, *n.target(), n.value());
        break;
      case NodeKind::AugAssign:
      case NodeKind::For:
      case NodeKind::AsyncFor:
        if (n.target()) bind(scope, *n.target(), nullptr);
        break;
      case NodeKind::NamedExpr:
        if (n.target()) bind(scope, *n.target(), n.value());
        break;
      case NodeKind::withitem:
        if (n.optional_vars()) bind(scope, *n.optional_vars(), nullptr);
        break;
      case NodeKind::alias: {
        // `import a.b` binds a; `import x as y` / `from m import x` bind their names.
        std::string_view bound = t.name(n);
        if (bound.empty()) {
          bound = t.token_text(n.extra_tokens().empty() ? n.first_token() : n.extra_tokens()[0]);
        }
        binds.add({scope, bound}, nullptr);
        if (where.project) imports.add({scope, bound}, &n);
        break;
      }
      case NodeKind::ExceptHandler:
        if (!t.name(n).empty()) binds.add({scope, t.name(n)}, nullptr);
        break;
      case NodeKind::Return:
        if (def) returns.add(def, n.value());
        break;
      case NodeKind::Call:
        call(n);
        break;
      default:
        break;
    }
    for (const Node* c : n.children()) index(*c, scope, def);
  }

  // ---- evaluation ----

  static Value one(Source s, const Node* literal = nullptr) {
    Value v;
    v.add(s);
    if (literal) v.literals.push_back(literal);
    return v;
  }

  /// The merged values of some nodes, or of the nodes of a FlatMultimap range (nullptr: Unknown).
  template <class Entries>
  Value values(const Entries& nodes, int steps) const {
    Value v;
    for (const auto& e : nodes) {
      const Node* n = nullptr;
      if constexpr (std::is_same_v<std::decay_t<decltype(e)>, const Node*>)
        n = e;
      else
        n = e.second;
      v.merge(n ? eval(*n, steps) : unknown_);
    }
    if (nodes.empty()) v.add(Source::Unknown);
    return v;
  }

  /// The scopes a name in `n` is resolved in, innermost first (class bodies only when they are
  /// the innermost: methods do not see them).
  /// Calls `visit(scope)` on each until it returns true.
  template <class Visit>
  void for_scopes_of(const Node& n, Visit&& visit) const {
    bool first = true;
    const Node* child = &n;
    for (const Node* p = n.parent(); p; child = p, p = p->parent()) {
      if (!is_scope(*p)) continue;
      // A default, decorator or annotation is evaluated in the enclosing scope.
      if (p->kind() != NodeKind::Module && child->role() != Role::Body) continue;
      if (p->kind() == NodeKind::ClassDef && !first) continue;
      first = false;
      if (visit(p)) return;
    }
  }

  /// The import that alone binds the name `n` where Python resolves it, if any (of a name
  /// imported twice in its scope, the last import that binds something known).
  std::optional<ImportRef> import_of(const Node& n) const {
    if (imports.empty()) return std::nullopt;  // no project, or no import: the usual path
    const std::string_view id = t.name(n);
    std::optional<ImportRef> found;
    for_scopes_of(n, [&](const Node* scope) {
      const auto b = binds.find({scope, id});
      const bool param = !params.find({scope, id}).empty();
      if (b.empty() && !param) return false;
      if (param || b.size() != 1) return true;
      const auto aliases = imports.find({scope, id});
      for (auto it = aliases.rbegin(); it != aliases.rend() && !found; ++it)
        found = import_ref(*it->second, id);
      return true;
    });
    return found;
  }

  /// The value of a name another module of the project defines (nullopt: not known there).
  std::optional<Value> from_project(const std::string& module, std::string_view name) const {
    if (!where.project) return std::nullopt;
    return where.project->module_name(module, name, where.module);
  }

  Value name(const Node& n, int steps) const {
    const std::string_view id = t.name(n);
    if (const auto ref = import_of(n); ref && !ref->name.empty()) {
      if (auto v = from_project(ref->module, ref->name)) return *v;
      return unknown_;
    }
    Value v;
    bool found = false;
    for_scopes_of(n, [&](const Node* scope) {
      if (const auto b = binds.find({scope, id}); !b.empty()) {
        v.merge(values(b, steps));
        found = true;
      }
      if (const auto p = params.find({scope, id}); !p.empty()) {
        v.merge(parameter(p.back().second, id, steps));
        found = true;
      }
      return found;
    });
    return found ? v : unknown_;
  }

  Value parameter(const Param& p, std::string_view id, int steps) const {
    Value v;
    if (p.default_value) v.merge(eval(*p.default_value, steps));
    if (p.def->kind() == NodeKind::Lambda) return v.sources ? v : unknown_;
    const std::string_view fn = t.name(*p.def);
    if (p.position == 0 && spawned.contains(fn)) v.add(Source::Index);
    // A method called as `obj.fn(...)` does not pass `self` in its arguments.
    bool method = false;
    if (const Node* args = p.def->arguments()) {
      for (const Node* c : args->children()) {
        if (c->role() == Role::PosOnlyArg || c->role() == Role::PlainArg) {
          method = t.name(*c) == "self" || t.name(*c) == "cls";
          break;
        }
      }
    }
    bool any_call = false;
    for (const auto& [callee, c] : calls.find(fn)) {
      if (c->func() && c->func()->kind() == NodeKind::Attribute && t.name(*c->func()) == "spawn")
        continue;
      any_call = true;
      const bool through_attr = c->func()->kind() == NodeKind::Attribute;
      std::size_t pos = p.position;
      if (method && through_attr) {
        if (pos == 0) return unknown_;  // `self`
        --pos;
      }
      const Node* arg = nullptr;
      bool starred = false;
      std::size_t i = 0;
      for (const Node* a : c->args()) {
        if (a->kind() == NodeKind::Starred) starred = true;
        if (i++ == pos && !starred) arg = a;
      }
      for (const Node* k : c->keywords()) {
        if (t.name(*k).empty()) starred = true;  // **kwargs
        if (t.name(*k) == id) arg = k->value();
      }
      if (arg) {
        v.merge(eval(*arg, steps));
      } else if (starred) {
        v.add(Source::Unknown);
      }
      // neither: the default, merged above
    }
    if (!any_call && !p.default_value && !(p.position == 0 && spawned.contains(fn)))
      v.add(Source::Unknown);
    return v.sources ? v : unknown_;
  }

  Value attribute(const Node& n, int steps) const {
    const std::string_view attr = t.name(n);
    // `dev.index`: a torch.device's index (an int, or None); `lst.index` is called, not read.
    if (attr == "index" && n.role() != Role::Func) return one(Source::Index);
    Value v;
    bool found = false;
    if (auto it =
            option_values.empty() ? option_values.end() : option_values.find(std::string(attr));
        it != option_values.end()) {
      found = true;
      if (int_options.contains(std::string(attr))) {
        v.add(Source::Index);
        for (const Node* d : it->second)
          if (d && d->kind() == NodeKind::Constant && d->has(syntax::kNone)) v.add(Source::None);
      } else if (it->second.empty()) {
        v.add(Source::None);  // an option without default= is None
      } else {
        v.merge(values(it->second, steps));
      }
    }
    if (const auto a = attrs.find(attr); !a.empty()) {
      found = true;
      v.merge(values(a, steps));
    }
    if (found || !where.project || !n.value() || n.value()->kind() != NodeKind::Name)
      return found ? v : unknown_;
    // `config.GPU_ID` with `config` a project module; else `args.gpu` with the parser built
    // in another module (opts.py): the project's options of that dest.
    const std::string_view head = t.name(*n.value());
    if (const auto ref = import_of(*n.value())) {
      const std::string module = ref->name.empty() ? ref->module : ref->module + "." + ref->name;
      if (auto mv = from_project(module, attr)) return *mv;
      return unknown_;
    }
    if (head == "self" || head == "cls") return unknown_;
    if (auto ov = where.project->option(attr)) return *ov;
    return unknown_;
  }

  bool env_rank(const Node& e) const {
    // os.environ["LOCAL_RANK"], os.environ.get("LOCAL_RANK", ...), os.getenv("RANK", ...)
    const Node* key = nullptr;
    if (e.kind() == NodeKind::Subscript && e.value() && t.text(*e.value()).ends_with("environ")) {
      key = e.slice();
    } else if (e.kind() == NodeKind::Call && e.func() && e.func()->kind() == NodeKind::Attribute) {
      const std::string_view fn = t.name(*e.func());
      const std::string_view obj = t.text(*e.func()->value());
      if ((fn == "get" && obj.ends_with("environ")) || (fn == "getenv" && obj == "os")) {
        auto args = e.args();
        if (!args.empty()) key = *args.begin();
      }
    }
    if (!key || key->kind() != NodeKind::Constant || !t.is_string(*key)) return false;
    auto s = t.string_value(*key);
    return s && rank_variable(*s);
  }

  Value call_value(const Node& c, int steps) const {
    const Node* f = c.func();
    if (!f) return unknown_;
    if (f->kind() == NodeKind::Name && t.name(*f) == "int") {
      auto args = c.args();
      if (args.size() != 1) return unknown_;
      const Node& a = **args.begin();
      if (env_rank(a)) return one(Source::Index);
      const Value& inner = eval(a, steps);
      return inner.only({Source::Index}) ? one(Source::Index) : unknown_;
    }
    if (f->kind() == NodeKind::Attribute) {
      const std::string_view attr = t.name(*f);
      if (index_call(attr) && c.args().empty()) return one(Source::Index);
      // "cuda:{}".format(i)
      if (attr == "format" && f->value() && f->value()->kind() == NodeKind::Constant) {
        if (auto s = t.string_value(*f->value()); s && s->starts_with("cuda:"))
          return one(Source::Formatted, &c);
      }
      return unknown_;
    }
    if (f->kind() == NodeKind::Name) {
      const auto ds = defs.find(t.name(*f));
      if (ds.empty()) return unknown_;
      Value v;
      for (const auto& [name, def] : ds) {
        const auto r = returns.find(def);
        if (r.empty()) return unknown_;  // falls off the end: None, or a generator
        v.merge(values(r, steps));
      }
      return v.sources ? v : unknown_;
    }
    return unknown_;
  }

  Value compute(const Node& e, int steps) const {
    switch (e.kind()) {
      case NodeKind::Constant: {
        if (e.has(syntax::kNone)) return one(Source::None, &e);
        if (e.has(syntax::kNumber)) {
          const std::string_view s = t.text(e);
          if (!s.empty() &&
              std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
            return one(Source::Index, &e);
          return unknown_;
        }
        if (!t.is_string(e) || e.has(syntax::kBytes)) return unknown_;
        auto s = t.string_value(e);
        if (!s) return unknown_;
        if (semantic::is_cuda_device_string(*s)) return one(Source::DeviceString, &e);
        if (*s == "cpu") return one(Source::HostString, &e);
        if (*s == "nccl") return one(Source::Backend, &e);
        return one(Source::Text, &e);
      }
      case NodeKind::JoinedStr: {
        auto parts = e.parts();
        if (parts.empty()) return unknown_;
        const Node* first = *parts.begin();
        if (first->kind() == NodeKind::Constant && t.text(*first).starts_with("cuda:"))
          return one(Source::Formatted, &e);
        return unknown_;
      }
      case NodeKind::BinOp: {
        const std::string_view op = e.token() != syntax::kNoToken ? t.token_text(e.token()) : "";
        const Node* l = e.left();
        const Node* r = e.right();
        if (!l || !r) return unknown_;
        if ((op == "%" || op == "+") && l->kind() == NodeKind::Constant && t.is_string(*l)) {
          auto s = t.string_value(*l);
          if (s && s->starts_with("cuda:")) return one(Source::Formatted, &e);
          return unknown_;
        }
        // rank % ngpus, local_rank + offset: arithmetic on an index is an index.
        if (op == "%" || op == "+" || op == "-" || op == "//" || op == "*") {
          const Value& lv = eval(*l, steps);
          if (lv.only({Source::Index})) return one(Source::Index);
        }
        return unknown_;
      }
      case NodeKind::UnaryOp: {
        // -1: "no device" in an index variable (`device_id=-1`), still an int
        const Node* operand = e.child(Role::Operand);
        if (operand && operand->kind() == NodeKind::Constant && operand->has(syntax::kNumber) &&
            e.token() != syntax::kNoToken && t.token_text(e.token()) == "-" &&
            eval(*operand, steps).only({Source::Index}))
          return one(Source::Index);
        return unknown_;
      }
      case NodeKind::IfExp: {
        Value v;
        for (const Node* c : e.children())
          if (c->role() != Role::Test) v.merge(eval(*c, steps));
        return v;
      }
      case NodeKind::BoolOp: {
        Value v;
        for (const Node* c : e.children()) v.merge(eval(*c, steps));
        return v;
      }
      case NodeKind::NamedExpr:
        return e.value() ? eval(*e.value(), steps) : unknown_;
      case NodeKind::Name:
        return name(e, steps);
      case NodeKind::Attribute:
        return attribute(e, steps);
      case NodeKind::Call:
        return call_value(e, steps);
      default:
        return unknown_;
    }
  }

  /// A value computed under a cut (the step bound, or a cycle) depends on where the walk
  /// started: it is kept only for the current query (query_memo, cleared by of()), so that
  /// every query gets the same answer and no query walks a node twice.
  const Value& eval(const Node& e, int steps) const {
    if (auto it = memo.find(&e); it != memo.end()) return it->second;
    if (!query_memo.empty())
      if (auto it = query_memo.find(&e); it != query_memo.end()) return it->second;
    if (steps >= kMaxSteps || std::find(active.begin(), active.end(), &e) != active.end()) {
      cut = true;
      return unknown_;
    }
    const bool outer_cut = cut;
    cut = false;
    active.push_back(&e);
    Value v = compute(e, steps + 1);
    active.pop_back();
    const bool this_cut = cut;
    cut = outer_cut || this_cut;
    if (!this_cut) return memo.emplace(&e, std::move(v)).first->second;
    return query_memo.emplace(&e, std::move(v)).first->second;
  }
};

namespace {
const Node* enclosing_class(const Node& n) {
  for (const Node* p = n.parent(); p; p = p->parent())
    if (p->kind() == NodeKind::ClassDef) return p;
  return nullptr;
}
}  // namespace

bool DeviceValues::user_attribute(const syntax::Node& a) const {
  if (a.kind() != NodeKind::Attribute || !a.value()) return false;
  const syntax::Tree& t = impl_->t;
  const auto targets = impl_->attr_targets.find(t.name(a));
  if (targets.empty()) return false;
  const std::string_view head = t.text(*a.value());
  const bool own = head == "self" || head == "cls";
  for (const auto& [name, target] : targets) {
    if (!target->value() || t.text(*target->value()) != head) continue;
    if (!own || enclosing_class(*target) == enclosing_class(a)) return true;
  }
  return false;
}

DeviceValues::DeviceValues(const syntax::Tree& tree, ModuleContext where)
    : impl_(std::make_unique<Impl>(tree, std::move(where))) {}
DeviceValues::~DeviceValues() = default;

std::vector<std::pair<std::string, Value>> DeviceValues::module_values() const {
  std::vector<std::pair<std::string, Value>> out;
  const Node* root = &impl_->t.root();
  const auto all = impl_->binds.grouped();
  for (std::size_t i = 0, j = 0; i < all.size(); i = j) {
    const Impl::Key& key = all[i].first;
    for (j = i + 1; j < all.size() && all[j].first == key;) ++j;
    if (key.first != root) continue;
    const auto values = all.subspan(i, j - i);
    if (std::any_of(values.begin(), values.end(),
                    [](const auto& e) { return e.second == nullptr; }))
      continue;  // an import, a def, a loop variable...
    Value v = impl_->values(values, 0);
    impl_->query_memo.clear();
    impl_->cut = false;
    out.emplace_back(std::string(key.second), std::move(v));
  }
  return out;
}

const std::vector<OptionFact>& DeviceValues::options() const { return impl_->option_facts; }

Value DeviceValues::of(const syntax::Node& e) const {
  Value v = impl_->eval(e, 0);
  impl_->query_memo.clear();
  impl_->cut = false;
  return v;
}

bool DeviceValues::is_index(const syntax::Node& e) const { return is_index(of(e)); }

std::string option_dest(std::string_view option) {
  const std::size_t first = option.find_first_not_of('-');
  if (first == std::string_view::npos) return {};
  std::string dest(option.substr(first));
  std::replace(dest.begin(), dest.end(), '-', '_');
  return dest;
}

}  // namespace torchport::flow
