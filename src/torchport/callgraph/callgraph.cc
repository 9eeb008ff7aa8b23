// Third-party analysis: the lazy module index, the call graph and what each function reaches.
#include <torchport/callgraph/callgraph.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace torchport::callgraph {

namespace fs = std::filesystem;
using syntax::Node;
using syntax::NodeKind;

std::string_view to_string(Category c) {
  switch (c) {
    case Category::MigrationNeeded:
      return "migration needed";
    case Category::FrameworkUnsupported:
      return "unsupported";
    case Category::Unknown:
      return "unknown";
    case Category::CudaOp:
      return "CUDA-only package";
  }
  return "unknown";
}

namespace {

std::vector<std::string> split_dots(std::string_view q) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = q.find('.', start);
    out.emplace_back(
        q.substr(start, dot == std::string_view::npos ? q.size() - start : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
  std::string s;
  for (std::size_t i = from; i < to; ++i) {
    if (i > from) s += '.';
    s += parts[i];
  }
  return s;
}

std::string_view top_of(std::string_view q) { return q.substr(0, q.find('.')); }

bool is_framework(std::string_view q) { return q == "torch" || q.starts_with("torch."); }

bool read_bytes(const fs::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = std::move(ss).str();
  return true;
}

/// A call (or a catalogued reference) made by a function: its target, resolved as far as one
/// file allows (imports made absolute, `self.x` and module-level names qualified).
struct Call {
  std::uint32_t target = 0;  ///< interned: a qualified name, or ".cuda" for a catalogued method
  std::uint32_t line = 0;
  bool called = true;  ///< false: a reference that is not called (only catalogue leaves count)
};

struct FuncDef {
  std::string qname;
  std::uint32_t line = 0;
  std::vector<Call> calls;
};

struct ClassDef {
  std::string qname;
  std::vector<std::string> bases;                          ///< qualified
  std::unordered_map<std::string, std::uint32_t> methods;  ///< name -> index into funcs
};

struct Module {
  std::string name;
  std::string path;
  std::unordered_map<std::string, std::uint32_t> functions;  ///< module-level name -> funcs
  std::unordered_map<std::string, std::uint32_t> classes;    ///< module-level name -> classes
  std::unordered_map<std::string, std::string> imports;      ///< bound name -> qualified
  std::vector<std::string> stars;                      ///< modules of `from X import *`, in order
  std::optional<std::unordered_set<std::string>> all;  ///< a literal `__all__`, if any
  std::vector<FuncDef> funcs;
  std::vector<ClassDef> classes_;
};

/// What one file says about its names: imports made absolute (relative ones included), the
/// module-level definitions, and simple instances (`x = pkg.Class(...)`).
struct FileFacts {
  std::unordered_map<std::string, std::string> imports;    ///< any scope; ambiguous dropped
  std::unordered_map<std::string, std::string> instances;  ///< name -> qualified callee
  std::vector<std::string> stars;                          ///< `from X import *` modules
};

/// `from ..a import b` in module `mod` (a package when `is_package`): the absolute module.
std::string absolute_module(const std::string& mod, bool is_package, std::uint32_t level,
                            const std::string& module) {
  if (level == 0) return module;
  std::vector<std::string> parts = mod.empty() ? std::vector<std::string>{} : split_dots(mod);
  if (!is_package && !parts.empty()) parts.pop_back();
  for (std::uint32_t i = 1; i < level && !parts.empty(); ++i) parts.pop_back();
  std::string base = join(parts, 0, parts.size());
  if (module.empty()) return base;
  return base.empty() ? module : base + "." + module;
}

void add_unique(std::unordered_map<std::string, std::string>& m, const std::string& k,
                const std::string& v, std::unordered_set<std::string>& ambiguous) {
  if (ambiguous.count(k)) return;
  auto [it, fresh] = m.emplace(k, v);
  if (!fresh && it->second != v) {
    m.erase(it);
    ambiguous.insert(k);
  }
}

FileFacts file_facts(const syntax::Tree& tree, const semantic::Model& model,
                     const std::string& modname, bool is_package) {
  FileFacts f;
  std::unordered_set<std::string> amb_imports, amb_instances;
  syntax::walk(tree.root(), [&](const Node& n) {
    if (n.kind() == NodeKind::Import) {
      for (const Node* al : n.aliases()) {
        std::string name = tree.alias_name(*al);
        if (al->token() != syntax::kNoToken)
          add_unique(f.imports, std::string(tree.name(*al)), name, amb_imports);
        else
          add_unique(f.imports, std::string(top_of(name)), std::string(top_of(name)), amb_imports);
      }
    } else if (n.kind() == NodeKind::ImportFrom) {
      std::string mod = absolute_module(modname, is_package, tree.level(n), tree.module(n));
      for (const Node* al : n.aliases()) {
        std::string name = tree.alias_name(*al);
        if (name == "*") {
          if (!mod.empty()) f.stars.push_back(mod);
          continue;
        }
        std::string bound = al->token() != syntax::kNoToken ? std::string(tree.name(*al)) : name;
        add_unique(f.imports, bound, mod.empty() ? name : mod + "." + name, amb_imports);
      }
    }
  });
  // x = pkg.Class(...): `x.method` means pkg.Class.method (one meaning per file, else none).
  for (const Node* a : tree.find_all(NodeKind::Assign)) {
    const Node* v = a->value();
    if (!v || v->kind() != NodeKind::Call || a->targets().size() != 1) continue;
    const Node* t = *a->targets().begin();
    const Node* fn = v->func();
    if (t->kind() != NodeKind::Name || !fn || fn->token() == syntax::kNoToken) continue;
    if (fn->kind() != NodeKind::Name && fn->kind() != NodeKind::Attribute) continue;
    const semantic::Reference* r = model.reference_at(fn->token());
    std::string q;
    if (r && r->last == fn->token() && !r->qualified.empty() && r->qualified[0] != '.') {
      q = r->qualified;
    } else if (r && r->last == fn->token()) {
      auto it = f.imports.find(std::string(model.token_text(r->names.front())));
      if (it == f.imports.end()) continue;
      q = it->second;
      for (std::size_t i = 1; i < r->names.size(); ++i)
        q += "." + std::string(model.token_text(r->names[i]));
    } else {
      continue;
    }
    // torch's return types are not known: `t = torch.from_numpy(a); t.to(...)` is not torch API.
    if (is_framework(q)) continue;
    add_unique(f.instances, std::string(tree.name(*t)), q, amb_instances);
  }
  return f;
}

struct Span {
  std::uint32_t first = 0, last = 0;
  std::uint32_t func = 0;
  std::int32_t cls = -1;
};

/// The innermost followed definition holding token `tok` (spans sorted by first token), or
/// nullptr. Methods lie inside their class, not inside another span: the last span starting at
/// or before tok that also ends after it.
const Span* innermost_span(const std::vector<Span>& spans, std::uint32_t tok) {
  auto it = std::upper_bound(spans.begin(), spans.end(), tok,
                             [](std::uint32_t t, const Span& s) { return t < s.first; });
  while (it != spans.begin()) {
    --it;
    if (it->last >= tok) return &*it;
    if (it->cls < 0) break;
  }
  return nullptr;
}

/// A literal module-level __all__ (a list or tuple of strings): what `from m import *` brings;
/// nullopt when there is none or it is not literal.
std::optional<std::unordered_set<std::string>> literal_all(const syntax::Tree& tree) {
  std::optional<std::unordered_set<std::string>> all;
  for (const Node* st : tree.root().children()) {
    if (st->kind() != NodeKind::Assign || st->targets().size() != 1) continue;
    const Node* t = *st->targets().begin();
    const Node* v = st->value();
    if (t->kind() != NodeKind::Name || tree.name(*t) != "__all__" || !v) continue;
    if (v->kind() != NodeKind::List && v->kind() != NodeKind::Tuple) continue;
    std::unordered_set<std::string> names;
    bool literal = true;
    for (const Node* e : v->elts()) {
      std::optional<std::string> sv =
          e->kind() == NodeKind::Constant ? tree.string_value(*e) : std::nullopt;
      if (!sv)
        literal = false;
      else
        names.insert(*sv);
    }
    all = literal ? std::optional(std::move(names)) : std::nullopt;
  }
  return all;
}

/// The qualified name of a class base `b` of module `m` (an import, or a class of the module
/// itself), or "" when it is neither.
std::string base_name(const semantic::Model& model, const FileFacts& facts, const Module& m,
                      const Node& b) {
  if (b.token() == syntax::kNoToken) return {};
  const semantic::Reference* r = model.reference_at(b.token());
  if (!r || r->last != b.token()) return {};
  std::string head(model.token_text(r->names.front()));
  std::string q;
  if (auto it = facts.imports.find(head); it != facts.imports.end())
    q = it->second;
  else if (m.classes.count(head))
    q = m.name + "." + head;
  else
    return {};
  for (std::size_t i = 1; i < r->names.size(); ++i)
    q += "." + std::string(model.token_text(r->names[i]));
  return q;
}

/// A project's Python file: its path and its name relative to the input.
struct PyFile {
  fs::path path;
  std::string rel;
};

/// The .py files of the input (a file, or a tree without VCS, cache, build and virtualenv
/// directories when `default_excludes`), sorted; their top-level module names go to `tops`.
std::vector<PyFile> project_files(const fs::path& root, bool default_excludes,
                                  std::unordered_set<std::string>& tops) {
  std::error_code ec;
  std::vector<PyFile> files;
  if (fs::is_regular_file(root, ec)) {
    files.push_back({root, root.filename().string()});
    tops.insert(root.stem().string());
    return files;
  }
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const fs::path& p = it->path();
    std::string fname = p.filename().string();
    if (it->is_directory(ec)) {
      if (default_excludes &&
          (fname == ".git" || fname == ".hg" || fname == ".svn" || fname == "__pycache__" ||
           fname == "node_modules" || fname == "build" || fname == "dist" ||
           fname.ends_with(".egg-info") || fs::exists(p / "pyvenv.cfg", ec)))
        it.disable_recursion_pending();
      continue;
    }
    if (it->is_symlink(ec) || p.extension() != ".py") continue;
    std::string rel = fs::relative(p, root, ec).generic_string();
    files.push_back({p, rel});
    std::string top = rel.substr(0, rel.find('/'));
    tops.insert(top.ends_with(".py") ? top.substr(0, top.size() - 3) : top);
  }
  std::sort(files.begin(), files.end(),
            [](const PyFile& a, const PyFile& b) { return a.rel < b.rel; });
  return files;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

class Analyzer {
 public:
  Analyzer(const Options& o, const catalogue::Catalogue& c) : opts_(o), cat_(c) {}

  Result run(const std::string& input);

 private:
  enum class SymKind : std::uint8_t { None, Leaf, Function, Class, Known };
  struct Sym {
    SymKind kind = SymKind::None;
    std::uint32_t a = 0, b = 0;  ///< Leaf: leaf id; Function/Class: module, index; Known: row
  };
  struct Edge {
    bool leaf = false;
    std::uint32_t id = 0;
    std::uint32_t line = 0;
  };
  struct Reach {
    std::int32_t via = -1;  ///< the callee node it comes through; -1 = called here
    std::uint32_t line = 0;
  };
  /// leaf id -> how, sorted by leaf: 8 bytes an entry (a library function can reach hundreds).
  class ReachMap {
   public:
    using value_type = std::pair<std::uint32_t, Reach>;
    bool add(std::uint32_t leaf, Reach r) {
      auto it = std::lower_bound(v_.begin(), v_.end(), leaf,
                                 [](const value_type& e, std::uint32_t l) { return e.first < l; });
      if (it != v_.end() && it->first == leaf) return false;
      v_.insert(it, value_type{leaf, r});
      return true;
    }
    const Reach* find(std::uint32_t leaf) const {
      auto it = std::lower_bound(v_.begin(), v_.end(), leaf,
                                 [](const value_type& e, std::uint32_t l) { return e.first < l; });
      return it != v_.end() && it->first == leaf ? &it->second : nullptr;
    }
    std::vector<value_type>::const_iterator begin() const { return v_.begin(); }
    std::vector<value_type>::const_iterator end() const { return v_.end(); }
    bool empty() const { return v_.empty(); }

   private:
    std::vector<value_type> v_;
  };
  struct GraphNode {
    std::string qname;
    std::string file;
    std::uint32_t line = 0;
    std::vector<Edge> edges;
    ReachMap reach;
    std::map<std::uint32_t, std::string> known_files;  ///< from_results: leaf -> where called
    std::set<std::string> names;                       ///< other names it was called by
    bool from_results = false;
    std::uint32_t module = 0, func = 0;  ///< its definition (not for from_results)
  };

  std::optional<std::uint32_t> load_module(const std::string& name);
  std::optional<fs::path> find_module_file(const std::string& name, bool& namespace_pkg);
  std::unique_ptr<Module> parse_module(const std::string& name, const fs::path& file);
  Sym resolve(const std::string& q, int depth);
  Sym resolve_in_module(std::uint32_t mi, const std::vector<std::string>& parts, std::size_t k,
                        int depth);
  Sym find_method(std::uint32_t mi, std::uint32_t ci, const std::string& name, int depth);
  std::optional<std::uint32_t> classify(const std::string& q, bool called);
  std::optional<std::uint32_t> node_for(const Sym& s);
  void expand(std::uint32_t node);
  void propagate();
  std::vector<Hop> chain(std::uint32_t node, std::uint32_t leaf) const;
  std::pair<std::string, std::uint32_t> leaf_site(std::uint32_t node, std::uint32_t leaf) const;

  const Options& opts_;
  const catalogue::Catalogue& cat_;
  std::unordered_set<std::string> project_tops_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::unordered_map<std::string, std::int64_t> module_index_;  ///< -1 = not found
  std::unordered_map<std::string, Sym> resolved_;
  /// Call targets, interned: a library repeats the same few thousand names in every function.
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, std::uint32_t> string_ids_;
  std::uint32_t intern(const std::string& s) {
    if (auto it = string_ids_.find(s); it != string_ids_.end()) return it->second;
    auto id = static_cast<std::uint32_t>(strings_.size());
    strings_.push_back(s);
    string_ids_.emplace(strings_.back(), id);
    return id;
  }
  std::map<std::pair<std::uint32_t, std::string>, Sym> star_cache_;
  std::vector<Leaf> leaves_;
  std::map<std::pair<std::string, bool>, std::optional<std::uint32_t>> leaf_cache_;
  std::vector<GraphNode> nodes_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> func_node_;
  std::unordered_map<std::string, std::uint32_t> known_index_;  ///< api name -> known row
  std::vector<KnownApi> known_;
  std::map<std::uint32_t, std::uint32_t> known_node_;
  std::deque<std::uint32_t> pending_;
  Result result_;
};

std::optional<fs::path> Analyzer::find_module_file(const std::string& name, bool& namespace_pkg) {
  namespace_pkg = false;
  std::string rel = name;
  std::replace(rel.begin(), rel.end(), '.', '/');
  std::optional<fs::path> ns;
  std::error_code ec;
  for (const std::string& dir : opts_.env) {
    fs::path base = fs::path(dir) / rel;
    if (fs::is_regular_file(base / "__init__.py", ec)) return base / "__init__.py";
    fs::path py = base;
    py += ".py";
    if (fs::is_regular_file(py, ec)) return py;
    if (!ns && fs::is_directory(base, ec)) ns = base;
  }
  if (ns) namespace_pkg = true;
  return ns;
}

std::optional<std::uint32_t> Analyzer::load_module(const std::string& name) {
  if (auto it = module_index_.find(name); it != module_index_.end()) {
    if (it->second < 0) return std::nullopt;
    return static_cast<std::uint32_t>(it->second);
  }
  if (project_tops_.count(std::string(top_of(name)))) {
    module_index_[name] = -1;
    return std::nullopt;
  }
  bool ns = false;
  std::optional<fs::path> file = find_module_file(name, ns);
  if (!file) {
    module_index_[name] = -1;
    return std::nullopt;
  }
  std::unique_ptr<Module> m;
  if (ns) {
    m = std::make_unique<Module>();
    m->name = name;
    m->path = file->string();
  } else {
    // One library file never takes the analysis down: a defect on it is a warning, and the
    // module is taken as empty (its calls are not followed), as one that does not parse.
    try {
      m = parse_module(name, *file);
    } catch (const std::exception& e) {
      result_.warnings.push_back(file->string() + ": internal error: " + e.what() +
                                 " (not analysed)");
      m = std::make_unique<Module>();
      m->name = name;
      m->path = file->string();
    }
  }
  auto id = static_cast<std::uint32_t>(modules_.size());
  modules_.push_back(std::move(m));
  module_index_[name] = id;
  return id;
}

std::unique_ptr<Module> Analyzer::parse_module(const std::string& name, const fs::path& file) {
  auto m = std::make_unique<Module>();
  m->name = name;
  m->path = file.string();
  std::string bytes;
  if (!read_bytes(file, bytes)) {
    result_.warnings.push_back(m->path + ": cannot read the file");
    return m;
  }
  result_.stats.modules_parsed++;
  result_.stats.bytes_parsed += bytes.size();
  text::DecodeResult d = text::decode(m->path, bytes);
  if (!d.source) {
    result_.warnings.push_back(m->path + ": does not decode: " + d.error->message);
    return m;
  }
  syntax::Tree tree = syntax::parse(std::move(*d.source));
  if (!tree.ok()) {
    result_.warnings.push_back(tree.format(tree.diagnostics().front()));
    return m;
  }
  semantic::Model model(tree);
  const bool is_package = file.filename() == "__init__.py";
  FileFacts facts = file_facts(tree, model, name, is_package);
  m->imports = facts.imports;
  m->stars = facts.stars;
  // A literal module-level __all__ limits what `from m import *` brings.
  m->all = literal_all(tree);

  // Module-level definitions (through if/try/with blocks, not into functions or classes).
  std::vector<Span> spans;
  auto add_func = [&](const Node& def, const std::string& qname, std::int32_t cls) {
    auto fi = static_cast<std::uint32_t>(m->funcs.size());
    m->funcs.push_back(FuncDef{qname, tree.start(def).line, {}});
    spans.push_back(Span{def.first_token(), def.last_token(), fi, cls});
    return fi;
  };
  std::function<void(const Node&, std::int32_t)> body = [&](const Node& parent, std::int32_t cls) {
    for (const Node* s : parent.children()) {
      if (!syntax::is_statement(s->kind()) && s->kind() != NodeKind::ExceptHandler) continue;
      switch (s->kind()) {
        case NodeKind::FunctionDef:
        case NodeKind::AsyncFunctionDef: {
          std::string n(tree.name(*s));
          if (cls < 0) {
            m->functions[n] = add_func(*s, name + "." + n, -1);
          } else {
            ClassDef& c = m->classes_[static_cast<std::size_t>(cls)];
            c.methods[n] = add_func(*s, c.qname + "." + n, cls);
          }
          break;
        }
        case NodeKind::ClassDef: {
          if (cls >= 0) break;  // nested classes: their calls belong to nobody we follow
          auto ci = static_cast<std::int32_t>(m->classes_.size());
          std::string n(tree.name(*s));
          m->classes_.push_back(ClassDef{name + "." + n, {}, {}});
          for (const Node* b : s->bases())
            if (std::string q = base_name(model, facts, *m, *b); !q.empty())
              m->classes_.back().bases.push_back(q);
          m->classes[n] = static_cast<std::uint32_t>(ci);
          body(*s, ci);
          break;
        }
        case NodeKind::If:
        case NodeKind::Try:
        case NodeKind::TryStar:
        case NodeKind::With:
        case NodeKind::ExceptHandler:
          body(*s, cls);
          break;
        default:
          break;
      }
    }
  };
  body(tree.root(), -1);
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.first < b.first; });
  auto span_of = [&](std::uint32_t tok) { return innermost_span(spans, tok); };
  std::unordered_set<std::uint64_t> seen;  // (function, token) already recorded
  auto qualify = [&](const semantic::Reference& r, const Span& sp) -> std::string {
    std::string head(model.token_text(r.names.front()));
    std::string q;
    if (!r.qualified.empty() && r.qualified[0] != '.') {
      return r.qualified;
    }
    if (auto it = facts.imports.find(head); it != facts.imports.end()) {
      q = it->second;
    } else if ((head == "self" || head == "cls") && sp.cls >= 0 && r.names.size() > 1) {
      q = m->classes_[static_cast<std::size_t>(sp.cls)].qname;
    } else if (m->functions.count(head) || m->classes.count(head)) {
      q = name + "." + head;
    } else if (auto inst = facts.instances.find(head);
               inst != facts.instances.end() && r.names.size() > 1) {
      q = inst->second;
    } else {
      return {};
    }
    for (std::size_t i = 1; i < r.names.size(); ++i)
      q += "." + std::string(model.token_text(r.names[i]));
    return q;
  };
  for (const Node* call : tree.find_all(NodeKind::Call)) {
    const Node* fn = call->func();
    if (!fn || fn->token() == syntax::kNoToken) continue;
    if (fn->kind() != NodeKind::Name && fn->kind() != NodeKind::Attribute) continue;
    const Span* sp = span_of(fn->token());
    if (!sp) continue;
    const semantic::Reference* r = model.reference_at(fn->token());
    std::uint32_t line = tree.lines().locate(tree.token_range(fn->token()).begin).line;
    if (r && r->last == fn->token()) {
      std::string q = qualify(*r, *sp);
      if (!q.empty()) {
        seen.insert((std::uint64_t{sp->func} << 32) | r->first);
        m->funcs[sp->func].calls.push_back(Call{intern(q), line, true});
        continue;
      }
    }
    if (fn->kind() == NodeKind::Attribute) {
      std::string method = "." + std::string(tree.name(*fn));
      const catalogue::Entry* e = cat_.find(method);
      if (e && e->kind == catalogue::Kind::Method)
        m->funcs[sp->func].calls.push_back(Call{intern(method), line, true});
    }
  }
  // Catalogued APIs used without a call (torch.backends.cudnn.benchmark = True).
  for (const semantic::Reference& r : model.references()) {
    if (r.qualified.empty() || r.qualified[0] == '.' || !is_framework(r.qualified)) continue;
    const Span* sp = span_of(r.first);
    if (!sp || seen.count((std::uint64_t{sp->func} << 32) | r.first)) continue;
    if (!classify(r.qualified, false)) continue;
    std::uint32_t line = tree.lines().locate(tree.token_range(r.first).begin).line;
    m->funcs[sp->func].calls.push_back(Call{intern(r.qualified), line, false});
  }
  return m;
}

