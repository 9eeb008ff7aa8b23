#include <torchport/rules/storage_paths.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace torchport::rules {
namespace {

using syntax::Node;
using syntax::NodeKind;
using syntax::Role;
using syntax::Tree;

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// Local names bound by imports anywhere in the file ("mp" -> "torch.multiprocessing").
/// Rebinding is not tracked: these are suggestions, and a wrong one is only a comment.
std::unordered_map<std::string, std::string> import_aliases(const Tree& tree) {
  std::unordered_map<std::string, std::string> out;
  for (const Node* imp : tree.find_all(NodeKind::Import)) {
    for (const Node* a : imp->aliases()) {
      const std::string dotted = tree.alias_name(*a);
      const std::string_view as = tree.name(*a);
      if (!as.empty()) {
        out[std::string(as)] = dotted;
      } else {
        const std::string head = dotted.substr(0, dotted.find('.'));
        out[head] = head;
      }
    }
  }
  for (const Node* imp : tree.find_all(NodeKind::ImportFrom)) {
    if (tree.level(*imp) != 0) continue;
    const std::string module = tree.module(*imp);
    for (const Node* a : imp->aliases()) {
      const std::string name = tree.alias_name(*a);
      if (name == "*") continue;
      const std::string_view as = tree.name(*a);
      out[std::string(as.empty() ? std::string_view(name) : as)] = module + "." + name;
    }
  }
  return out;
}

/// The dotted name an expression stands for, through import aliases ("" if it is not a
/// Name/Attribute chain).
std::string qualified(const Tree& tree, const Node& n,
                      const std::unordered_map<std::string, std::string>& aliases) {
  if (n.kind() == NodeKind::Name) {
    const std::string id(tree.name(n));
    auto it = aliases.find(id);
    return it == aliases.end() ? id : it->second;
  }
  if (n.kind() == NodeKind::Attribute && n.value() != nullptr) {
    std::string base = qualified(tree, *n.value(), aliases);
    if (base.empty()) return "";
    return base + "." + std::string(tree.name(n));
  }
  return "";
}

/// The last component of the callee (`datasets.ImageFolder` -> "ImageFolder").
std::string_view last_name(const Tree& tree, const Node& func) {
  if (func.kind() == NodeKind::Name || func.kind() == NodeKind::Attribute) return tree.name(func);
  return {};
}

std::optional<std::string> literal(const Tree& tree, const Node* n) {
  if (n == nullptr || n->kind() != NodeKind::Constant || !n->has(syntax::kString) ||
      n->has(syntax::kBytes))
    return std::nullopt;
  return tree.string_value(*n);
}

const Node* keyword_value(const Tree& tree, const Node& call, std::string_view name) {
  for (const Node* k : call.keywords())
    if (tree.name(*k) == name) return k->value();
  return nullptr;
}

const Node* positional(const Node& call, std::size_t i) {
  std::size_t at = 0;
  for (const Node* a : call.args()) {
    if (a->kind() == NodeKind::Starred) return nullptr;
    if (at++ == i) return a;
  }
  return nullptr;
}

/// A literal that reads as a local file-system path.
bool looks_like_path(std::string_view v, bool name_says_path) {
  if (v.empty() || contains(v, "://") || v.size() > 4096) return false;
  if (contains(v, "\n") || contains(v, " ")) return false;
  if (v.front() == '/' || v.front() == '.' || v.front() == '~' || contains(v, "/")) return true;
  static constexpr std::array<std::string_view, 16> kExt = {
      ".txt",  ".json", ".csv", ".pt",   ".pth", ".bin",   ".npy", ".npz",
      ".yaml", ".yml",  ".pkl", ".ckpt", ".h5",  ".jsonl", ".tar", ".safetensors"};
  for (std::string_view e : kExt)
    if (v.size() > e.size() && v.substr(v.size() - e.size()) == e) return true;
  return name_says_path;
}

/// Classifies an argparse option by its names and help text: input, output, or not a path.
std::optional<StoragePath::Role> option_role(std::string_view words, bool* says_path) {
  const std::string w = lower(words);
  static constexpr std::array<std::string_view, 11> kOut = {
      "out",    "save", "ckpt",     "checkpoint",  "log",    "result",
      "export", "dump", "snapshot", "tensorboard", "exp_dir"};
  static constexpr std::array<std::string_view, 15> kIn = {
      "data",  "root",   "train",    "val",    "test", "input", "corpus", "vocab",
      "token", "resume", "pretrain", "weight", "file", "path",  "dir"};
  *says_path = contains(w, "dir") || contains(w, "path") || contains(w, "root") ||
               contains(w, "file") || contains(w, "folder");
  // "resume" and "pretrained" name checkpoints that are read, so inputs win over "ckpt".
  if (contains(w, "resume") || contains(w, "pretrain") || contains(w, "load")) {
    return StoragePath::Role::Input;
  }
  for (std::string_view k : kOut)
    if (contains(w, k)) return StoragePath::Role::Output;
  for (std::string_view k : kIn)
    if (contains(w, k)) return StoragePath::Role::Input;
  return std::nullopt;
}

bool is_main_guard(const Tree& tree, const Node& stmt) {
  if (stmt.kind() != NodeKind::If || stmt.test() == nullptr) return false;
  const Node& t = *stmt.test();
  if (t.kind() != NodeKind::Compare || t.left() == nullptr) return false;
  const Node* right = nullptr;
  for (const Node* c : t.comparators()) right = c;
  if (right == nullptr) return false;
  auto is_name = [&](const Node& n) {
    return n.kind() == NodeKind::Name && tree.name(n) == "__name__";
  };
  auto is_main = [&](const Node& n) {
    return literal(tree, &n) == std::optional<std::string>("__main__");
  };
  return (is_name(*t.left()) && is_main(*right)) || (is_main(*t.left()) && is_name(*right));
}

}  // namespace

