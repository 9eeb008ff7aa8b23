// Rule family TP500: CUDA environment variables used from Python.
//
// What it does:
//   String keys of os.environ[...], os.environ.get/setdefault/pop, os.getenv and os.putenv, and
//   keys tested with `in` / `not in` os.environ, that name a CUDA or NCCL variable are replaced by
//   the target's equivalent from the catalogue; CUDA_VISIBLE_DEVICES becomes the target's
//   visible-devices variable. NCCL variables are renamed only where the catalogue names a twin
//   (NCCL_SOCKET_IFNAME -> HCCL_SOCKET_IFNAME on npu), else by the catalogue's prefix entry (NCCL_*
//   -> CNCL_* on mlu). Variables without an equivalent are reported.
// Why:
//   Each runtime reads its own variables: setting CUDA_VISIBLE_DEVICES does nothing on an Ascend
//   NPU (ASCEND_RT_VISIBLE_DEVICES) or a Cambricon MLU (MLU_VISIBLE_DEVICES).
// Example:
//   os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
// Becomes (npu):
//   os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"
// Safety:
//   The same name in any other string (a message, a shell command) is left alone. Variables the
//   target has no equivalent for stay and are reported UNSUPPORTED with the reason, as is a
//   notebook's IPython line that names CUDA_VISIBLE_DEVICES (`%env`, a `!` shell line), with the
//   target's variable: torchport does not edit IPython lines.
#include <torchport/rules/context.h>

#include <unordered_set>

