// Rule family TP410-TP417: --distributed, a single-device training script made a DDP one.
//
// What it does (only with `migrate --distributed`, in --main and the modules it imports):
//   In the entry script given by --main, all of the below. In a project module it imports
//   (directly or through another), the rewrite of what the module holds, with only the helpers
//   that rewrite calls, reading the rank from the environment; no set-up, no clean-up
//   (companion_helpers).
//   TP410 inserts, after the imports, the process-group set-up from the environment torchrun
//   sets (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; defaults for a single
//   process), the device of this rank from LOCAL_RANK, init_process_group with the target's
//   collective backend (data/targets.json "backend"; accelerator: the backend torch reports for
//   the device), and small helpers (wrap_ddp, unwrap_ddp, shard_sampler, per_rank_batch,
//   is_rank0, rank0_only, cleanup_distributed; a name the script already uses gets a `_tp_`
//   spelling instead: _tp_local_rank).
//   TP411 wraps the model variable (--model-var, also `self.<var>`) in DistributedDataParallel
//   after its last binding (and the `.to()`/`.cuda()` calls right after it): `model =
//   wrap_ddp(model)`, which moves it to the rank's device first.
//   TP412 replaces torch.nn.DataParallel(m, device_ids=...) by wrap_ddp(m).
//   TP413 gives every training DataLoader a DistributedSampler with the loader's shuffle and
//   drop_last (the loader's own shuffle becomes the sampler's), and inserts
//   `<loader>.sampler.set_epoch(<epoch>)` at the top of the epoch loop. A loader bound to a
//   name that says val/test/eval is evaluation: it is not sharded (every rank evaluates the
//   whole set, rank 0 prints).
//   TP414 splits the global batch between the ranks: batch_size=B becomes
//   batch_size=per_rank_batch(B) (B // WORLD_SIZE, an error when it does not divide). With
//   --per-rank-batch keep the batch stays per device and an UNKNOWN row says the global batch
//   grows with the number of ranks.
//   TP415 runs side effects on rank 0 only: torch.save and `with open(..., "w")` blocks get
//   `if is_rank0():`; a TensorBoard SummaryWriter is created on rank 0 only
//   (`rank0_only(SummaryWriter)(...)`, a no-op stand-in elsewhere); print, logging, wandb and
//   TensorBoard writer calls become
//   `rank0_only(print)(...)`, so that their arguments are still evaluated on every rank
//   (`print(evaluate(model))` runs DDP's forward, a collective when the model has buffers).
//   TP416 calls cleanup_distributed() (destroy_process_group) at the end of the
//   `if __name__ == "__main__":` block, or of the module.
//   TP417 takes the module out of DDP for state_dict() / load_state_dict() of the model
//   variable: `unwrap_ddp(model).state_dict()` has no `module.` prefix, so single-device
//   loading keeps working.
// Why:
//   torchrun starts one process per device; each needs its process group, its device, its
//   shard of the data, and gradients averaged by DDP. With the global batch split, N ranks with
//   batch B/N compute the same gradient as one device with batch B.
// Example:
//   model = Net().cuda()
//   loader = DataLoader(ds, batch_size=32, shuffle=True)
//   for epoch in range(3):
//       for x, y in loader: ...
//       print(epoch)
// Becomes (npu):
//   model = Net().npu()
//   model = wrap_ddp(model)
//   loader = DataLoader(ds, batch_size=per_rank_batch(32), sampler=shard_sampler(ds,
//                       shuffle=True, drop_last=False))
//   for epoch in range(3):
//       loader.sampler.set_epoch(epoch)
//       for x, y in loader: ...
//       rank0_only(print)(epoch)
// Safety:
//   A script that cannot be converted (no DataLoader, the model never bound, already using
//   torch.distributed) is refused by the driver before anything is written
//   (distributed_refusal). A loader with its own sampler is reported UNSUPPORTED and left
//   alone; a dataset that is not a name is bound once, `DataLoader((train_dataset := ds(...)),
//   ..., sampler=shard_sampler(train_dataset, ...))`, so it is built once as before.
//   DistributedSampler(shuffle=True) draws another random order than the loader's RandomSampler;
//   with drop_last=False it pads the last shard with repeated samples when the dataset does not
//   divide by the ranks.
#include <torchport/rules/context.h>
#include <torchport/syntax/tree.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