std::optional<std::uint32_t> Analyzer::classify(const std::string& q, bool called) {
  auto key = std::make_pair(q, called);
  if (auto it = leaf_cache_.find(key); it != leaf_cache_.end()) return it->second;
  std::optional<Leaf> leaf;
  auto under = [&q](const std::string& prefix) {
    return !prefix.empty() && (q == prefix || (q.starts_with(prefix) && q[prefix.size()] == '.'));
  };
  // The target's own device module and package (torch.npu, torch_npu.npu, torch_npu) are what
  // the migration aims at, as Ascend skips them; another device's module (torch.xpu.empty_cache
  // behind is_xpu_available()) needs migrating, as Ascend counts torch.mlu and torch.mps.
  const catalogue::Target* target = cat_.target(opts_.target);
  const catalogue::Target* other_device = nullptr;
  bool own = false;
  if (target) {
    own = under(target->module) || (!target->device.empty() && under("torch." + target->device));
    if (!target->package.empty())
      own = own || under(target->package.substr(0, target->package.find('.')));
  }
  for (const catalogue::Target& t : cat_.targets())
    if (!own && !t.host && !t.device.empty() && &t != target && under("torch." + t.device))
      other_device = &t;
  // The catalogue: the name itself, or a catalogued module or package it lies in.
  const catalogue::Entry* e = nullptr;
  for (std::string p = own || other_device ? std::string() : q; !p.empty();) {
    const catalogue::Entry* f = cat_.find(p);
    if (f &&
        (p == q || f->kind == catalogue::Kind::Module || f->kind == catalogue::Kind::Package)) {
      e = f;
      break;
    }
    std::size_t dot = p.rfind('.');
    if (dot == std::string::npos || dot == 0) break;
    p.resize(dot);
  }
  if (e) {
    const catalogue::Mapping* m = cat_.lookup(e->api, opts_.target);
    const bool package = e->kind == catalogue::Kind::Package;
    // Works on the target as it is (a supported package, an API whose replacement is itself).
    const bool unchanged =
        m && m->status == catalogue::Status::Supported && (package || m->replacement == e->api);
    if (!unchanged) {
      // As Ascend sorts them: CUDA-only packages, torch.cuda and methods (`.cuda`) to migrate,
      // and the other catalogued APIs the target lacks as unsupported by the framework.
      Category c = Category::MigrationNeeded;
      if (package)
        c = Category::CudaOp;
      else if (m && m->status == catalogue::Status::Unsupported &&
               e->kind != catalogue::Kind::Method && !q.starts_with("torch.cuda"))
        c = Category::FrameworkUnsupported;
      Leaf l{q, c, {}};
      if (!m) {
        l.note = "no mapping for " + opts_.target;
      } else if (m->replacement.empty()) {
        l.note = std::string(catalogue::to_string(m->status)) + " on " + opts_.target;
        if (!m->note.empty()) l.note += ": " + m->note;
      } else {
        l.note = (e->api == q ? "" : e->api + " -> ") + m->replacement + " (" +
                 std::string(catalogue::to_string(m->status)) + ")";
      }
      leaf = std::move(l);
    }
  } else if (own) {
    // nothing to report
  } else if (other_device) {
    leaf = Leaf{q, Category::MigrationNeeded,
                "the " + other_device->device + " device module (" + other_device->vendor +
                    "): runs only there, usually behind an availability check"};
  } else if (q.starts_with("torch.cuda.") || q == "torch.cuda") {
    leaf = Leaf{q, Category::MigrationNeeded, "a torch.cuda API the catalogue does not list"};
  } else if (called && is_framework(q)) {
    if (auto s = cat_.api_support(q, opts_.target, opts_.torch_version)) {
      if (s->status == catalogue::Status::Unsupported)
        leaf = Leaf{q, Category::FrameworkUnsupported,
                    s->tip.empty() || s->tip == "-" ? "unsupported on " + opts_.target : s->tip};
      else if (s->status == catalogue::Status::Unknown || s->status == catalogue::Status::Partial)
        leaf = Leaf{q, Category::Unknown,
                    s->tip.empty() || s->tip == "-" ? "not in the vendor's list" : s->tip};
    }
  }
  std::optional<std::uint32_t> id;
  if (leaf) {
    id = static_cast<std::uint32_t>(leaves_.size());
    leaves_.push_back(std::move(*leaf));
  }
  leaf_cache_[key] = id;
  return id;
}