StorageScan scan_storage_paths(const Tree& tree) {
  StorageScan scan;
  const auto aliases = import_aliases(tree);

  auto add = [&](StoragePath::Role role, const Node& at, std::string value, std::string kind,
                 std::string context) {
    const text::LineCol lc = tree.start(at);
    scan.paths.push_back(StoragePath{role, std::move(value), std::move(kind), std::move(context),
                                     lc.line, lc.column + 1});
  };

  for (const Node* call : tree.find_all(NodeKind::Call)) {
    const Node* func = call->func();
    if (func == nullptr) continue;
    const std::string q = qualified(tree, *func, aliases);
    const std::string_view last = last_name(tree, *func);

    if (q == "torch.multiprocessing.spawn" || q == "multiprocessing.spawn" ||
        (last == "spawn" && contains(q, "multiprocessing"))) {
      scan.spawn_lines.push_back(tree.start(*call).line);
      continue;
    }

    if (last == "add_argument" && func->kind() == NodeKind::Attribute) {
      const Node* def = keyword_value(tree, *call, "default");
      std::optional<std::string> value = literal(tree, def);
      if (!value) continue;
      std::string words, option;
      for (const Node* a : call->args()) {
        if (auto s = literal(tree, a)) {
          if (option.empty() || (s->rfind("--", 0) == 0 && option.rfind("--", 0) != 0)) option = *s;
          words += *s + " ";
        }
      }
      if (auto dest = literal(tree, keyword_value(tree, *call, "dest"))) words += *dest + " ";
      if (auto help = literal(tree, keyword_value(tree, *call, "help"))) words += *help;
      bool says_path = false;
      const std::optional<StoragePath::Role> role = option_role(words, &says_path);
      if (!role || !looks_like_path(*value, says_path)) continue;
      add(*role, *def, *value, "argparse", option);
      continue;
    }

    // Dataset constructors: ImageFolder, DatasetFolder, torchvision.datasets.*, *Dataset.
    const bool dataset = last == "ImageFolder" || last == "DatasetFolder" ||
                         q.rfind("torchvision.datasets.", 0) == 0 ||
                         (last.size() > 7 && last.substr(last.size() - 7) == "Dataset");
    if (dataset) {
      const Node* arg = keyword_value(tree, *call, "root");
      if (arg == nullptr) arg = keyword_value(tree, *call, "root_dir");
      if (arg == nullptr) arg = keyword_value(tree, *call, "data_dir");
      if (arg == nullptr) arg = positional(*call, 0);
      if (auto v = literal(tree, arg); v && looks_like_path(*v, true))
        add(StoragePath::Role::Input, *arg, *v, "dataset", std::string(last));
      continue;
    }

    if (q == "open" || q == "io.open" || q == "builtins.open") {
      const Node* path = positional(*call, 0);
      if (path == nullptr) path = keyword_value(tree, *call, "file");
      const Node* mode_node = positional(*call, 1);
      if (mode_node == nullptr) mode_node = keyword_value(tree, *call, "mode");
      const std::string mode = literal(tree, mode_node).value_or("r");
      if (auto v = literal(tree, path); v && looks_like_path(*v, true)) {
        const bool writes = contains(mode, "w") || contains(mode, "a") || contains(mode, "x");
        add(writes ? StoragePath::Role::Output : StoragePath::Role::Input, *path, *v, "open",
            "open(mode=\"" + mode + "\")");
      }
      continue;
    }

    if (q == "torch.save") {
      const Node* path = positional(*call, 1);
      if (path == nullptr) path = keyword_value(tree, *call, "f");
      if (auto v = literal(tree, path); v && looks_like_path(*v, true))
        add(StoragePath::Role::Output, *path, *v, "save", q);
      continue;
    }
    if (q == "torch.load" || q == "numpy.load" || q == "numpy.fromfile" || q == "numpy.memmap" ||
        q == "pandas.read_csv" || q == "safetensors.torch.load_file") {
      const Node* path = positional(*call, 0);
      if (path == nullptr) path = keyword_value(tree, *call, "f");
      if (path == nullptr) path = keyword_value(tree, *call, "filename");
      if (auto v = literal(tree, path); v && looks_like_path(*v, true))
        add(StoragePath::Role::Input, *path, *v, "load", q);
      continue;
    }
    if (q == "os.makedirs" || q == "os.mkdir") {
      const Node* path = positional(*call, 0);
      if (auto v = literal(tree, path); v && looks_like_path(*v, true))
        add(StoragePath::Role::Output, *path, *v, "makedirs", q);
      continue;
    }
    if (last == "SummaryWriter") {
      const Node* path = keyword_value(tree, *call, "log_dir");
      if (path == nullptr) path = positional(*call, 0);
      if (auto v = literal(tree, path); v && looks_like_path(*v, true))
        add(StoragePath::Role::Output, *path, *v, "log_dir", "SummaryWriter");
      continue;
    }
  }
  std::stable_sort(scan.paths.begin(), scan.paths.end(),
                   [](const StoragePath& a, const StoragePath& b) {
                     return a.line != b.line ? a.line < b.line : a.column < b.column;
                   });

  // Where an activating import goes: after the docstring and `from __future__` imports.
  const Node& root = tree.root();
  std::uint32_t after = 0;  // 1-based end line of the last statement that must stay first
  bool first = true;
  bool placed = false;
  for (const Node* stmt : root.body()) {
    const bool docstring = first && stmt->kind() == NodeKind::Expr && stmt->value() != nullptr &&
                           literal(tree, stmt->value()).has_value();
    const bool future = stmt->kind() == NodeKind::ImportFrom && tree.module(*stmt) == "__future__";
    first = false;
    if (docstring || future) {
      after = tree.end(*stmt).line;
      continue;
    }
    scan.insert_line = after > 0 ? after + 1 : tree.start(*stmt).line;
    placed = true;
    break;
  }
  if (!placed)
    scan.insert_line =
        after > 0 ? after + 1
                  : tree.lines().locate(static_cast<std::uint32_t>(tree.text().size())).line + 1;
  for (const Node* stmt : root.body())
    if (is_main_guard(tree, *stmt)) scan.has_main_guard = true;
  return scan;
}

}  // namespace torchport::rules