namespace torchport::rules {

namespace {

/// TP411 (ddp-wrap): --distributed: the model variable wrapped in DistributedDataParallel. Its one
/// producer: every TP411 finding is made here.
void tp411(Context& ctx, Draft d) { ctx.add("TP411", std::move(d)); }

/// TP412 (data-parallel-to-ddp): --distributed: torch.nn.DataParallel becomes
/// DistributedDataParallel. Its one producer: every TP412 finding is made here.
void tp412(Context& ctx, Draft d) { ctx.add("TP412", std::move(d)); }

/// TP413 (distributed-sampler): --distributed: DistributedSampler for training DataLoaders,
/// set_epoch in the epoch loop. Its one producer: every TP413 finding is made here.
void tp413(Context& ctx, Draft d) { ctx.add("TP413", std::move(d)); }

/// TP414 (per-rank-batch): --distributed: the global batch split between the ranks. Its one
/// producer: every TP414 finding is made here.
void tp414(Context& ctx, Draft d) { ctx.add("TP414", std::move(d)); }

/// TP415 (rank-zero-side-effect): --distributed: print, logging, saving and file writes on rank 0
/// only. Its one producer: every TP415 finding is made here.
void tp415(Context& ctx, Draft d) { ctx.add("TP415", std::move(d)); }

/// TP416 (destroy-process-group): --distributed: destroy_process_group() at the end. Its one
/// producer: every TP416 finding is made here.
void tp416(Context& ctx, Draft d) { ctx.add("TP416", std::move(d)); }

/// TP417 (ddp-state-dict): --distributed: state_dict()/load_state_dict() of the module inside DDP
/// (no `module.`). Its one producer: every TP417 finding is made here.
void tp417(Context& ctx, Draft d) { ctx.add("TP417", std::move(d)); }

}  // namespace

/// TP410 (ddp-setup): --distributed: process group from torchrun's environment, the rank's device,
/// helpers. Its one producer: every TP410 finding is made here.
Finding tp410(Draft d) { return finding("TP410", std::move(d)); }

using semantic::TokenIndex;
using syntax::Node;
using syntax::NodeKind;
using syntax::Role;
using syntax::TokenKind;

namespace {

std::string_view bare_var(std::string_view var) {
  return var.starts_with("self.") ? var.substr(5) : var;
}

/// `model` or `self.model` for --model-var model.
bool is_var(const syntax::Tree& t, const Node* n, std::string_view var) {
  if (!n) return false;
  var = bare_var(var);
  if (n->kind() == NodeKind::Name) return t.name(*n) == var;
  if (n->kind() == NodeKind::Attribute) {
    const Node* v = n->value();
    return t.name(*n) == var && v && v->kind() == NodeKind::Name && t.name(*v) == "self";
  }
  return false;
}

std::string qualified(const semantic::Model& m, const Node* func) {
  if (!func) return {};
  const semantic::Reference* r = m.reference_at(func->last_token());
  if (r && r->last == func->last_token()) return r->qualified;
  return {};
}

bool is_dataloader(std::string_view q) {
  return q == "torch.utils.data.DataLoader" || q == "torch.utils.data.dataloader.DataLoader";
}
bool is_data_parallel(std::string_view q) {
  return q == "torch.nn.DataParallel" || q == "torch.nn.parallel.DataParallel" ||
         q == "torch.nn.parallel.data_parallel.DataParallel";
}

/// A loader bound to a name that says val, test or eval is evaluation: not sharded.
bool evaluation_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t dot = lower.rfind('.');
  const std::string leaf = lower.substr(dot == std::string::npos ? 0 : dot + 1);
  return leaf.find("val") != std::string::npos || leaf.find("test") != std::string::npos ||
         leaf.find("eval") != std::string::npos;
}

const Node* statement_of(const Node* n) {
  while (n && !syntax::is_statement(n->kind())) n = n->parent();
  return n;
}

/// The whitespace before `offset` on its line, or nullopt when code precedes it.
std::optional<std::string> indent_before(std::string_view text, std::uint32_t offset) {
  std::uint32_t b = offset;
  while (b > 0 && text[b - 1] != '\n' && text[b - 1] != '\r') --b;
  std::string_view ws = text.substr(b, offset - b);
  if (ws.find_first_not_of(" \t") != std::string_view::npos) return std::nullopt;
  return std::string(ws);
}

const Node* keyword_arg(const syntax::Tree& t, const Node& call, std::string_view name) {
  for (const Node* k : call.keywords())
    if (t.name(*k) == name) return k;
  return nullptr;
}
const Node* positional(const Node& call, std::size_t i) {
  std::size_t k = 0;
  for (const Node* a : call.args()) {
    if (a->kind() == NodeKind::Starred) return nullptr;
    if (k++ == i) return a;
  }
  return nullptr;
}

// The helpers and names TP410-TP417 add: internal spelling -> the plain name the output uses
// (longest internal names first, so that one is never replaced inside another).
constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kHelperNames = {{
    {"_TpDistributedSampler", "DistributedSampler"},
    {"_tp_rank0_only", "rank0_only"},
    {"_tp_rank_device", "rank_device"},
    {"_tp_rank_batch", "per_rank_batch"},
    {"_tp_local_rank", "local_rank"},
    {"_tp_cleanup", "cleanup_distributed"},
    {"_tp_sampler", "shard_sampler"},
    {"_tp_dataset", "train_dataset"},
    {"_tp_unwrap", "unwrap_ddp"},
    {"_tp_rank0", "is_rank0"},
    {"_tp_dist", "dist"},
    {"_tp_ddp", "wrap_ddp"},
    {"_TpSilent", "Silent"},
    {"_TpDDP", "DDP"},
}};

// Helper definitions that the entry script's block and an imported module's block share, in
// internal spelling (spell() gives the output's names).
const std::vector<std::string> kSilentAndRank0Only = {
    "class _TpSilent:",
    "    \"\"\"What rank0_only gives the other ranks: every call, attribute and `with` of it is a "
    "no-op.\"\"\"",
    "",
    "    def __call__(self, *args, **kwargs):",
    "        return self",
    "",
    "    def __getattr__(self, name):",
    "        return self",
    "",
    "    def __enter__(self):",
    "        return self",
    "",
    "    def __exit__(self, *exc):",
    "        return False",
    "",
    "",
    "def _tp_rank0_only(fn):",
    "    \"\"\"fn on rank 0, a no-op elsewhere (the arguments are evaluated on every rank).\"\"\"",
    "    return fn if _tp_rank0() else _TpSilent()",
};
const std::vector<std::string> kUnwrap = {
    "def _tp_unwrap(module):",
    "    \"\"\"The module inside DDP: its state_dict has no `module.` prefix.\"\"\"",
    "    return module.module if isinstance(module, _TpDDP) else module",
};
// per_rank_batch, after its `world = ...` line.
const std::vector<std::string> kRankBatchCheck = {
    "    if batch_size % world:",
    "        raise ValueError(",
    "            f\"torchport --distributed: the global batch size {batch_size} does not divide \"",
    "            f\"between {world} ranks (migrate with --per-rank-batch keep, or change it)\"",
    "        )",
    "    return batch_size // world",
};
/// A DataLoader TP413 gives a sampler, or one a function of an imported project module returns.
struct Loader {
  const Node* call = nullptr;  ///< the DataLoader call; nullptr for a returned loader
  std::string name;            ///< the bound name's text ("train_loader", "self.loader"), or ""
  const Node* stmt = nullptr;  ///< the statement that binds it
};

/// What the codes of --distributed share in one file: its text, the model variable, the names
/// the rewrite adds, spelled as a maintainer would write them (the `_tp_` spelling only where the
/// script already uses the plain name: any name token of the file), and the helpers the fixes
/// call.
class Ddp {
 public:
  explicit Ddp(Context& c);

  Context& ctx;
  const semantic::Model& m;
  const syntax::Tree& t;
  const std::string_view text;
  const std::string nl;
  const bool companion;   ///< a module the entry script imports (Options::distributed_companion)
  const std::string var;  ///< --model-var without `self.`
  const std::string T;    ///< the torch module's name in this file

  /// The output's spelling of helper `internal` ("_tp_ddp" -> "wrap_ddp"), for a message.
  const std::string& name(std::string_view internal) const { return names_.find(internal)->second; }
  /// The same, for the text of a fix: the helper is recorded as called (a module the entry
  /// script imports defines only the helpers its fixes call).
  const std::string& call(std::string_view internal) {
    called_.insert(std::string(internal));
    return name(internal);
  }
  bool called(std::string_view internal) const { return called_.contains(internal); }
  /// A generated line with every helper name spelled as chosen (longest names first).
  std::string spell(std::string line) const;
  /// The end of the logical line of `stmt`.
  std::uint32_t line_end(const Node& stmt) const {
    auto l = m.line_of(stmt.last_token());
    return l ? m.lines()[*l].end : t.byte_range(stmt).end;
  }
  /// Nothing but trivia between the statement and its NEWLINE (no `; more`).
  bool ends_line(const Node& stmt) const;
  std::string node_text(const Node* n) const { return std::string(t.text(*n)); }
  /// True when an insertion at `at` is at the end of a text without a final newline.
  bool at_unterminated_end(std::uint32_t at) const {
    return at == text.size() && !text.empty() && text.back() != '\n' && text.back() != '\r';
  }

  /// TP413: the loaders given a sampler (TP414 splits their batch; set_epoch goes in the epoch
  /// loop of those bound to a name).
  std::vector<Loader> sharded;