Analyzer::Sym Analyzer::find_method(std::uint32_t mi, std::uint32_t ci, const std::string& name,
                                    int depth) {
  if (depth > 40) return {};
  const ClassDef& c = modules_[mi]->classes_[ci];
  if (auto it = c.methods.find(name); it != c.methods.end())
    return Sym{SymKind::Function, mi, it->second};
  std::vector<std::string> bases = c.bases;  // resolve() may grow modules_
  for (const std::string& b : bases) {
    Sym s = resolve(b, depth + 1);
    if (s.kind != SymKind::Class) continue;
    Sym found = find_method(s.a, s.b, name, depth + 1);
    if (found.kind != SymKind::None) return found;
  }
  return {};
}

Analyzer::Sym Analyzer::resolve_in_module(std::uint32_t mi, const std::vector<std::string>& parts,
                                          std::size_t k, int depth) {
  const std::string& head = parts[k];
  const std::size_t rest = parts.size() - k;
  {
    const Module& m = *modules_[mi];
    if (auto f = m.functions.find(head); f != m.functions.end())
      return rest == 1 ? Sym{SymKind::Function, mi, f->second} : Sym{};
    if (auto c = m.classes.find(head); c != m.classes.end()) {
      if (rest == 1) return Sym{SymKind::Class, mi, c->second};
      if (rest == 2) return find_method(mi, c->second, parts[k + 1], depth + 1);
      return {};
    }
  }
  if (auto imp = modules_[mi]->imports.find(head); imp != modules_[mi]->imports.end()) {
    std::string q = imp->second;
    if (rest > 1) q += "." + join(parts, k + 1, parts.size());
    return resolve(q, depth + 1);
  }
  // `from X import *` (transformers' TYPE_CHECKING blocks): X's public names, or its __all__.
  if (head.starts_with("_") || modules_[mi]->stars.empty()) return {};
  auto key = std::make_pair(mi, join(parts, k, parts.size()));
  if (auto it = star_cache_.find(key); it != star_cache_.end()) return it->second;
  star_cache_[key] = Sym{};                              // on a cycle of star imports
  std::vector<std::string> stars = modules_[mi]->stars;  // resolve() may grow modules_
  for (const std::string& star : stars) {
    // A module that neither mentions the name nor star-imports cannot bind it: not parsed.
    if (!module_index_.count(star)) {
      bool ns = false;
      std::optional<fs::path> file = find_module_file(star, ns);
      std::string bytes;
      if (!file || ns || !read_bytes(*file, bytes)) continue;
      if (bytes.find(head) == std::string::npos && bytes.find("import *") == std::string::npos)
        continue;
    }
    std::optional<std::uint32_t> si = load_module(star);
    if (!si || *si == mi) continue;
    if (modules_[*si]->all && !modules_[*si]->all->count(head)) continue;
    Sym s = resolve_in_module(*si, parts, k, depth + 1);
    if (s.kind != SymKind::None) return star_cache_[key] = s;
  }
  return {};
}