namespace torchport::rules {

namespace {

/// TP500 (cuda-env-var): CUDA/NCCL environment variables used from Python. Its one producer: every
/// TP500 finding is made here.
void tp500(Context& ctx, Draft d) { ctx.add("TP500", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

bool env_access(const semantic::Model& m, TokenIndex s) {
  auto en = m.enclosing_open(s);
  if (!en) return false;
  auto before = m.prev(*en);
  if (!before || m.kind(*before) != TokenKind::Name) return false;
  const semantic::Reference* r = m.reference_at(*before);
  if (!r) return false;
  const std::string& q = r->qualified;
  if (m.kind(*en) == TokenKind::LSqb) return q == "os.environ";
  if (m.kind(*en) != TokenKind::LPar) return false;
  if (q == "os.environ.get" || q == "os.environ.setdefault" || q == "os.environ.pop" ||
      q == "os.getenv" || q == "os.putenv" || q == "os.unsetenv") {
    auto args = call_args(m, *en);
    return !args.empty() && args[0].first == s && args[0].last == s;
  }
  return false;
}

// The string tokens tested for membership in os.environ (`"CUDA_VISIBLE_DEVICES" in
// os.environ`, `not in`): the test of one idiom whose other half reads or sets the variable, so
// both halves name the same one.
std::unordered_set<TokenIndex> environ_tests(const Context& ctx) {
  using syntax::Node;
  using syntax::NodeKind;
  std::unordered_set<TokenIndex> out;
  for (const Node* c : ctx.tree.find_all(NodeKind::Compare)) {
    const std::vector<syntax::CmpOp> ops = ctx.tree.compare_ops(*c);
    std::vector<const Node*> operands{c->left()};
    for (const Node* k : c->children(syntax::Role::Comparator)) operands.push_back(k);
    for (std::size_t k = 0; k < ops.size() && k + 1 < operands.size(); ++k) {
      if (ops[k] != syntax::CmpOp::In && ops[k] != syntax::CmpOp::NotIn) continue;
      const Node* key = operands[k];
      const Node* env = operands[k + 1];
      if (!key || !env || key->kind() != NodeKind::Constant || !ctx.tree.is_string(*key) ||
          key->first_token() != key->last_token())
        continue;
      const semantic::Reference* r = ctx.m.reference_at(env->last_token());
      if (r && r->first == env->first_token() && r->last == env->last_token() &&
          r->qualified == "os.environ")
        out.insert(key->first_token());
    }
  }
  return out;
}

}  // namespace

void run_env(Context& ctx) {
  const semantic::Model& m = ctx.m;
  const std::unordered_set<TokenIndex> tests = environ_tests(ctx);
  // A notebook's IPython lines (`%env CUDA_VISIBLE_DEVICES=0`, `!CUDA_VISIBLE_DEVICES=0 python
  // train.py`): kept as they are, so reported with the target's variable.
  for (const Options::IPythonLine& l : ctx.opts.ipython_lines) {
    if (l.text.find("CUDA_VISIBLE_DEVICES") == std::string::npos) continue;
    const std::string& var = ctx.target.visible_devices;
    tp500(ctx, report(Operation::Unsupported, "CUDA_VISIBLE_DEVICES",
                      "an IPython line sets or reads CUDA_VISIBLE_DEVICES (" + l.text +
                          "), which " + ctx.target.name + " does not read" +
                          (var.empty() ? std::string(" (it has no visible-devices variable)")
                                       : "; its variable is " + var) +
                          ". IPython lines are kept as they are: change it by hand",
                      l.begin, l.end));
  }
  for (const TokenIndex i : m.string_tokens()) {
    auto sv = semantic::string_value(m.text(), m.tokens()[i]);
    if (!sv) continue;
    // Most strings are not environment variables: look them up without a copy first.
    const std::string_view value = sv->value;
    const catalogue::Entry* entry = ctx.cat.find(value);
    if (!entry && !value.starts_with("CUDA_") && !value.starts_with("NCCL_") &&
        !value.starts_with("TORCH_NCCL_") && value != "PYTORCH_CUDA_ALLOC_CONF") {
      continue;
    }
    const std::string var(value);
    // Prefix entries ("NCCL_*" -> "CNCL_*"), also for a variable whose own entry has no
    // mapping for this target (NCCL_SOCKET_IFNAME is only mapped for npu).
    std::string key = var;
    std::string suffix;
    if (!entry || !ctx.cat.lookup(var, ctx.target.name)) {
      for (std::string_view pre : {"TORCH_NCCL_", "NCCL_"}) {
        if (var.starts_with(pre)) {
          const std::string prefix_key = std::string(pre) + "*";
          if (const catalogue::Entry* pe = ctx.cat.find(prefix_key)) {
            key = prefix_key;
            suffix = var.substr(pre.size());
            entry = pe;
          }
          break;
        }
      }
    }
    const bool cudaish = var.starts_with("CUDA_") || var.starts_with("NCCL_") ||
                         var == "PYTORCH_CUDA_ALLOC_CONF" || var == "CUDA_LAUNCH_BLOCKING";
    if (!(entry && entry->kind == catalogue::Kind::EnvVar) && !cudaish) continue;
    if (!env_access(m, i) && !tests.contains(i)) continue;
    const std::uint32_t b = sv->value_begin;
    const std::uint32_t e = b + static_cast<std::uint32_t>(sv->value.size());
    const catalogue::Mapping* mp = entry ? ctx.cat.lookup(key, ctx.target.name) : nullptr;
    std::string repl;
    std::string note;
    if (mp) {
      if (mp->status != catalogue::Status::Unsupported) repl = mp->replacement;
      if (!suffix.empty() && repl.ends_with("*")) repl = repl.substr(0, repl.size() - 1) + suffix;
      note = mp->note;
    } else if (var == "CUDA_VISIBLE_DEVICES") {
      repl = ctx.target.visible_devices;
      if (repl.empty()) note = ctx.target.name + " has no visible-devices variable";
    }
    if (repl.empty()) {
      tp500(ctx,
            report(Operation::Unsupported, var,
                   note.empty() ? var + " has no known equivalent on " + ctx.target.name : note, b,
                   e));
      continue;
    }
    tp500(ctx, ctx.rewrite(var,
                           "change environment variable " + var + " to " + repl +
                               (note.empty() ? "" : " (" + note + ")"),
                           b, e, repl));
    if (mp && mp->status == catalogue::Status::Unknown) {
      tp500(ctx,
            report(Operation::Unknown, var,
                   note.empty() ? repl + " is not confirmed by the vendor's lists" : note, b, e));
    }
  }
}

}  // namespace torchport::rules
