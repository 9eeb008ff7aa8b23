// Rule family TP200: CUDA automatic mixed precision.
//
// What it does:
//   Calls of torch.cuda.amp.autocast and torch.cuda.amp.GradScaler, however they are imported,
//   become torch.amp.autocast / torch.amp.GradScaler with the target's device type as the first
//   argument. torch.get_autocast_gpu_dtype() / set_autocast_gpu_dtype(d) and
//   torch.is_autocast_enabled() become get_autocast_dtype / set_autocast_dtype /
//   is_autocast_enabled with the device type. The custom_fwd / custom_bwd decorators become
//   torch.amp.custom_fwd(device_type=...) / custom_bwd(device_type=...).
// Why:
//   torch.cuda.amp is deprecated and only drives CUDA; torch.amp takes a device type, so the same
//   code enables mixed precision on the target (the vendors document torch.amp for npu/mlu/musa).
// Example:
//   scaler = torch.cuda.amp.GradScaler()
//   with autocast():                     # from torch.cuda.amp import autocast
// Becomes:
//   scaler = torch.amp.GradScaler("npu")
//   with autocast("npu"):                # the import becomes torch.amp (TP001)
//   For --target accelerator the device type is `device.type` (the script's own device).
// Safety:
//   Positional arguments of torch.cuda.amp.autocast (enabled, dtype, cache_enabled) do not line
//   up with torch.amp.autocast(device_type, dtype, enabled, ...), so they become keywords.
//
// TP201 (amp-default-dtype): an autocast that relies on CUDA's default dtype
// (torch.cuda.amp.autocast(...) or torch.autocast("cuda", ...) without dtype=) would take the
// target's default instead: bfloat16 on cpu and hpu (data/targets.json amp_dtype), the device's
// default for accelerator. Where the two differ, dtype=torch.float16 (CUDA's default,
// targets.json "cuda") is written, so the output computes in the original's dtype; the finding
// carries the label "numerics: ..." in the reports. A call whose arguments cannot be read
// (*args, **kwargs) is reported instead.
//   with torch.cuda.amp.autocast():  -> cpu: with torch.amp.autocast("cpu", dtype=torch.float16):
// On cpu (the host) the rewrite of a CUDA autocast or GradScaler not passed enabled=False is
// labelled "numerics": the original's turned itself off on a machine without CUDA, the output's
// runs on the CPU (as under `torchport run`, which verify compares with).
#include <torchport/rules/context.h>