Analyzer::Sym Analyzer::resolve(const std::string& q, int depth) {
  if (depth > 40 || q.empty()) return {};
  if (auto it = resolved_.find(q); it != resolved_.end()) return it->second;
  resolved_[q] = Sym{};  // a name being resolved resolves to nothing on a cycle
  Sym out;
  if (auto k = known_index_.find(q); k != known_index_.end()) {
    out = Sym{SymKind::Known, k->second, 0};
  } else if (std::optional<std::uint32_t> leaf = classify(q, true)) {
    out = Sym{SymKind::Leaf, *leaf, 0};
  } else if (!is_framework(q)) {
    std::vector<std::string> parts = split_dots(q);
    for (std::size_t k2 = parts.size(); k2 >= 1; --k2) {
      std::optional<std::uint32_t> mi = load_module(join(parts, 0, k2));
      if (!mi) continue;
      if (k2 < parts.size()) out = resolve_in_module(*mi, parts, k2, depth);
      break;
    }
  }
  resolved_[q] = out;
  return out;
}

std::optional<std::uint32_t> Analyzer::node_for(const Sym& s) {
  Sym f = s;
  if (s.kind == SymKind::Class) f = find_method(s.a, s.b, "__init__", 0);
  if (f.kind == SymKind::Known) {
    if (auto it = known_node_.find(f.a); it != known_node_.end()) return it->second;
    const KnownApi& k = known_[f.a];
    auto id = static_cast<std::uint32_t>(nodes_.size());
    GraphNode n;
    n.qname = k.names.front();
    n.file = k.file;
    n.from_results = true;
    for (const KnownApi::Reached& r : k.reached)
      if (std::optional<std::uint32_t> leaf = classify(r.api, true))
        if (n.reach.add(*leaf, Reach{-1, r.line})) n.known_files[*leaf] = r.file;
    nodes_.push_back(std::move(n));
    known_node_[f.a] = id;
    return id;
  }
  if (f.kind != SymKind::Function) return std::nullopt;
  auto key = std::make_pair(f.a, f.b);
  if (auto it = func_node_.find(key); it != func_node_.end()) return it->second;
  auto id = static_cast<std::uint32_t>(nodes_.size());
  const Module& m = *modules_[f.a];
  nodes_.push_back(
      GraphNode{m.funcs[f.b].qname, m.path, m.funcs[f.b].line, {}, {}, {}, {}, false, f.a, f.b});
  func_node_[key] = id;
  pending_.push_back(id);
  return id;
}