 private:
  std::map<std::string, std::string, std::less<>> names_;
  std::set<std::string, std::less<>> called_;
};

Ddp::Ddp(Context& c)
    : ctx(c),
      m(c.m),
      t(c.tree),
      text(c.m.text()),
      nl(c.m.newline()),
      companion(c.opts.distributed_companion),
      var(bare_var(c.opts.model_var)),
      T(c.render("torch")) {
  std::set<std::string_view> used;
  for (TokenIndex i = 0; i < m.tokens().size(); ++i)
    if (m.kind(i) == TokenKind::Name) used.insert(m.token_text(i));
  for (const auto& [internal, plain] : kHelperNames)
    names_.emplace(internal, used.contains(plain) ? std::string(internal) : std::string(plain));
}

std::string Ddp::spell(std::string line) const {
  for (const auto& [internal, plain] : kHelperNames) {
    const std::string& to = name(internal);
    std::size_t at = line.find(internal);
    while (at != std::string::npos) {
      const std::size_t end = at + internal.size();
      if (end < line.size() &&
          (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) {
        at = line.find(internal, at + 1);  // a longer name
        continue;
      }
      line.replace(at, internal.size(), to);
      at = line.find(internal, at + to.size());
    }
  }
  return line;
}

bool Ddp::ends_line(const Node& stmt) const {
  for (TokenIndex i = stmt.last_token() + 1; i < m.tokens().size(); ++i) {
    const TokenKind k = m.kind(i);
    if (k == TokenKind::Newline) return true;
    if (!syntax::is_trivia(k)) return false;
  }
  return true;
}

/// `import os` unless the file binds os (then its name goes to `os`).
std::string import_os(const Ddp& d, std::string& os) {
  if (auto alias = d.m.module_alias("os")) {
    os = *alias;
    return {};
  }
  os = "os";
  return "import os" + d.nl;
}

/// The block inserted at `at` (after the imports), with the blank lines PEP 8 wants after it.
std::string after_imports(const Ddp& d, std::uint32_t at, std::string block, bool pep8_blanks) {
  if (pep8_blanks) {
    // Two blank lines after the last helper, counting the ones already there.
    int blank = 0;
    for (std::size_t i = at; i < d.text.size() && blank < 2;) {
      std::size_t e = d.text.find('\n', i);
      if (e == std::string_view::npos) break;
      if (d.text.substr(i, e - i).find_first_not_of(" \t\r\f") != std::string_view::npos) break;
      ++blank;
      i = e + 1;
    }
    for (int k = blank; k < 2 && at < d.text.size(); ++k) block += d.nl;
  }
  return (d.at_unterminated_end(at) ? d.nl : std::string()) + block;
}

/// Where TP410 inserts its block: after the import block and the first torch import.
std::uint32_t setup_offset(const Ddp& d) {
  return std::max(d.m.import_block_end(), d.m.after_first_torch_import().value_or(0));
}

// TP410 in a module the entry script imports: only the helpers its rewritten code calls, which
// read the rank from the environment torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE), so that they
// also work while the module is being imported, before the entry script has set up the process
// group. No set-up and no clean-up here: those are the entry script's.
std::vector<std::string> module_helper_lines(const Ddp& d, const std::string& os) {
  const bool ddp = d.called("_tp_ddp"), unwrap = d.called("_tp_unwrap");
  const bool sampler = d.called("_tp_sampler"), batch = d.called("_tp_rank_batch");
  const bool only = d.called("_tp_rank0_only"), rank0 = only || d.called("_tp_rank0");
  const std::string& T = d.T;
  std::vector<std::string> lines = {
      "",
      "# torchport --distributed: this module runs in each process that torchrun starts for " +
          d.ctx.opts.distributed_main + ",",
      "# which sets up the process group. These helpers read the rank from torchrun's "
      "environment.",
  };
  if (ddp || unwrap)
    lines.push_back("from torch.nn.parallel import DistributedDataParallel as _TpDDP");
  if (sampler)
    lines.push_back(d.name("_TpDistributedSampler") == "DistributedSampler"
                        ? "from torch.utils.data.distributed import DistributedSampler"
                        : "from torch.utils.data.distributed import DistributedSampler as "
                          "_TpDistributedSampler");
  auto add = [&](const std::vector<std::string>& more) {
    lines.push_back("");
    lines.push_back("");
    lines.insert(lines.end(), more.begin(), more.end());
  };
  if (rank0)
    add({"def _tp_rank0():",
         "    \"\"\"True on the process that prints, logs and saves (rank 0).\"\"\"",
         "    return int(" + os + ".environ.get(\"RANK\", \"0\")) == 0"});
  if (only) add(kSilentAndRank0Only);
  if (ddp) {
    std::vector<std::string> body = {
        "def _tp_ddp(module):",
        "    \"\"\"The module on this rank's device, in DistributedDataParallel (once).\"\"\"",
        "    if isinstance(module, _TpDDP):", "        return module"};
    const catalogue::Target& target = d.ctx.target;
    if (d.ctx.accelerator()) {
      body.push_back("    _tp_local_rank = int(" + os + ".environ.get(\"LOCAL_RANK\", \"0\"))");
      body.push_back("    if " + T + ".accelerator.is_available():");
      body.push_back("        device = " + T + ".device(" + T +
                     ".accelerator.current_accelerator().type, _tp_local_rank)");
      body.push_back("        return _TpDDP(module.to(device), device_ids=[_tp_local_rank])");
      body.push_back("    return _TpDDP(module.to(\"cpu\"))");
    } else if (target.device_index && !target.host) {
      body.push_back("    _tp_local_rank = int(" + os + ".environ.get(\"LOCAL_RANK\", \"0\"))");
      body.push_back("    device = " + T + ".device(\"" + target.device + "\", _tp_local_rank)");
      body.push_back("    return _TpDDP(module.to(device), device_ids=[_tp_local_rank])");
    } else {
      body.push_back("    return _TpDDP(module.to(" + T + ".device(\"" + target.device + "\")))");
    }
    add(body);
  }
  if (unwrap) add(kUnwrap);
  if (sampler)
    add({"def _tp_sampler(dataset, shuffle, drop_last):",
         "    \"\"\"This rank's shard of dataset, with the DataLoader's shuffle and "
         "drop_last.\"\"\"",
         "    return _TpDistributedSampler(", "        dataset,",
         "        num_replicas=int(" + os + ".environ.get(\"WORLD_SIZE\", \"1\")),",
         "        rank=int(" + os + ".environ.get(\"RANK\", \"0\")),", "        shuffle=shuffle,",
         "        drop_last=drop_last,", "    )"});
  if (batch) {
    std::vector<std::string> body = {
        "def _tp_rank_batch(batch_size):",
        "    \"\"\"The global batch split between the ranks (--per-rank-batch split).\"\"\"",
        "    world = int(" + os + ".environ.get(\"WORLD_SIZE\", \"1\"))"};
    body.insert(body.end(), kRankBatchCheck.begin(), kRankBatchCheck.end());
    add(body);
  }
  return lines;
}

void tp410_module_helpers(Ddp& d) {
  const bool any = d.called("_tp_ddp") || d.called("_tp_unwrap") || d.called("_tp_sampler") ||
                   d.called("_tp_rank_batch") || d.called("_tp_rank0_only") ||
                   d.called("_tp_rank0");
  if (!any) return;  // nothing distributed here
  std::string os;
  std::string block = import_os(d, os);
  if (d.called("_tp_ddp") && !d.m.module_alias("torch")) block += "import torch" + d.nl;
  for (const std::string& l : module_helper_lines(d, os)) block += d.spell(l) + d.nl;
  const std::uint32_t at = setup_offset(d);
  d.ctx.add(
      d.ctx.rewrite(
          "torch.distributed",
          "the --distributed helpers this module calls (the rank from torchrun's environment; "
          "the process group is set up by " +
              d.ctx.opts.distributed_main + ")",
          at, at, after_imports(d, at, std::move(block), true)),
      tp410);
}

}  // namespace

std::optional<TokenIndex> uses_torch_distributed(const semantic::Model& m) {
  for (const semantic::Import& im : m.imports()) {
    if (im.target.starts_with("torch.distributed") ||
        im.target.starts_with("torch.nn.parallel.DistributedDataParallel") ||
        im.target.starts_with("torch.nn.parallel.distributed"))
      return im.module_begin;
  }
  for (const semantic::Reference& r : m.references()) {
    const std::string& q = r.qualified;
    if (q.starts_with("torch.distributed") ||
        q.starts_with("torch.nn.parallel.DistributedDataParallel") ||
        q.starts_with("torch.nn.parallel.distributed"))
      return r.first;
  }
  return std::nullopt;
}

std::string distributed_refusal(
    const syntax::Tree& tree, const semantic::Model& m, std::string_view model_var,
    const std::vector<std::pair<const syntax::Tree*, const semantic::Model*>>& imported) {
  auto where = [&](std::uint32_t offset) {
    text::LineCol lc = tree.lines().locate(offset);
    return tree.path() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column + 1) + ": ";
  };
  if (auto tok = uses_torch_distributed(m))
    return where(m.tokens()[*tok].begin) +
           "the script already uses torch.distributed: it is distributed already, nothing was "
           "converted";
  std::vector<std::pair<const syntax::Tree*, const semantic::Model*>> all = {{&tree, &m}};
  all.insert(all.end(), imported.begin(), imported.end());
  bool loader = false;
  for (const auto& [t, mm] : all)
    for (const Node* call : t->find_all(NodeKind::Call))
      if (is_dataloader(qualified(*mm, call->func()))) loader = true;
  if (!loader)
    return where(0) +
           "no torch.utils.data.DataLoader (in the script or the project modules it imports): "
           "--distributed shards the data through a DataLoader's sampler, and this script loads "
           "its data another way";
  for (const auto& [t, mm] : all) {
    for (const Node* a : t->find_all(NodeKind::Assign))
      for (const Node* tgt : a->targets())
        if (is_var(*t, tgt, model_var)) return {};
    for (const Node* a : t->find_all(NodeKind::AnnAssign))
      if (is_var(*t, a->target(), model_var)) return {};
  }
  return where(0) + "the model is never bound to `" + std::string(bare_var(model_var)) +
         "` (nor `self." + std::string(bare_var(model_var)) +
         "`): name the variable that holds the model with --model-var";
}

