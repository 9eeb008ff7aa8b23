// Rule family TP001-TP002: imports.
//
// What it does:
//   TP001 rewrites imports of torch.cuda.amp (`import torch.cuda.amp as amp`,
//   `from torch.cuda.amp import autocast, GradScaler`, `from torch.cuda import amp`) into imports
//   of torch.amp, and `import torch.cuda` into `import torch` (the same binding: torch imports
//   torch.cuda itself on every build). TP002 flags imports of CUDA-only packages (flash_attn,
//   xformers, apex, amp_C, bitsandbytes, triton, pynvml, cupy, deepspeed.ops) with the target's
//   alternative.
// Why:
//   torch.cuda.amp is deprecated and CUDA-only; torch.amp takes a device type and works on
//   every target. CUDA-only packages cannot even be installed on the other targets.
// Example:
//   from torch.cuda.amp import GradScaler, autocast
//   import flash_attn
// Becomes:
//   from torch.amp import GradScaler, autocast      # calls get a device type (TP200)
//   import flash_attn                               # left in place, reported UNSUPPORTED
// Safety:
//   Only imported names that torch.amp provides (autocast, GradScaler, custom_fwd, custom_bwd)
//   are rewritten; any other name imported from torch.cuda.amp is reported and the import is
//   left alone.
#include <torchport/rules/context.h>

#include <array>
#include <optional>
#include <utility>

