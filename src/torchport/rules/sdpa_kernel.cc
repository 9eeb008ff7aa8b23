// Rule family TP110: torch.backends.cuda.sdp_kernel becomes torch.nn.attention.sdpa_kernel.
//
// What it does:
//   A call of torch.backends.cuda.sdp_kernel (through any import or alias the semantic model
//   resolves) whose switches enable_flash, enable_math, enable_mem_efficient and enable_cudnn
//   are literal True/False (positional or keyword; a switch not given is True, as in the
//   signature) becomes torch.nn.attention.sdpa_kernel with the list of the backends that were
//   enabled, in the signature's order: FLASH_ATTENTION, MATH, EFFICIENT_ATTENTION,
//   CUDNN_ATTENTION.
// Why:
//   sdp_kernel lives under torch.backends.cuda and is deprecated (a FutureWarning since torch
//   2.3): its replacement is device-agnostic and sets the same global switches, which the CPU's
//   scaled_dot_product_attention reads as well (its flash kernel, its math path). The same call
//   is right on every target, CUDA included.
// Example:
//   with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=True,
//                                       enable_mem_efficient=True):
// Becomes (every target):
//   with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH,
//                                        torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION]):
// Safety:
//   The switches are the same, and both context managers restore the previous ones on exit: a
//   safe fix (checked with the installed torch 2.13.0: inside either, the four
//   torch.backends.cuda.*_sdp_enabled() flags read the same; all False is `sdpa_kernel([])`).
//   A switch that is not a literal (a variable) or *args/**kwargs is left in place and
//   reported, as is a --torch-version older than 2.3 (torch.nn.attention.sdpa_kernel is new
//   in 2.3).
#include <torchport/rules/context.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace torchport::rules {

namespace {

/// TP110 (sdpa-kernel): torch.backends.cuda.sdp_kernel(enable_...=) becomes
/// torch.nn.attention.sdpa_kernel([backends]). Its one producer: every TP110 finding is made here.
void tp110(Context& ctx, Draft d) { ctx.add("TP110", std::move(d)); }

using syntax::Node;
using syntax::NodeKind;

constexpr std::string_view kApi = "torch.backends.cuda.sdp_kernel";
constexpr std::string_view kMinTorch = "2.3";

struct Switch {
  std::string_view keyword;
  std::string_view backend;
};
// The signature's order: sdp_kernel(enable_flash=True, enable_math=True,
// enable_mem_efficient=True, enable_cudnn=True) (installed torch 2.13.0).
constexpr std::array<Switch, 4> kSwitches{{{"enable_flash", "FLASH_ATTENTION"},
                                           {"enable_math", "MATH"},
                                           {"enable_mem_efficient", "EFFICIENT_ATTENTION"},
                                           {"enable_cudnn", "CUDNN_ATTENTION"}}};

// True/False of a literal, nullopt for anything else.
std::optional<bool> literal_bool(const Node& n) {
  if (n.kind() != NodeKind::Constant) return std::nullopt;
  if (n.has(syntax::kTrue)) return true;
  if (n.has(syntax::kFalse)) return false;
  return std::nullopt;
}

// The switches of one call: nullopt with the reason when they are not all literals.
std::optional<std::array<bool, 4>> switches(const syntax::Tree& t, const Node& call,
                                            std::string& why) {
  std::array<bool, 4> on{true, true, true, true};
  std::size_t i = 0;
  for (const Node* a : call.args()) {
    if (a->kind() == NodeKind::Starred || i >= on.size()) {
      why = "its arguments are not the four switches";
      return std::nullopt;
    }
    auto v = literal_bool(*a);
    if (!v) {
      why = std::string(kSwitches[i].keyword) + " is not a literal True or False";
      return std::nullopt;
    }
    on[i++] = *v;
  }
  for (const Node* k : call.keywords()) {
    const std::string_view kw = t.name(*k);
    std::size_t j = 0;
    while (j < kSwitches.size() && kSwitches[j].keyword != kw) ++j;
    if (j == kSwitches.size() || !k->value()) {
      why = kw.empty() ? "it unpacks **kwargs" : "it passes " + std::string(kw) + "=";
      return std::nullopt;
    }
    auto v = literal_bool(*k->value());
    if (!v) {
      why = std::string(kw) + " is not a literal True or False";
      return std::nullopt;
    }
    on[j] = *v;
  }
  return on;
}

}  // namespace

void run_sdpa_kernel(Context& ctx) {
  const syntax::Tree& t = ctx.tree;
  for (const Node* call : t.find_all(NodeKind::Call)) {
    const Node* f = call->func();
    if (!f || f->token() == syntax::kNoToken) continue;
    const semantic::Reference* ref = ctx.m.reference_at(f->token());
    if (!ref || ref->last != f->token() || ref->qualified != kApi) continue;
    const auto fr = t.byte_range(*f);
    const auto cr = t.byte_range(*call);
    ctx.handled.insert(ref->first);
    std::string why;
    auto on = switches(t, *call, why);
    std::string list;
    if (on) {
      for (std::size_t i = 0; i < kSwitches.size(); ++i) {
        if (!(*on)[i]) continue;
        if (!list.empty()) list += ", ";
        list += ctx.render("torch.nn.attention.SDPBackend." + std::string(kSwitches[i].backend));
      }
    }
    if (!why.empty()) {
      tp110(ctx,
            report(
                Operation::Unsupported, std::string(kApi),
                "torch.backends.cuda.sdp_kernel is deprecated and lives under torch.backends.cuda: "
                "left in place because " +
                    why + "; write torch.nn.attention.sdpa_kernel([...]) with the backends by hand",
                fr.begin, fr.end));
      continue;
    }
    if (!ctx.version_ok(kMinTorch)) {
      tp110(ctx, report(Operation::Unsupported, std::string(kApi),
                        "torch.nn.attention.sdpa_kernel needs torch >= 2.3 (--torch-version " +
                            ctx.opts.torch_version + "); left in place",
                        fr.begin, fr.end));
      continue;
    }
    ctx.require_torch(kMinTorch);
    // The name, and the arguments' text between the parentheses: the call keeps its layout.
    std::uint32_t ab = cr.end - 1, ae = cr.end - 1;  // no argument: before the `)`
    bool any = false;
    for (const Node* n : call->children()) {
      if (n == f) continue;
      const auto r = t.byte_range(*n);
      ab = any ? std::min(ab, r.begin) : r.begin;
      ae = any ? std::max(ae, r.end) : r.end;
      any = true;
    }
    Draft out;
    out.op = Operation::Modify;
    out.api = std::string(kApi);
    out.message =
        "change torch.backends.cuda.sdp_kernel(...) to torch.nn.attention.sdpa_kernel([...]) with "
        "the backends it enabled (the same switches, on every device)";
    out.begin = fr.begin;
    out.end = cr.end;
    fix::Fix fx;
    fx.edits.push_back(fix::Edit{fr.begin, fr.end, ctx.render("torch.nn.attention.sdpa_kernel")});
    fx.edits.push_back(fix::Edit{ab, ae, "[" + list + "]"});
    out.fix = std::move(fx);
    out.changes_file = true;
    tp110(ctx, std::move(out));
  }
}

}  // namespace torchport::rules