void Analyzer::expand(std::uint32_t node) {
  result_.stats.functions++;
  // A copy: resolving may load modules (and grow modules_).
  std::vector<Call> calls = modules_[nodes_[node].module]->funcs[nodes_[node].func].calls;
  for (const Call& c : calls) {
    const std::string& target = strings_[c.target];  // a deque: stays valid as it grows
    if (target.starts_with(".") || !c.called) {
      if (std::optional<std::uint32_t> leaf = classify(target, c.called))
        nodes_[node].edges.push_back(Edge{true, *leaf, c.line});
      continue;
    }
    Sym s = resolve(target, 0);
    if (s.kind == SymKind::Leaf) {
      nodes_[node].edges.push_back(Edge{true, s.a, c.line});
    } else if (std::optional<std::uint32_t> callee = node_for(s)) {
      if (*callee != node) nodes_[node].edges.push_back(Edge{false, *callee, c.line});
    }
  }
}

void Analyzer::propagate() {
  // Direct leaves first, then callee reaches until nothing changes (cycles converge because the
  // sets only grow). Later nodes were found from earlier ones: visiting them first converges in
  // one pass on a call tree.
  for (GraphNode& n : nodes_)
    for (const Edge& e : n.edges)
      if (e.leaf) n.reach.add(e.id, Reach{-1, e.line});
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = nodes_.size(); i-- > 0;) {
      GraphNode& n = nodes_[i];
      for (const Edge& e : n.edges) {
        if (e.leaf) continue;
        for (const auto& [leaf, how] : nodes_[e.id].reach) {
          (void)how;
          if (n.reach.add(leaf, Reach{static_cast<std::int32_t>(e.id), e.line})) changed = true;
        }
      }
    }
  }
}

