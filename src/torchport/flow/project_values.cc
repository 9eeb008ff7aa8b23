#include <torchport/flow/project_values.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/file.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cctype>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace torchport::flow {

namespace fs = std::filesystem;

namespace {

/// Keeps the sources another module may pass on (see the header): an index, None, "cpu" and
/// other strings, plus `extra`; anything else makes the whole value Unknown.
Value exported(const Value& v, std::initializer_list<Source> extra = {}) {
  std::vector<Source> allowed = {Source::Index, Source::None, Source::HostString, Source::Text};
  allowed.insert(allowed.end(), extra.begin(), extra.end());
  Value out;
  for (Source s : allowed)
    if (v.has(s)) out.add(s);
  if (out.sources != v.sources || out.sources == 0) {
    out = Value{};
    out.add(Source::Unknown);
  }
  return out;
}

bool says(std::string_view name, std::string_view word) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(word) != std::string::npos;
}

/// The value of an option as another module sees it (the rules rewrite "nccl" in the default
/// of an option named for a backend, and "cuda" in that of an add_argument named for a device).
Value option_value(const OptionFact& o, const DeviceValues& dv) {
  Value v;
  if (o.is_int) {
    v.add(Source::Index);
    if (o.default_value && o.default_value->kind() == syntax::NodeKind::Constant &&
        o.default_value->has(syntax::kNone))
      v.add(Source::None);
    return v;
  }
  if (!o.has_default) {
    v.add(Source::None);
    return v;
  }
  if (!o.default_value) return exported(Value{});
  const bool backend = std::any_of(o.dests.begin(), o.dests.end(),
                                   [](const std::string& d) { return says(d, "backend"); });
  const bool device = o.add_argument && says(o.first, "device");
  const Value dflt = dv.of(*o.default_value);
  if (backend && device) return exported(dflt, {Source::Backend, Source::DeviceString});
  if (backend) return exported(dflt, {Source::Backend});
  if (device) return exported(dflt, {Source::DeviceString});
  return exported(dflt);
}

/// Whether the "add" at `at` begins an option call: `add_argument`, or `.add(` whose first
/// argument is a string starting with '-'.
bool option_call_at(std::string_view text, std::size_t at) {
  if (text.substr(at).starts_with("add_argument")) return true;
  if (at == 0 || text[at - 1] != '.' || at + 3 >= text.size() || text[at + 3] != '(') return false;
  std::size_t i = at + 4;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  return i + 1 < text.size() && (text[i] == '"' || text[i] == '\'') && text[i + 1] == '-';
}

}  // namespace

bool may_define_options(std::string_view text) {
  // Both calls contain "add": one pass finds every "add" and looks at what surrounds it. Every
  // file of the project is searched on the first option query. Sixteen bytes at a time, the
  // search took 0.35 % of the samples of `analyze` on torch's tree (46 MB), where two memmem
  // passes (one per call) took 1.6 % (perf, cpu-clock).
  const char* const base = text.data();
  const std::size_t n = text.size();
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8('a');
  const __m128i d = _mm_set1_epi8('d');
  for (; n - i >= 18; i += 16) {
    const auto load = [&](std::size_t k) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i + k));
    };
    auto hits = static_cast<unsigned>(_mm_movemask_epi8(
        _mm_and_si128(_mm_cmpeq_epi8(load(0), a),
                      _mm_and_si128(_mm_cmpeq_epi8(load(1), d), _mm_cmpeq_epi8(load(2), d)))));
    for (; hits != 0; hits &= hits - 1)
      if (option_call_at(text, i + static_cast<std::size_t>(std::countr_zero(hits)))) return true;
  }
#endif
  for (; i + 3 <= n; ++i)
    if (base[i] == 'a' && base[i + 1] == 'd' && base[i + 2] == 'd' && option_call_at(text, i))
      return true;
  return false;
}

struct ProjectValues::Impl {
  fs::path root;
  std::unique_ptr<text::OpenDirectory> dir;  ///< `root` held open: every read is relative to it
  std::vector<std::string> files;
  std::vector<std::size_t> sizes;                          ///< of `files` (0: not measured)
  std::unordered_map<std::string, std::string> by_module;  ///< dotted name -> rel
  /// Every dotted suffix of every module ("pkg.config" of "src.pkg.config") -> rel, "" where
  /// two modules share it.
  std::unordered_map<std::string, std::string> by_suffix;

  struct Module {
    std::once_flag once;
    std::unordered_map<std::string, Value> names;
  };
  mutable std::mutex mutex;
  mutable std::unordered_map<std::string, std::unique_ptr<Module>> modules;  ///< by rel

  mutable std::once_flag options_once;
  mutable std::unordered_map<std::string, Value> options;

  /// The project file of `module`, seen from `importer`; "" when there is none (or two).
  std::string find(std::string_view module, std::string_view importer) const {
    const std::string m(module);
    if (auto it = by_module.find(m); it != by_module.end()) return it->second;
    if (const auto dot = importer.rfind('.'); dot != std::string_view::npos) {
      if (auto it = by_module.find(std::string(importer.substr(0, dot)) + "." + m);
          it != by_module.end())
        return it->second;
    }
    // a package kept under a directory that is on sys.path (src/): only a dotted name, which
    // says which package; a bare `import utils` from elsewhere is a guess
    if (m.find('.') == std::string::npos) return {};
    if (auto it = by_suffix.find(m); it != by_suffix.end()) return it->second;
    return {};
  }