namespace torchport::rules {

namespace {

/// TP001 (cuda-amp-import): imports of torch.cuda.amp become imports of torch.amp; `import
/// torch.cuda` becomes `import torch`. Its one producer: every TP001 finding is made here.
void tp001(Context& ctx, Draft d) { ctx.add("TP001", std::move(d)); }

/// TP002 (cuda-only-package): CUDA-only third-party packages are flagged with an alternative. Its
/// one producer: every TP002 finding is made here.
void tp002(Context& ctx, Draft d) { ctx.add("TP002", std::move(d)); }

struct Package {
  std::string_view name;
  std::string_view reason;
};

constexpr std::array<Package, 10> kCudaOnlyPackages = {{
    {"flash_attn", "flash-attn is CUDA-only; use torch.nn.functional.scaled_dot_product_attention"},
    {"xformers",
     "xformers kernels are CUDA-only; use torch.nn.functional.scaled_dot_product_attention"},
    {"apex",
     "apex is CUDA-only; use torch.amp for amp and torch.optim (fused=False) for FusedAdam"},
    {"amp_C", "amp_C is apex's CUDA extension; remove it and use torch.amp"},
    {"bitsandbytes", "bitsandbytes ships CUDA kernels; check the vendor's quantization library"},
    {"triton", "Triton kernels target CUDA/ROCm; check whether the vendor ships a Triton backend"},
    {"pynvml", "pynvml queries NVIDIA drivers; use torch.<device> memory/device APIs"},
    {"cupy", "cupy is CUDA-only; use torch tensors on the target device"},
    {"deepspeed.ops", "DeepSpeed's CUDA ops need the vendor's DeepSpeed build"},
    {"nvidia", "NVIDIA Python packages are CUDA-only"},
}};

bool amp_name(std::string_view n) {
  return n == "autocast" || n == "GradScaler" || n == "custom_fwd" || n == "custom_bwd";
}

// ---- TP002: an import of a CUDA-only package ----
void tp002_cuda_only_package(Context& ctx, const semantic::Import& im) {
  const semantic::Model& m = ctx.m;
  // The catalogue's package entries, then the built-in list.
  const std::string full = im.kind == semantic::ImportKind::From && !im.name.empty()
                               ? im.module + "." + im.name
                               : im.module;
  auto matches = [&](std::string_view pkg) {
    return full == pkg ||
           (full.size() > pkg.size() && full.starts_with(pkg) && full[pkg.size()] == '.');
  };
  std::optional<std::pair<std::string, std::string>> hit;  // (package, reason)
  // The first package entry, in catalogue order, that is `full` or a dotted prefix of it: each
  // prefix looked up (entries() is one array, so its order is the entries' addresses).
  const catalogue::Entry* first = nullptr;
  for (std::size_t end = 0; end != std::string::npos;) {
    end = full.find('.', end + 1);
    const catalogue::Entry* e = ctx.cat.find(std::string_view(full).substr(0, end));
    if (e && e->kind == catalogue::Kind::Package && (!first || e < first)) first = e;
  }
  if (first) {
    const catalogue::Entry& e = *first;
    const catalogue::Mapping* mp = ctx.cat.lookup(e.api, ctx.target.name);
    if (!mp || mp->status == catalogue::Status::Unsupported) {  // else usable on the target
      std::string reason = e.summary;
      if (mp && !mp->note.empty()) reason = mp->note;
      // The alternative, unless the note already names it ("...: use X; use X" read twice).
      if (mp && !mp->replacement.empty() && reason.find(mp->replacement) == std::string::npos)
        reason += "; use " + mp->replacement;
      hit.emplace(e.api, reason);
    }
  }
  if (!hit) {
    for (const Package& p : kCudaOnlyPackages) {
      if (matches(p.name) && !ctx.cat.find(p.name)) {
        hit.emplace(std::string(p.name), std::string(p.reason));
        break;
      }
    }
  }
  if (hit) {
    tp002(ctx, report(Operation::Unsupported, hit->first, hit->second,
                      m.tokens()[im.item_begin].begin, m.tokens()[im.item_end - 1].end));
  }
}

// ---- TP001: imports of torch.cuda.amp, and `import torch.cuda` ----
void tp001_amp_import(Context& ctx, const semantic::Import& im) {
  const semantic::Model& m = ctx.m;
  const std::uint32_t mb = m.tokens()[im.module_begin].begin;
  const std::uint32_t me = m.tokens()[im.module_end - 1].end;
  // `import torch.cuda` binds `torch`, and `import torch` imports torch.cuda on every build:
  // the statement is `import torch` everywhere, with nothing CUDA-specific in it.
  if (im.kind == semantic::ImportKind::Import && im.module == "torch.cuda" && im.bound == "torch") {
    tp001(ctx,
          ctx.rewrite("torch.cuda",
                      "change import torch.cuda to import torch (the same binding; torch imports "
                      "torch.cuda itself)",
                      mb, me, "torch"));
    return;
  }
  // TP001: torch.cuda.amp imports.
  if (im.kind == semantic::ImportKind::Import && im.module == "torch.cuda.amp" &&
      im.bound != "torch") {
    tp001(ctx, ctx.rewrite("torch.cuda.amp", "change import torch.cuda.amp to torch.amp", mb, me,
                           "torch.amp"));
  } else if (im.kind == semantic::ImportKind::From && im.module == "torch.cuda.amp") {
    if (ctx.handled.contains(im.module_begin)) return;
    bool all_amp = true;
    for (const semantic::Import& other : m.imports()) {
      if (other.line == im.line && other.module == im.module && !amp_name(other.name)) {
        all_amp = false;
      }
    }
    ctx.handled.insert(im.module_begin);
    if (all_amp) {
      tp001(ctx, ctx.rewrite("torch.cuda.amp",
                             "change import from torch.cuda.amp to import from torch.amp", mb, me,
                             "torch.amp"));
    } else {
      tp001(ctx, report(Operation::Unsupported, "torch.cuda.amp",
                        "names other than autocast/GradScaler/custom_fwd/custom_bwd imported from "
                        "torch.cuda.amp; "
                        "import them from torch.amp by hand",
                        mb, me));
    }
  } else if (im.kind == semantic::ImportKind::From && im.module == "torch.cuda" &&
             im.name == "amp") {
    // from torch.cuda import amp [as x]  ->  from torch import amp [as x]
    if (ctx.handled.contains(im.module_begin)) return;
    bool only_amp = true;
    for (const semantic::Import& other : m.imports()) {
      if (other.line == im.line && other.module == im.module && other.name != "amp") {
        only_amp = false;
      }
    }
    if (only_amp) {
      ctx.handled.insert(im.module_begin);
      tp001(ctx, ctx.rewrite("torch.cuda.amp", "change import from torch.cuda to import from torch",
                             mb, me, "torch"));
    }
  }
}

}  // namespace

void run_imports(Context& ctx) {
  for (const semantic::Import& im : ctx.m.imports()) {
    tp002_cuda_only_package(ctx, im);
    tp001_amp_import(ctx, im);
  }
}

}  // namespace torchport::rules