namespace torchport::rules {

namespace {

/// TP200 (cuda-amp): torch.cuda.amp autocast/GradScaler become torch.amp with a device type. Its
/// one producer: every TP200 finding is made here.
void tp200(Context& ctx, Draft d) { ctx.add("TP200", std::move(d)); }

/// TP201 (amp-default-dtype): autocast relying on CUDA's float16 default gets dtype=torch.float16
/// where the target's default differs (a labelled numerics change). Its one producer: every TP201
/// finding is made here.
void tp201(Context& ctx, Draft d) { ctx.add("TP201", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

// torch.amp.custom_fwd/custom_bwd take a keyword-only device_type (torch 2.13:
// custom_fwd(fwd=None, *, device_type, cast_inputs=None)): a bare `@custom_fwd` becomes
// `@custom_fwd(device_type=...)`, a call gets `device_type=...` as its first argument (its last
// when the call starts with a positional argument).
void custom_fwd_bwd(Context& ctx, const semantic::Reference& ref, std::string_view which) {
  const semantic::Model& m = ctx.m;
  const std::string api = "torch.cuda.amp." + std::string(which);
  ctx.handled.insert(ref.first);
  const std::uint32_t rb = m.tokens()[ref.first].begin;
  const std::uint32_t re = m.tokens()[ref.last].end;
  const auto head = m.lookup(m.token_text(ref.first), ref.scope);
  const bool import_rewritten = head && head->target.starts_with("torch.cuda.amp");
  const std::string keyword = "device_type=" + ctx.device_type_expr(rb);
  std::string msg = "change " + api + " to torch.amp." + std::string(which) + " with " + keyword;
  if (!import_rewritten) {
    tp200(ctx, ctx.rewrite(api, msg, rb, re, ctx.render("torch.amp." + std::string(which))));
    msg = "pass " + keyword + " to torch.amp." + std::string(which);
  }
  auto lpar = m.next(ref.last);
  if (lpar && m.kind(*lpar) == TokenKind::LPar && m.match(*lpar)) {
    const std::vector<Arg> args = call_args(m, *lpar);
    // First, unless the call starts with a positional argument (`custom_fwd(fwd)`): a keyword
    // may not come before it, so it goes after the last argument.
    const bool positional_first = !args.empty() && args.front().keyword.empty() &&
                                  m.kind(args.front().first) != TokenKind::DoubleStar;
    if (positional_first) {
      const std::uint32_t at = m.tokens()[args.back().last].end;
      tp200(ctx, ctx.rewrite(api, msg, at, at, ", " + keyword));
    } else {
      const std::uint32_t at = m.tokens()[*lpar].end;
      tp200(ctx, ctx.rewrite(api, msg, at, at, keyword + (args.empty() ? "" : ", ")));
    }
  } else {
    tp200(ctx, ctx.rewrite(api, msg, re, re, "(" + keyword + ")"));
  }
  if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
}

// TP201: `args` are the call's arguments; `dtype_at` the index dtype has as a positional
// argument (1 for both torch.cuda.amp.autocast and torch.autocast).
void pin_cuda_dtype(Context& ctx, const std::string& api, semantic::TokenIndex lpar,
                    const std::vector<Arg>& args, std::size_t dtype_at) {
  const semantic::Model& m = ctx.m;
  const std::string& cuda = ctx.cat.cuda_amp_dtype();
  if (cuda.empty() || ctx.target.amp_dtype == cuda) return;  // same default: nothing changes
  const auto rpar = m.match(lpar);
  if (!rpar) return;
  std::size_t positional = 0;
  for (const Arg& a : args) {
    if (a.keyword == "dtype") return;
    const TokenKind k = m.kind(a.first);
    if (k == TokenKind::Star || k == TokenKind::DoubleStar) {
      tp201(ctx,
            report(
                Operation::Unknown, api,
                "numerics: the autocast dtype may come from *args/**kwargs; if it is not given, "
                "CUDA's default " +
                    cuda + " becomes " +
                    (ctx.target.amp_dtype.empty() ? "the device's default" : ctx.target.amp_dtype) +
                    " on " + ctx.target.name + ": pass dtype= explicitly",
                m.tokens()[lpar].begin, m.tokens()[*rpar].end));
      return;
    }
    if (a.keyword.empty()) ++positional;
  }
  if (positional > dtype_at) return;  // dtype given by position
  const std::uint32_t at =
      args.empty() ? m.tokens()[*rpar].begin : m.tokens()[args.back().last].end;
  const std::string theirs = ctx.target.amp_dtype.empty()
                                 ? "the default of the device found at run time (bfloat16 on "
                                   "the CPU)"
                                 : ctx.target.name + "'s default " + ctx.target.amp_dtype;
  tp201(ctx, ctx.rewrite(api,
                         "pass dtype=torch." + cuda +
                             ": the original relied on CUDA's autocast default " + cuda +
                             ", which would become " + theirs,
                         at, at, ", dtype=" + ctx.render("torch." + cuda))
                 .labelled("numerics: autocast dtype pinned to CUDA's default " + cuda + " (not " +
                               theirs + ")",
                           fix::Applicability::Unsafe));
}

// `enabled=False` (or False at the enabled parameter's position `at`) is passed.
bool passes_false(const semantic::Model& m, const std::vector<Arg>& args, std::size_t at) {
  std::size_t positional = 0;
  for (const Arg& a : args) {
    if (a.keyword == "enabled")
      return a.last == *m.next(*m.next(a.first)) && m.token_text(a.last) == "False";
    if (!a.keyword.empty()) continue;
    if (positional++ == at) return a.first == a.last && m.token_text(a.first) == "False";
  }
  return false;
}

// torch.autocast("cuda", ...) / torch.amp.autocast(device_type="cuda", ...): the device type
// is a "cuda" literal (TP300 rewrites the string).
bool cuda_literal_device(const semantic::Model& m, const std::vector<Arg>& args) {
  for (const Arg& a : args) {
    if (!a.keyword.empty() && a.keyword != "device_type") continue;
    semantic::TokenIndex v = a.first;
    if (!a.keyword.empty()) v = *m.next(*m.next(a.first));
    if (v != a.last || m.kind(v) != TokenKind::String) return false;
    auto sv = semantic::string_value(m.text(), m.tokens()[v]);
    return sv && sv->value == "cuda";
  }
  return false;
}

}  // namespace

void run_amp(Context& ctx) {
  const semantic::Model& m = ctx.m;
  for (const semantic::Reference& ref : m.references()) {
    std::string_view q = ref.qualified;
    std::string_view which;
    if (q == "torch.get_autocast_gpu_dtype" || q == "torch.set_autocast_gpu_dtype" ||
        q == "torch.is_autocast_enabled") {
      auto lp = m.next(ref.last);
      if (!lp || m.kind(*lp) != TokenKind::LPar || !m.match(*lp)) continue;
      auto args = call_args(m, *lp);
      if (q == "torch.is_autocast_enabled" && !args.empty()) continue;  // already has a device
      ctx.handled.insert(ref.first);
      std::string fn = q == "torch.get_autocast_gpu_dtype"   ? "torch.get_autocast_dtype"
                       : q == "torch.set_autocast_gpu_dtype" ? "torch.set_autocast_dtype"
                                                             : "torch.is_autocast_enabled";
      const std::uint32_t b = m.tokens()[ref.first].begin;
      const std::uint32_t e = m.tokens()[*lp].end;
      std::string text =
          ctx.render(fn) + "(" + ctx.device_type_expr(b) + (args.empty() ? "" : ", ");
      tp200(ctx, ctx.rewrite(std::string(q),
                             "change " + std::string(q) + "() to " + fn + "(" +
                                 ctx.device_type_expr(b) + ", ...)",
                             b, e, text));
      if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
      continue;
    }
    if (q == "torch.cuda.amp.custom_fwd" || q == "torch.cuda.amp.custom_bwd" ||
        q == "torch.cuda.amp.autocast_mode.custom_fwd" ||
        q == "torch.cuda.amp.autocast_mode.custom_bwd") {
      custom_fwd_bwd(ctx, ref, q.ends_with("custom_fwd") ? "custom_fwd" : "custom_bwd");
      continue;
    }
    if (q == "torch.autocast" || q == "torch.amp.autocast" ||
        q == "torch.amp.autocast_mode.autocast") {
      auto lp = m.next(ref.last);
      if (!lp || m.kind(*lp) != TokenKind::LPar || !m.match(*lp)) continue;
      auto args = call_args(m, *lp);
      if (cuda_literal_device(m, args)) pin_cuda_dtype(ctx, std::string(q), *lp, args, 1);
      continue;
    }
    if (q == "torch.cuda.amp.autocast" || q == "torch.cuda.amp.autocast_mode.autocast") {
      which = "autocast";
    } else if (q == "torch.cuda.amp.GradScaler" || q == "torch.cuda.amp.grad_scaler.GradScaler") {
      which = "GradScaler";
    } else {
      continue;
    }
    const std::string api = "torch.cuda.amp." + std::string(which);
    ctx.handled.insert(ref.first);
    auto lpar = m.next(ref.last);
    const std::uint32_t rb = m.tokens()[ref.first].begin;
    const std::uint32_t re = m.tokens()[ref.last].end;
    if (!lpar || m.kind(*lpar) != TokenKind::LPar) {
      tp200(ctx, report(Operation::Unsupported, api,
                        api + " used without a call: pass device_type to torch.amp." +
                            std::string(which) + " by hand",
                        rb, re));
      continue;
    }
    auto args = call_args(m, *lpar);
    // torch.cuda.amp.autocast(enabled, dtype, cache_enabled) -> keywords after the device type.
    static constexpr std::string_view kAutocastParams[] = {"enabled", "dtype", "cache_enabled"};
    std::vector<std::pair<std::uint32_t, std::string>> keywords;
    if (which == "autocast") {
      for (std::size_t a = 0; a < args.size() && a < 3 && args[a].keyword.empty(); ++a) {
        if (m.kind(args[a].first) == TokenKind::Star ||
            m.kind(args[a].first) == TokenKind::DoubleStar) {
          break;
        }
        keywords.emplace_back(m.tokens()[args[a].first].begin,
                              std::string(kAutocastParams[a]) + "=");
      }
    }
    // The callee: rewrite the chain when it spells the cuda segment itself (torch.cuda.amp.X,
    // cuda.amp.X); names bound by a rewritten import (amp.X, X) stay as they are.
    const auto head = m.lookup(m.token_text(ref.first), ref.scope);
    const std::string head_target = head ? head->target : std::string();
    const bool import_rewritten = head_target.starts_with("torch.cuda.amp");
    std::string msg = "change " + api + " to torch.amp." + std::string(which) +
                      " with device type " + ctx.device_type_expr(rb);
    if (!import_rewritten) {
      tp200(ctx, ctx.rewrite(api, msg, rb, re, ctx.render("torch.amp." + std::string(which))));
      msg = "pass the device type to torch.amp." + std::string(which);
    }
    const std::uint32_t at = m.tokens()[*lpar].end;
    const bool empty = args.empty();
    std::string insert = ctx.device_type_expr(rb) + (empty ? "" : ", ");
    std::size_t k = 0;
    if (!keywords.empty() && keywords[0].first == at) {
      insert += keywords[k].second;
      msg += ", and the positional argument as " + keywords[k++].second + "...";
    }
    Draft device_type = ctx.rewrite(api, msg, at, at, insert);
    if (ctx.target.host && !passes_false(m, args, which == "autocast" ? 0 : 4)) {
      // On a machine without CUDA the original's CUDA autocast / GradScaler was off; the output
      // runs the CPU's. Said, not changed: `torchport run` and verify keep it on too. Safe,
      // although labelled: the edit is the device type torch.amp cannot do without (where TP001
      // rewrote the import, leaving it out would write `autocast()`, which raises), not a choice
      // of numerics as TP201's dtype is.
      device_type =
          std::move(device_type)
              .labelled("numerics: the original's CUDA " + std::string(which) +
                            " was off on a machine without CUDA (a warning, then "
                            "nothing); on " +
                            ctx.target.name + " it runs (enabled=False runs what the original ran)",
                        fix::Applicability::Safe);
    }
    tp200(ctx, std::move(device_type));
    for (; k < keywords.size(); ++k) {
      tp200(ctx, ctx.rewrite(api, "pass the positional argument as " + keywords[k].second + "...",
                             keywords[k].first, keywords[k].first, keywords[k].second));
    }
    if (which == "autocast" && m.match(*lpar)) pin_cuda_dtype(ctx, api, *lpar, args, 1);
    if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
  }
}

}  // namespace torchport::rules