std::vector<Hop> Analyzer::chain(std::uint32_t node, std::uint32_t leaf) const {
  std::vector<Hop> out;
  std::set<std::uint32_t> seen;
  for (std::int64_t cur = node; cur >= 0 && seen.insert(static_cast<std::uint32_t>(cur)).second;) {
    const GraphNode& n = nodes_[static_cast<std::size_t>(cur)];
    const Reach* how = n.reach.find(leaf);
    if (!how) break;
    auto known = n.known_files.find(leaf);
    out.push_back(Hop{n.qname, known != n.known_files.end() ? known->second : n.file, how->line});
    cur = how->via;
  }
  return out;
}

std::pair<std::string, std::uint32_t> Analyzer::leaf_site(std::uint32_t node,
                                                          std::uint32_t leaf) const {
  std::vector<Hop> c = chain(node, leaf);
  if (c.empty()) return {nodes_[node].file, 0};
  return {c.back().file, c.back().line};
}

Result Analyzer::run(const std::string& input) {
  std::error_code ec;
  fs::path root = fs::absolute(input, ec);
  if (!fs::exists(root, ec)) {
    result_.error = "input " + input + " does not exist";
    return std::move(result_);
  }
  if (opts_.env.empty()) {
    result_.error =
        "no search path: give --env PATHS (the `torchport` command passes the active "
        "environment's site-packages)";
    return std::move(result_);
  }
  for (const std::string& p : opts_.env)
    if (!fs::is_directory(p, ec))
      result_.warnings.push_back(p + ": --env path is not a directory (ignored)");
  // --api results files.
  for (const std::string& path : opts_.results) {
    std::string bytes;
    if (!read_bytes(path, bytes)) {
      result_.error = path + ": cannot read the results file";
      return std::move(result_);
    }
    std::string err;
    std::optional<std::vector<KnownApi>> rows = read_results(path, bytes, &err);
    if (!rows) {
      result_.error = err;
      return std::move(result_);
    }
    for (KnownApi& k : *rows) {
      auto idx = static_cast<std::uint32_t>(known_.size());
      for (const std::string& n : k.names) known_index_.emplace(n, idx);
      known_.push_back(std::move(k));
    }
  }
  // The project's files and its own top-level modules (never third-party).
  const std::vector<PyFile> files = project_files(root, opts_.default_excludes, project_tops_);
  result_.stats.project_files = files.size();
  std::set<std::string> libraries;
  struct Entry {
    std::size_t file;
    std::uint32_t line, column;
    std::string api;
    std::uint32_t node;
  };
  std::vector<Entry> entries;
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    std::string bytes;
    if (!read_bytes(files[fi].path, bytes)) {
      result_.warnings.push_back(files[fi].rel + ": cannot read the file");
      continue;
    }
    text::DecodeResult d = text::decode(files[fi].rel, bytes);
    if (!d.source) {
      result_.warnings.push_back(files[fi].rel + ": does not decode: " + d.error->message);
      continue;
    }
    syntax::Tree tree = syntax::parse(std::move(*d.source));
    if (!tree.ok()) {
      result_.warnings.push_back(tree.format(tree.diagnostics().front()));
      continue;
    }
    semantic::Model model(tree);
    std::string rel_mod = files[fi].rel.substr(0, files[fi].rel.size() - 3);
    std::replace(rel_mod.begin(), rel_mod.end(), '/', '.');
    const bool is_package = rel_mod.ends_with("__init__");
    if (is_package) rel_mod = rel_mod.size() > 9 ? rel_mod.substr(0, rel_mod.size() - 9) : "";
    FileFacts facts = file_facts(tree, model, rel_mod, is_package);
    for (const Node* call : tree.find_all(NodeKind::Call)) {
      const Node* fn = call->func();
      if (!fn || fn->token() == syntax::kNoToken) continue;
      if (fn->kind() != NodeKind::Name && fn->kind() != NodeKind::Attribute) continue;
      const semantic::Reference* r = model.reference_at(fn->token());
      if (!r || r->last != fn->token()) continue;
      std::string head(model.token_text(r->names.front()));
      std::string q;
      if (!r->qualified.empty() && r->qualified[0] != '.') {
        q = r->qualified;
      } else if (auto inst = facts.instances.find(head);
                 r->qualified.empty() && inst != facts.instances.end() && r->names.size() > 1) {
        q = inst->second;
        for (std::size_t i = 1; i < r->names.size(); ++i)
          q += "." + std::string(model.token_text(r->names[i]));
      } else {
        continue;  // relative imports name the project's own modules
      }
      std::string top(top_of(q));
      if (is_framework(q) || project_tops_.count(top)) continue;
      if (load_module(top)) libraries.insert(top);
      Sym s = resolve(q, 0);
      std::optional<std::uint32_t> node = node_for(s);
      if (!node) continue;
      if (q != nodes_[*node].qname) nodes_[*node].names.insert(q);
      text::LineCol lc = tree.start(*fn);
      entries.push_back(Entry{fi, lc.line, lc.column + 1, q, *node});
    }
  }
  // Follow every library function reached, breadth first.
  while (!pending_.empty()) {
    std::uint32_t n = pending_.front();
    pending_.pop_front();
    expand(n);
  }
  propagate();

  result_.libraries.assign(libraries.begin(), libraries.end());
  result_.leaves = leaves_;
  for (const Entry& e : entries) {
    for (const auto& [leaf, how] : nodes_[e.node].reach) {
      (void)how;
      result_.findings.push_back(
          Finding{files[e.file].rel, e.line, e.column, e.api, leaf, chain(e.node, leaf)});
    }
  }
  std::sort(result_.findings.begin(), result_.findings.end(),
            [&](const Finding& a, const Finding& b) {
              return std::tie(a.file, a.line, a.column, leaves_[a.leaf].api) <
                     std::tie(b.file, b.line, b.column, leaves_[b.leaf].api);
            });
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    const GraphNode& n = nodes_[i];
    if (n.reach.empty()) continue;
    LibraryApi api;
    api.name = n.qname;
    api.names.assign(n.names.begin(), n.names.end());
    api.file = n.file;
    api.line = n.line;
    api.from_results = n.from_results;
    for (const auto& [leaf, how] : n.reach) {
      (void)how;
      auto [file, line] = leaf_site(i, leaf);
      api.reaches.push_back(LibraryApi::Reach{leaf, file, line});
    }
    result_.apis.push_back(std::move(api));
  }
  std::sort(result_.apis.begin(), result_.apis.end(),
            [](const LibraryApi& a, const LibraryApi& b) { return a.name < b.name; });
  return std::move(result_);
}

Result analyze(const std::string& input, const Options& opts, const catalogue::Catalogue& cat) {
  Analyzer a(opts, cat);
  return a.run(input);
}

}  // namespace torchport::callgraph