  const Module& module(const std::string& rel) const {
    Module* mod = nullptr;
    {
      std::lock_guard lock(mutex);
      auto& slot = modules[rel];
      if (!slot) slot = std::make_unique<Module>();
      mod = slot.get();
    }
    std::call_once(mod->once, [&] {
      // Another module's defect (unreadable, unparsable, too deep) leaves it without values:
      // it is reported in its own file, never in the one that asked.
      try {
        std::string text, error;
        if (!dir->read(rel, text, error)) return;
        const syntax::Tree tree = syntax::parse(rel, std::move(text));
        if (!tree.ok()) return;
        const DeviceValues dv(tree);
        for (auto& [name, v] : dv.module_values()) mod->names.emplace(name, exported(v));
      } catch (const std::exception&) {
        mod->names.clear();
      }
    });
    return *mod;
  }

  /// Every file is read into one buffer, and only a file that may define options is copied
  /// for its parse; the main pass reads each file again. (Keeping the scan's texts for the
  /// main pass saved that second read of the page cache but cost more: on torch's tree, 40 MB
  /// more peak memory, 12 K more page faults and about 1 % more CPU in paired runs.)
  void scan_options() const {
    std::string bytes, error;
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::string& rel = files[i];
      try {
        if (!dir->read(rel, bytes, error, sizes[i])) continue;
        if (!may_define_options(bytes)) continue;
        const syntax::Tree tree = syntax::parse(rel, std::string(bytes));
        if (!tree.ok()) continue;
        const DeviceValues dv(tree);
        for (const OptionFact& o : dv.options()) {
          const Value v = option_value(o, dv);
          for (const std::string& d : o.dests) options[d].merge(v);
        }
      } catch (const std::exception&) {
        continue;  // as in module(): its own file reports it
      }
    }
  }
};

ProjectValues::ProjectValues(fs::path root, std::vector<std::string> python_files,
                             std::vector<std::size_t> sizes)
    : impl_(std::make_unique<Impl>()) {
  impl_->root = std::move(root);
  impl_->dir = std::make_unique<text::OpenDirectory>(impl_->root.c_str());
  impl_->files = std::move(python_files);
  impl_->sizes = std::move(sizes);
  impl_->sizes.resize(impl_->files.size());
  for (const std::string& rel : impl_->files) {
    const std::string m = module_of(rel);
    if (m.empty()) continue;
    impl_->by_module.emplace(m, rel);
    for (std::size_t dot = m.find('.'); dot != std::string::npos; dot = m.find('.', dot + 1)) {
      auto [it, fresh] = impl_->by_suffix.emplace(m.substr(dot + 1), rel);
      if (!fresh && it->second != rel) it->second.clear();
    }
  }
}

ProjectValues::~ProjectValues() = default;

std::optional<Value> ProjectValues::module_name(std::string_view module, std::string_view name,
                                                std::string_view importer) const {
  const std::string rel = impl_->find(module, importer);
  if (rel.empty()) return std::nullopt;
  const auto& names = impl_->module(rel).names;
  auto it = names.find(std::string(name));
  if (it == names.end()) return std::nullopt;
  return it->second;
}

std::optional<Value> ProjectValues::option(std::string_view dest) const {
  std::call_once(impl_->options_once, [&] { impl_->scan_options(); });
  auto it = impl_->options.find(std::string(dest));
  if (it == impl_->options.end()) return std::nullopt;
  return it->second;
}

std::string ProjectValues::module_of(std::string_view rel) {
  if (!rel.ends_with(".py")) return {};
  std::string_view stem = rel.substr(0, rel.size() - 3);
  if (stem == "__init__") return {};
  if (stem.ends_with("/__init__")) stem.remove_suffix(std::string_view("/__init__").size());
  std::string out;
  std::size_t start = 0;
  while (start <= stem.size()) {
    const std::size_t slash = std::min(stem.find('/', start), stem.size());
    const std::string_view part = stem.substr(start, slash - start);
    if (part.empty() || !std::all_of(part.begin(), part.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                 static_cast<unsigned char>(c) >= 0x80;
        }))
      return {};
    if (std::isdigit(static_cast<unsigned char>(part[0]))) return {};
    if (!out.empty()) out += '.';
    out += part;
    start = slash + 1;
  }
  return out;
}

std::string ProjectValues::resolve_relative(std::string_view current, bool is_package,
                                            std::uint32_t level, std::string_view module) {
  if (current.empty()) return {};
  std::string base(current);
  // The package of the module: the module itself for a package's __init__.py.
  std::uint32_t up = is_package ? level - 1 : level;
  for (; up > 0; --up) {
    const auto dot = base.rfind('.');
    if (dot == std::string::npos) {
      if (up > 1) return {};
      base.clear();
      break;
    }
    base.resize(dot);
  }
  if (base.empty()) return std::string(module);
  return module.empty() ? base : base + "." + std::string(module);
}

}  // namespace torchport::flow