std::vector<std::string> imported_module_paths(const syntax::Tree& tree, std::string_view file,
                                               std::string_view script_dir) {
  auto dir_of = [](std::string_view p) {
    const std::size_t slash = p.rfind('/');
    return slash == std::string_view::npos ? std::string() : std::string(p.substr(0, slash));
  };
  auto join = [](const std::string& dir, std::string_view dotted) {
    std::string path = dir;
    std::size_t start = 0;
    while (start <= dotted.size()) {
      const std::size_t dot = std::min(dotted.find('.', start), dotted.size());
      if (dot > start) {
        if (!path.empty()) path += '/';
        path += dotted.substr(start, dot - start);
      }
      start = dot + 1;
    }
    return path;
  };
  std::vector<std::string> out;
  auto add_module = [&](const std::string& base) {
    if (base.empty()) return;
    out.push_back(base + ".py");
    out.push_back(base + "/__init__.py");
  };
  const std::vector<std::string> roots = {std::string(script_dir), std::string()};
  for (const Node* n : tree.find_all(NodeKind::Import)) {
    for (const Node* al : n->aliases()) {
      const std::string name = tree.alias_name(*al);
      for (const std::string& r : roots) {
        // `import a.b.c` runs a/__init__.py, a/b/__init__.py and a/b/c.py
        std::string prefix;
        for (std::size_t at = 0; at <= name.size();) {
          const std::size_t dot = std::min(name.find('.', at), name.size());
          prefix = name.substr(0, dot);
          add_module(join(r, prefix));
          at = dot + 1;
        }
      }
    }
  }
  for (const Node* n : tree.find_all(NodeKind::ImportFrom)) {
    const std::uint32_t level = tree.level(*n);
    const std::string module = tree.module(*n);
    std::vector<std::string> bases;
    if (level > 0) {
      std::string dir = dir_of(file);
      for (std::uint32_t k = 1; k < level; ++k) dir = dir_of(dir);
      bases.push_back(join(dir, module));
    } else {
      for (const std::string& r : roots) bases.push_back(join(r, module));
    }
    for (const std::string& b : bases) {
      if (!module.empty()) add_module(b);
      // `from pkg import mod` imports pkg/mod.py when mod is a module
      for (const Node* al : n->aliases()) {
        const std::string name = tree.alias_name(*al);
        if (name != "*") add_module(b.empty() ? name : b + "/" + name);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> loader_functions(const syntax::Tree& tree, const semantic::Model& m,
                                          std::string_view module) {
  std::vector<std::string> out;
  for (const Node* call : tree.find_all(NodeKind::Call)) {
    if (!is_dataloader(qualified(m, call->func()))) continue;
    // a loader with its own sampler is not sharded (TP413 reports it): no set_epoch for it
    if (keyword_arg(tree, *call, "sampler") || keyword_arg(tree, *call, "batch_sampler") ||
        positional(*call, 3))
      continue;
    const Node* fn = nullptr;  // the outermost function around the call
    for (const Node* p = call->parent(); p; p = p->parent())
      if (p->kind() == NodeKind::FunctionDef || p->kind() == NodeKind::AsyncFunctionDef) fn = p;
    if (!fn || fn->parent() != &tree.root()) continue;  // a module-level function only
    const Node* stmt = statement_of(call);
    std::string bound;
    if (stmt && stmt->kind() == NodeKind::Assign && stmt->value() == call) {
      auto tg = stmt->targets();
      if (tg.size() == 1) bound = std::string(tree.text(**tg.begin()));
    }
    const std::string name(tree.name(*fn));
    if (evaluation_name(bound) || (bound.empty() && evaluation_name(name))) continue;
    out.push_back(std::string(module) + "." + name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// ---- TP412: DataParallel -> DDP ----
void tp412_data_parallel(Ddp& d) {
  const syntax::Tree& t = d.t;
  for (const Node* call : t.find_all(NodeKind::Call)) {
    if (!is_data_parallel(qualified(d.m, call->func()))) continue;
    const Node* first = positional(*call, 0);
    if (!first) first = keyword_arg(t, *call, "module");
    if (!first) continue;
    Draft f;
    f.op = Operation::Modify;
    f.api = "torch.nn.DataParallel";
    f.message = "nn.DataParallel becomes DistributedDataParallel on this rank's device (" +
                d.name("_tp_ddp") +
                "); its "
                "device_ids/output_device/dim are dropped: torchrun runs one process per device";
    auto [cb, ce] = t.byte_range(*call);
    f.begin = cb;
    f.end = ce;
    auto [fb, fe] = t.byte_range(*call->func());
    auto [ab, ae] = t.byte_range(*first);
    fix::Fix fx;
    fx.edits.push_back({fb, fe, d.call("_tp_ddp")});
    if (first->kind() == NodeKind::keyword) ab = t.byte_range(*first->value()).begin;
    fx.edits.push_back({fe, ab, "("});
    fx.edits.push_back({ae, ce, ")"});
    f.fix = std::move(fx);
    // The dropped arguments take the findings inside them along (device_ids=list(range(
    // torch.cuda.device_count()))): their code is gone.
    f.drops = {ae, ce};
    tp412(d.ctx, std::move(f));
  }
}

/// The Assign/AnnAssign statements that bind the model variable, in source order.
std::vector<const Node*> model_bindings(const Ddp& d) {
  std::vector<const Node*> bindings;
  for (const Node* n : d.t.find_all(NodeKind::Assign))
    for (const Node* tgt : n->targets())
      if (is_var(d.t, tgt, d.var)) bindings.push_back(n);
  for (const Node* n : d.t.find_all(NodeKind::AnnAssign))
    if (is_var(d.t, n->target(), d.var)) bindings.push_back(n);
  std::sort(bindings.begin(), bindings.end(),
            [](const Node* a, const Node* b) { return a->first_token() < b->first_token(); });
  return bindings;
}

// ---- TP411: wrap the model after its last binding ----
void tp411_wrap_model(Ddp& d) {
  const syntax::Tree& t = d.t;
  const std::vector<const Node*> bindings = model_bindings(d);
  if (bindings.empty()) return;
  const Node* first = bindings.front();
  const Node* parent = first->parent();
  std::vector<const Node*> siblings;
  for (const Node* c : parent->children(first->role())) siblings.push_back(c);
  std::size_t last = 0;
  for (std::size_t i = 0; i < siblings.size(); ++i)
    if (std::find(bindings.begin(), bindings.end(), siblings[i]) != bindings.end()) last = i;
  const Node* binding = siblings[last];
  std::string target_text;
  for (const Node* tgt :
       binding->kind() == NodeKind::Assign
           ? std::vector<const Node*>(binding->targets().begin(), binding->targets().end())
           : std::vector<const Node*>{binding->target()})
    if (is_var(t, tgt, d.var)) target_text = d.node_text(tgt);
  // Method calls on the model right after it (`model.to(device)`, `model.train()`).
  std::size_t after = last;
  while (after + 1 < siblings.size()) {
    const Node* s = siblings[after + 1];
    const Node* v = s->kind() == NodeKind::Expr ? s->value() : nullptr;
    const Node* f = v && v->kind() == NodeKind::Call ? v->func() : nullptr;
    if (!f || f->kind() != NodeKind::Attribute || !is_var(t, f->value(), d.var)) break;
    ++after;
  }
  const Node* anchor = siblings[after];
  // `model = nn.DataParallel(model)` last: TP412 already makes it the DDP wrap.
  const Node* bv = binding->value();
  if (bv && bv->kind() == NodeKind::Call && is_data_parallel(qualified(d.m, bv->func()))) return;
  auto indent = indent_before(d.text, t.byte_range(*binding).begin);
  const std::string wrap = target_text + " = " + d.name("_tp_ddp") + "(" + target_text + ")";
  auto [b, e] = t.byte_range(*binding);
  if (d.companion && binding->parent() == &t.root()) {
    // Module-level code of an imported module runs while the entry script imports it, before
    // the entry script has set up the process group, which DistributedDataParallel needs.
    tp411(d.ctx,
          report(Operation::Unsupported, "torch.nn.parallel.DistributedDataParallel",
                 target_text + " is bound when this module is imported, before " +
                     d.ctx.opts.distributed_main + " sets up the process group: wrap it there (`" +
                     wrap + "`) after the set-up",
                 b, e));
  } else if (indent && d.ends_line(*anchor)) {
    const std::uint32_t at = d.line_end(*anchor);
    tp411(d.ctx,
          d.ctx.rewrite(
              "torch.nn.parallel.DistributedDataParallel",
              "wrap " + target_text +
                  " in DistributedDataParallel on this rank's device (after its last binding)",
              at, at,
              (d.at_unterminated_end(at) ? d.nl : std::string()) + *indent + target_text + " = " +
                  d.call("_tp_ddp") + "(" + target_text + ")" + d.nl));
  } else {
    tp411(d.ctx,
          report(Operation::Unsupported, "torch.nn.parallel.DistributedDataParallel",
                 "the binding of " + target_text +
                     " shares its line with other code: wrap it in DDP by hand (`" + wrap + "`)",
                 b, e));
  }
}

// ---- TP417: state_dict without the `module.` prefix ----
void tp417_state_dict(Ddp& d) {
  const syntax::Tree& t = d.t;
  for (const Node* call : t.find_all(NodeKind::Call)) {
    const Node* f = call->func();
    if (!f || f->kind() != NodeKind::Attribute) continue;
    const std::string_view name = t.name(*f);
    if (name != "state_dict" && name != "load_state_dict") continue;
    const Node* recv = f->value();
    if (!is_var(t, recv, d.var)) continue;
    auto [rb, re] = t.byte_range(*recv);
    Draft fd;
    fd.op = Operation::Modify;
    fd.api = std::string(name);
    fd.message = std::string(name) + "() of the module inside DDP (" + d.name("_tp_unwrap") +
                 "): no `module.` " +
                 "prefix, so single-device code loads the checkpoint as before";
    fd.begin = rb;
    fd.end = t.byte_range(*call).end;
    fix::Fix fx;
    fx.edits.push_back({rb, rb, d.call("_tp_unwrap") + "("});
    fx.edits.push_back({re, re, ")"});
    fd.fix = std::move(fx);
    tp417(d.ctx, std::move(fd));
  }
}

/// The name a DataLoader call is bound to (`train_loader = DataLoader(...)`), or "".
std::string bound_name(const Ddp& d, const Node* call, const Node* stmt) {
  if (!stmt || stmt->kind() != NodeKind::Assign || stmt->value() != call) return {};
  auto tg = stmt->targets();
  if (tg.size() == 1 &&
      ((*tg.begin())->kind() == NodeKind::Name || (*tg.begin())->kind() == NodeKind::Attribute))
    return d.node_text(*tg.begin());
  return {};
}

/// TP413's fix for one DataLoader with dataset `ds` (`ds_kw`: its keyword, if any): a
/// DistributedSampler with the loader's shuffle and drop_last.
fix::Fix sampler_fix(Ddp& d, const Node& call, const Node* ds, const Node* ds_kw,
                     const std::string& shuffle, const std::string& drop) {
  const syntax::Tree& t = d.t;
  const Node* shuffle_kw = keyword_arg(t, call, "shuffle");
  const Node* shuffle_pos = positional(call, 2);
  fix::Fix fx;
  // The sampler needs the loader's dataset: a name is repeated; any other expression is
  // bound once with a walrus (arguments are evaluated left to right, the sampler comes
  // after it).
  std::string ds_ref = d.node_text(ds);
  if (ds->kind() != NodeKind::Name && ds->kind() != NodeKind::Attribute) {
    auto [db, de] = t.byte_range(*ds);
    fx.edits.push_back({db, db, "(" + d.call("_tp_dataset") + " := "});
    fx.edits.push_back({de, de, ")"});
    ds_ref = d.call("_tp_dataset");
  }
  const std::string sampler = "sampler=" + d.call("_tp_sampler") + "(" + ds_ref +
                              ", shuffle=" + shuffle + ", drop_last=" + drop + ")";
  // In place of `shuffle=` (DataLoader refuses both), unless the dataset is a keyword that
  // comes after it; otherwise after the last argument (a trailing comma stays valid).
  const bool in_place = shuffle_kw && !(ds_kw && ds_kw->first_token() > shuffle_kw->first_token());
  if (in_place) {
    auto [kb, ke] = t.byte_range(*shuffle_kw);
    fx.edits.push_back({kb, ke, sampler});
  } else {
    if (shuffle_pos || shuffle_kw) {
      auto [pb, pe] = t.byte_range(shuffle_pos ? *shuffle_pos : *shuffle_kw->value());
      fx.edits.push_back({pb, pe, "False"});
    }
    std::uint32_t after_last = 0;
    for (const Node* c : call.children())
      if (c->role() == Role::Arg || c->role() == Role::Keyword)
        after_last = std::max(after_last, t.byte_range(*c).end);
    fx.edits.push_back({after_last, after_last, ", " + sampler});
  }
  return fx;
}

// ---- TP413: a DistributedSampler for every training DataLoader ----
void tp413_samplers(Ddp& d) {
  const syntax::Tree& t = d.t;
  for (const Node* call : t.find_all(NodeKind::Call)) {
    if (!is_dataloader(qualified(d.m, call->func()))) continue;
    const Node* stmt = statement_of(call);
    const std::string bound = bound_name(d, call, stmt);
    auto [cb, ce] = t.byte_range(*call);
    if (evaluation_name(bound)) continue;  // every rank evaluates the whole set (docs/migrate.md)
    if (keyword_arg(t, *call, "sampler") || keyword_arg(t, *call, "batch_sampler") ||
        positional(*call, 3)) {
      tp413(d.ctx, report(Operation::Unsupported, "torch.utils.data.DataLoader",
                          "this DataLoader has its own sampler: shard it between the ranks by hand "
                          "(DistributedSampler)",
                          cb, ce));
      continue;
    }
    const Node* ds = positional(*call, 0);
    const Node* ds_kw = nullptr;
    if (!ds) {
      ds_kw = keyword_arg(t, *call, "dataset");
      if (ds_kw) ds = ds_kw->value();
    }
    if (!ds) {
      tp413(d.ctx,
            report(Operation::Unsupported, "torch.utils.data.DataLoader",
                   "no dataset argument: shard it between the ranks by hand (DistributedSampler)",
                   cb, ce));
      continue;
    }
    const Node* shuffle_kw = keyword_arg(t, *call, "shuffle");
    const Node* shuffle_pos = positional(*call, 2);
    const Node* drop_kw = keyword_arg(t, *call, "drop_last");
    const std::string shuffle = shuffle_kw    ? d.node_text(shuffle_kw->value())
                                : shuffle_pos ? d.node_text(shuffle_pos)
                                              : "False";
    const std::string drop = drop_kw ? d.node_text(drop_kw->value()) : "False";
    Draft f;
    f.op = Operation::Modify;
    f.api = "torch.utils.data.DataLoader";
    f.message = "DistributedSampler for " + (bound.empty() ? std::string("this loader") : bound) +
                ": each rank loads its shard (shuffle=" + shuffle + ", drop_last=" + drop +
                " kept; DistributedSampler shuffles with its own seed per epoch and, without "
                "drop_last, pads the last shard with repeated samples)";
    f.begin = cb;
    f.end = ce;
    f.fix = sampler_fix(d, *call, ds, ds_kw, shuffle, drop);
    tp413(d.ctx, std::move(f));
    d.sharded.push_back({call, bound, stmt});
  }
}

// ---- TP414: the global batch split between the ranks ----
void tp414_batch(Ddp& d) {
  const syntax::Tree& t = d.t;
  for (const Loader& l : d.sharded) {
    const Node* bs = nullptr;
    if (const Node* k = keyword_arg(t, *l.call, "batch_size")) bs = k->value();
    if (!bs) bs = positional(*l.call, 1);
    if (!bs) {
      auto [cb, ce] = t.byte_range(*l.call);
      tp414(d.ctx,
            report(Operation::Unknown, "batch_size",
                   "no batch_size: each rank loads batches of 1, the global batch is WORLD_SIZE",
                   cb, ce));
      continue;
    }
    auto [bb, be] = t.byte_range(*bs);
    if (d.ctx.opts.keep_batch) {
      tp414(d.ctx, report(Operation::Unknown, "batch_size",
                          "per-rank batch kept (--per-rank-batch keep): the global batch is " +
                              d.node_text(bs) + " x WORLD_SIZE; scale the learning rate if needed",
                          bb, be));
    } else {
      tp414(d.ctx,
            d.ctx.rewrite("batch_size",
                          "the global batch " + d.node_text(bs) +
                              " is split between the ranks (--per-rank-batch split, the default)",
                          bb, be, d.call("_tp_rank_batch") + "(" + d.node_text(bs) + ")"));
    }
  }
}

/// Loaders that a function of an imported project module builds and returns
/// (`train_loader, val_loader = build_loaders(...)`): set_epoch goes where this file loops over
/// epochs with them. A single name is the loader; in a tuple, the names that say loader.
std::vector<Loader> returned_loaders(const Ddp& d) {
  std::vector<Loader> out;
  for (const Node* a : d.t.find_all(NodeKind::Assign)) {
    const Node* v = a->value();
    if (!v || v->kind() != NodeKind::Call ||
        !d.ctx.opts.distributed_loader_functions.contains(qualified(d.m, v->func())))
      continue;
    for (const Node* tgt : a->targets()) {
      const bool single = tgt->kind() == NodeKind::Name || tgt->kind() == NodeKind::Attribute;
      std::vector<const Node*> bound_names;
      if (single) {
        bound_names.push_back(tgt);
      } else if (tgt->kind() == NodeKind::Tuple || tgt->kind() == NodeKind::List) {
        for (const Node* e : tgt->children())
          if (e->kind() == NodeKind::Name || e->kind() == NodeKind::Attribute)
            bound_names.push_back(e);
      }
      for (const Node* n : bound_names) {
        const std::string name = d.node_text(n);
        std::string lower = name;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (evaluation_name(name) || (!single && lower.find("loader") == std::string::npos))
          continue;
        out.push_back({nullptr, name, a});
      }
    }
  }
  return out;
}

/// The epoch loop of loader `name`: the For loop around the loop over it, else a For loop
/// whose body passes it to a call (train_one_epoch(model, loader)); or nullptr.
const Node* epoch_loop(const Ddp& d, const std::string& name) {
  const syntax::Tree& t = d.t;
  auto uses_loader = [&](const Node* n) {
    bool found = false;
    syntax::walk(*n, [&](const Node& x) {
      if ((x.kind() == NodeKind::Name || x.kind() == NodeKind::Attribute) && t.text(x) == name)
        found = true;
    });
    return found;
  };
  for (const Node* loop : t.find_all(NodeKind::For)) {
    if (!uses_loader(loop->iter())) continue;
    // The enclosing For loop is the epoch loop.
    for (const Node* p = loop->parent(); p; p = p->parent())
      if (p->kind() == NodeKind::For) return p;
  }
  for (const Node* loop : t.find_all(NodeKind::For)) {
    bool passes = false;
    for (const Node* s : loop->body())
      syntax::walk(*s, [&](const Node& x) {
        if (x.kind() == NodeKind::Call)
          for (const Node* c : x.children())
            if ((c->role() == Role::Arg || c->role() == Role::Keyword) && uses_loader(c))
              passes = true;
      });
    if (passes) return loop;
  }
  return nullptr;
}

// ---- TP413: set_epoch at the top of the epoch loop around each loader's use ----
void tp413_set_epoch(Ddp& d) {
  std::vector<Loader> loaders;
  for (const Loader& l : d.sharded)
    if (!l.name.empty()) loaders.push_back(l);
  const std::vector<Loader> returned = returned_loaders(d);
  loaders.insert(loaders.end(), returned.begin(), returned.end());
  auto is_returned = [&](const std::string& name) {
    return std::any_of(returned.begin(), returned.end(),
                       [&](const Loader& r) { return r.name == name; });
  };
  std::set<const Node*> epoch_loops;
  for (const Loader& l : loaders) {
    const Node* epoch = epoch_loop(d, l.name);
    const Node* tgt = epoch ? epoch->target() : nullptr;
    auto [sb, se] = d.t.byte_range(*l.stmt);
    if (!tgt || tgt->kind() != NodeKind::Name || epoch_loops.contains(epoch)) {
      // A returned loader without an epoch loop here: its module's row says what to do.
      if (!epoch_loops.contains(epoch) && !is_returned(l.name))
        tp413(d.ctx,
              report(Operation::Unknown, "DistributedSampler.set_epoch",
                     "no epoch loop found around " + l.name + ": call " + l.name +
                         ".sampler.set_epoch(epoch) at the start of each epoch, or every epoch "
                         "sees the same order" +
                         (d.companion ? std::string(" (where " + d.ctx.opts.distributed_main +
                                                    " loops over epochs with the loader a function "
                                                    "of this module returns, --distributed inserts "
                                                    "that call: see its rows)")
                                      : std::string()),
                     sb, se));
      continue;
    }
    const Node* first_stmt = *epoch->body().begin();
    const std::uint32_t at = d.t.byte_range(*first_stmt).begin;
    auto indent = indent_before(d.text, at);
    if (!indent) continue;
    epoch_loops.insert(epoch);
    tp413(d.ctx, d.ctx.rewrite(
                     "DistributedSampler.set_epoch",
                     "set the sampler's epoch, so that each epoch shuffles anew on every rank", at,
                     at, l.name + ".sampler.set_epoch(" + d.node_text(tgt) + ")" + d.nl + *indent));
  }
}

// TP415: `f(args)` becomes `rank0_only(f)(args)`: the call does nothing on the other ranks.
void wrap_rank0_only(Ddp& d, const Node& call, const std::string& api, std::string message) {
  const auto range = d.t.byte_range(*call.func());
  fix::Fix fx;
  fx.edits.push_back({range.begin, range.begin, d.call("_tp_rank0_only") + "("});
  fx.edits.push_back({range.end, range.end, ")"});
  Draft f;
  f.op = Operation::Modify;
  f.api = api;
  f.message = std::move(message);
  f.begin = range.begin;
  f.end = d.t.byte_range(call).end;
  f.fix = std::move(fx);
  tp415(d.ctx, std::move(f));
}

/// What a call statement does that only rank 0 should do ("print", "torch.save",
/// "logger.info"), or "".
std::string side_effect(const Ddp& d, const Node* call, const std::set<std::string>& loggers,
                        const std::set<std::string>& writers) {
  const Node* f = call->func();
  if (!f) return {};
  const std::string q = qualified(d.m, f);
  if (f->kind() == NodeKind::Name && d.t.name(*f) == "print" && q.empty()) {
    auto l = d.m.line_of(f->first_token());
    if (!d.m.lookup("print", l ? d.m.lines()[*l].scope : 0)) return "print";
  }
  if (q == "torch.save") return q;
  if (q.starts_with("logging.") || q.starts_with("wandb.")) return q;
  if (f->kind() == NodeKind::Attribute) {
    const std::string recv = d.node_text(f->value());
    if (loggers.contains(recv) || writers.contains(recv))
      return recv + "." + std::string(d.t.name(*f));
  }
  return {};
}

// ---- TP415: output and saving on rank 0 only ----
void tp415_rank_zero_calls(Ddp& d) {
  std::set<std::string> loggers, writers;
  for (const Node* a : d.t.find_all(NodeKind::Assign)) {
    const Node* v = a->value();
    if (!v || v->kind() != NodeKind::Call) continue;
    const std::string q = qualified(d.m, v->func());
    for (const Node* tgt : a->targets()) {
      if (q == "logging.getLogger") loggers.insert(d.node_text(tgt));
      if (q.ends_with("SummaryWriter")) writers.insert(d.node_text(tgt));
    }
    if (!q.ends_with("SummaryWriter")) continue;
    // One event file, rank 0's: the writer is created there only; elsewhere a silent stand-in,
    // so that its calls (and `writer.close()`) are no-ops.
    wrap_rank0_only(d, *v, q,
                    "the TensorBoard writer on rank 0 only (one event file; the other ranks get a "
                    "stand-in whose calls do nothing)");
  }
  for (const Node* s : d.t.find_all(NodeKind::Expr)) {
    const Node* v = s->value();
    if (!v || v->kind() != NodeKind::Call) continue;
    const std::string what = side_effect(d, v, loggers, writers);
    if (what.empty()) continue;
    if (what == "torch.save") {
      // A write: the whole statement on rank 0 (its arguments are a state_dict, no forward).
      const std::uint32_t at = d.t.byte_range(*s).begin;
      if (!d.ends_line(*s) || !indent_before(d.text, at)) continue;
      tp415(d.ctx, d.ctx.rewrite(what, what + " on rank 0 only", at, at,
                                 "if " + d.call("_tp_rank0") + "(): "));
      continue;
    }
    // Output: only the call is skipped on the other ranks; its arguments are still evaluated
    // on every rank, as before (`print(evaluate(model))` runs DDP's forward, which broadcasts
    // buffers: a forward on rank 0 alone would hang).
    wrap_rank0_only(d, *v, what,
                    what + " on rank 0 only (its arguments are still evaluated on every rank)");
  }
}

/// True when the `with` statement opens a file for writing (`with open(p, "w") as f:`).
bool writes_file(const Ddp& d, const Node& w) {
  bool writes = false;
  for (const Node* item : w.items()) {
    const Node* c = item->context_expr();
    if (!c || c->kind() != NodeKind::Call || !c->func() || c->func()->kind() != NodeKind::Name ||
        d.t.name(*c->func()) != "open")
      continue;
    const Node* mode = positional(*c, 1);
    if (!mode)
      if (const Node* k = keyword_arg(d.t, *c, "mode")) mode = k->value();
    if (mode && mode->kind() == NodeKind::Constant) {
      auto sv = d.t.string_value(*mode);
      if (sv && sv->find_first_of("wax") != std::string::npos) writes = true;
    }
  }
  return writes;
}

// ---- TP415: file writes on rank 0 only ----
void tp415_rank_zero_files(Ddp& d) {
  const std::string_view text = d.text;
  for (const Node* w : d.t.find_all(NodeKind::With)) {
    if (!writes_file(d, *w)) continue;
    auto [wb, we] = d.t.byte_range(*w);
    auto indent = indent_before(text, wb);
    bool multiline_string = false;
    for (std::uint32_t k = w->first_token(); k <= w->last_token(); ++k)
      if (d.m.kind(k) == TokenKind::String &&
          d.m.token_text(k).find_first_of("\r\n") != std::string::npos)
        multiline_string = true;
    if (!indent || indent->find('\t') != std::string::npos || multiline_string) {
      tp415(d.ctx, report(Operation::Unsupported, "open",
                          "a file written on every rank: guard it with `if " + d.name("_tp_rank0") +
                              "():` by hand",
                          wb, we));
      continue;
    }
    fix::Fix fx;
    fx.edits.push_back({wb, wb, "if " + d.call("_tp_rank0") + "():" + d.nl + *indent + "    "});
    for (std::uint32_t i = wb; i < we; ++i)
      if ((text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))) &&
          i + 1 < we)
        fx.edits.push_back({i + 1, i + 1, "    "});
    Draft f;
    f.op = Operation::Modify;
    f.api = "open";
    f.message = "the file is written on rank 0 only";
    f.begin = wb;
    f.end = we;
    f.fix = std::move(fx);
    tp415(d.ctx, std::move(f));
  }
}

/// The module's `if __name__ == "__main__":` statement (either way round), or nullptr.
const Node* main_guard(const syntax::Tree& t) {
  const Node* guard = nullptr;
  for (const Node* s : t.root().body()) {
    if (s->kind() != NodeKind::If || !s->test() || s->test()->kind() != NodeKind::Compare) continue;
    const Node* cmp = s->test();
    std::vector<const Node*> sides{cmp->left()};
    for (const Node* c : cmp->comparators()) sides.push_back(c);
    bool name = false, main = false;
    for (const Node* x : sides) {
      if (x->kind() == NodeKind::Name && t.name(*x) == "__name__") name = true;
      if (x->kind() == NodeKind::Constant && t.is_string(*x) && t.string_value(*x) == "__main__")
        main = true;
    }
    if (name && main && sides.size() == 2) guard = s;
  }
  return guard;
}

// ---- TP416: destroy_process_group at the end ----
void tp416_cleanup(Ddp& d) {
  std::uint32_t at = static_cast<std::uint32_t>(d.text.size());
  std::string indent;
  if (const Node* guard = main_guard(d.t)) {
    const Node* last = nullptr;
    for (const Node* s : guard->body()) last = s;
    auto ind = indent_before(d.text, d.t.byte_range(*last).begin);
    if (ind) {
      indent = *ind;
      at = d.line_end(*last);
    }
  }
  tp416(d.ctx, d.ctx.rewrite("torch.distributed.destroy_process_group",
                             "destroy the process group at the end of the run", at, at,
                             (d.at_unterminated_end(at) ? d.nl : std::string()) + indent +
                                 d.call("_tp_cleanup") + "()" + d.nl));
}

/// TP410's process group and device lines for the target (after the environment defaults), the
/// backend expression and the device_ids argument wrap_ddp passes.
std::vector<std::string> rank_device_lines(Ddp& d, std::string& backend, std::string& device_ids) {
  const catalogue::Target& target = d.ctx.target;
  const std::string& T = d.T;
  std::vector<std::string> lines;
  if (d.ctx.accelerator()) {
    lines.push_back("_tp_rank_device = (");
    lines.push_back("    " + T + ".device(" + T + ".accelerator.current_accelerator().type, " +
                    "_tp_local_rank)");
    lines.push_back("    if " + T + ".accelerator.is_available()");
    lines.push_back("    else " + T + ".device(\"cpu\")");
    lines.push_back(")");
    lines.push_back("if _tp_rank_device.type != \"cpu\":");
    lines.push_back("    " + T + ".accelerator.set_device_index(_tp_local_rank)");
    backend = "_tp_dist.get_default_backend_for_device(_tp_rank_device)";
    device_ids = ", device_ids=[_tp_local_rank] if _tp_rank_device.type != \"cpu\" else None";
    d.ctx.require_torch(kAcceleratorMinTorch);
    return lines;
  }
  backend = "\"" + (target.backend.empty() ? std::string("gloo") : target.backend) + "\"";
  if (target.device_index && !target.host) {
    lines.push_back("_tp_rank_device = " + T + ".device(\"" + target.device +
                    "\", _tp_local_rank)");
    lines.push_back(d.ctx.render(target.module) + ".set_device(_tp_rank_device)");
    device_ids = ", device_ids=[_tp_local_rank]";
  } else {
    lines.push_back("_tp_rank_device = " + T + ".device(\"" + target.device + "\")");
  }
  return lines;
}

/// TP410's helper definitions in the entry script (on the process group it sets up).
std::vector<std::string> setup_helper_lines(const std::string& backend,
                                            const std::string& device_ids) {
  std::vector<std::string> helpers = {
      "_tp_dist.init_process_group(backend=" + backend + ")",
      "",
      "",
      "def _tp_rank0():",
      "    \"\"\"True on the process that prints, logs and saves (rank 0).\"\"\"",
      "    return _tp_dist.get_rank() == 0",
      "",
      "",
  };
  helpers.insert(helpers.end(), kSilentAndRank0Only.begin(), kSilentAndRank0Only.end());
  helpers.insert(
      helpers.end(),
      {
          "",
          "",
          "def _tp_ddp(module):",
          "    \"\"\"The module on this rank's device, in DistributedDataParallel (once).\"\"\"",
          "    if isinstance(module, _TpDDP):",
          "        return module",
          "    return _TpDDP(module.to(_tp_rank_device)" + device_ids + ")",
          "",
          "",
      });
  helpers.insert(helpers.end(), kUnwrap.begin(), kUnwrap.end());
  helpers.insert(
      helpers.end(),
      {
          "",
          "",
          "def _tp_sampler(dataset, shuffle, drop_last):",
          "    \"\"\"This rank's shard of dataset, with the DataLoader's shuffle and "
          "drop_last.\"\"\"",
          "    return _TpDistributedSampler(dataset, shuffle=shuffle, drop_last=drop_last)",
          "",
          "",
          "def _tp_rank_batch(batch_size):",
          "    \"\"\"The global batch split between the ranks (--per-rank-batch split).\"\"\"",
          "    world = _tp_dist.get_world_size()",
      });
  helpers.insert(helpers.end(), kRankBatchCheck.begin(), kRankBatchCheck.end());
  helpers.insert(helpers.end(), {
                                    "",
                                    "",
                                    "def _tp_cleanup():",
                                    "    \"\"\"destroy_process_group() once the run is over.\"\"\"",
                                    "    if _tp_dist.is_initialized():",
                                    "        _tp_dist.destroy_process_group()",
                                    "",
                                });
  return helpers;
}

/// True when the output imports the target's package: the file does, or TP900 inserts it.
bool has_target_import(const Ddp& d) {
  const std::string& stmt = d.ctx.target.import_stmt;
  if (stmt.empty() || d.ctx.target_import_inserted) return true;
  const std::string module = stmt.substr(stmt.rfind(' ') + 1);
  for (const semantic::Import& im : d.m.imports())
    if (im.module == module || im.module.starts_with(module + ".")) return true;
  return false;
}

// ---- TP410: the set-up block after the imports (the entry script) ----
void tp410_setup(Ddp& d) {
  std::string os;
  std::string header = import_os(d, os);
  if (!d.m.module_alias("torch")) header += "import torch" + d.nl;
  if (!has_target_import(d)) header += d.ctx.target.import_stmt + d.nl;
  std::vector<std::string> lines = {
      "",
      "# torchport --distributed: one process per device, started by torchrun",
      "# (run_distributed.sh), which sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and",
      "# MASTER_PORT; without them the script runs as a single process.",
      "import torch.distributed as _tp_dist",
      "from torch.nn.parallel import DistributedDataParallel as _TpDDP",
      d.name("_TpDistributedSampler") == "DistributedSampler"
          ? "from torch.utils.data.distributed import DistributedSampler"
          : "from torch.utils.data.distributed import DistributedSampler as _TpDistributedSampler",
      "",
      os + ".environ.setdefault(\"RANK\", \"0\")",
      os + ".environ.setdefault(\"LOCAL_RANK\", \"0\")",
      os + ".environ.setdefault(\"WORLD_SIZE\", \"1\")",
      os + ".environ.setdefault(\"MASTER_ADDR\", \"127.0.0.1\")",
      os + ".environ.setdefault(\"MASTER_PORT\", \"29500\")",
      "_tp_local_rank = int(" + os + ".environ[\"LOCAL_RANK\"])",
  };
  std::string backend, device_ids;
  const std::vector<std::string> device = rank_device_lines(d, backend, device_ids);
  lines.insert(lines.end(), device.begin(), device.end());
  const std::vector<std::string> helpers = setup_helper_lines(backend, device_ids);
  lines.insert(lines.end(), helpers.begin(), helpers.end());
  std::string block = header;
  for (const std::string& l : lines) block += d.spell(l) + d.nl;
  const std::uint32_t at = setup_offset(d);
  d.ctx.add(
      d.ctx.rewrite("torch.distributed.init_process_group",
                    "process group from torchrun's environment (backend " + d.spell(backend) +
                        "), this rank's device from LOCAL_RANK, and the --distributed helpers",
                    at, at, after_imports(d, at, std::move(block), false)),
      tp410);
}

// ---- TP410 in a module that already uses torch.distributed ----
void tp410_module_left_alone(Context& ctx, TokenIndex tok) {
  const std::uint32_t b = ctx.m.tokens()[tok].begin;
  ctx.add(report(Operation::Unknown, "torch.distributed",
                 "this module, imported by " + ctx.opts.distributed_main +
                     ", already uses torch.distributed: --distributed leaves it as it is; check "
                     "that it agrees with the process group set up there",
                 b, b),
          tp410);
}

}  // namespace

void run_ddp(Context& ctx) {
  if (!ctx.opts.distributed) return;
  if (auto tok = uses_torch_distributed(ctx.m)) {
    // The entry script: refused by the driver (idempotent here). A module it imports that
    // already uses torch.distributed is left to its author.
    if (ctx.opts.distributed_companion) tp410_module_left_alone(ctx, *tok);
    return;
  }
  Ddp d(ctx);
  tp412_data_parallel(d);
  tp411_wrap_model(d);
  tp417_state_dict(d);
  tp413_samplers(d);
  tp414_batch(d);
  tp413_set_epoch(d);
  tp415_rank_zero_calls(d);
  tp415_rank_zero_files(d);
  if (d.companion) {
    tp410_module_helpers(d);
    return;
  }
  tp416_cleanup(d);
  tp410_setup(d);
}

}  // namespace torchport::rules
