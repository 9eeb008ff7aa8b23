// Rule family TP400-TP402: distributed training.
//
// What it does:
//   TP400 replaces the NCCL backend with the target's collective backend: "nccl" as the first
//   argument or backend= keyword of init_process_group / new_group, and comparisons with
//   get_backend(). torch.distributed.Backend.NCCL and is_nccl_available() are catalogued
//   (TP100).
//   TP401 reports torch.nn.DataParallel, which only drives CUDA devices.
//   TP402 handles DistributedDataParallel's device_ids= and output_device= keywords: cpu drops
//   them; accelerator passes them only when the device is not the CPU
//   (`device_ids=[rank] if _tp_device.type != "cpu" else None`); the other targets keep them.
// Why:
//   NCCL exists only on NVIDIA GPUs; the targets use hccl (npu, hpu), cncl (mlu), mccl (musa),
//   xccl (xpu) or gloo (cpu, and mps which has no collective backend).
// Example:
//   dist.init_process_group(backend="nccl")
// Becomes (npu):
//   dist.init_process_group(backend="hccl")
//   ddp = DDP(model, device_ids=[rank])  -> cpu: DDP(model)
//   (accelerator: backend=dist.get_default_backend_for_device(_tp_device), torch >= 2.6)
// Safety:
//   "nccl" anywhere else (a log message) is left alone. DataParallel is reported, never
//   rewritten: replacing it with DistributedDataParallel needs a launcher and process group.
//   DistributedDataParallel refuses device_ids/output_device for a CPU module (ValueError),
//   which is why TP402 drops them there.
#include <torchport/rules/context.h>

#include <algorithm>
#include <cctype>

namespace torchport::rules {

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

bool backend_call(std::string_view q, std::string_view last) {
  return q == "torch.distributed.init_process_group" || q == "torch.distributed.new_group" ||
         q == "torch.distributed.distributed_c10d.init_process_group" ||
         (q.empty() && (last == "init_process_group" || last == "new_group"));
}

// DistributedDataParallel refuses device_ids/output_device for a CPU module (ValueError).
void ddp_device_ids(Context& ctx) {
  if (ctx.target.name != "cpu" && !ctx.accelerator()) return;
  const semantic::Model& m = ctx.m;
  for (const semantic::Reference& ref : m.references()) {
    const std::string& q = ref.qualified;
    if (q != "torch.nn.parallel.DistributedDataParallel" &&
        q != "torch.nn.parallel.distributed.DistributedDataParallel") {
      continue;
    }
    auto lpar = m.next(ref.last);
    if (!lpar || m.kind(*lpar) != TokenKind::LPar) continue;
    auto args = call_args(m, *lpar);
    for (std::size_t a = 0; a < args.size(); ++a) {
      const Arg& arg = args[a];
      if (arg.keyword != "device_ids" && arg.keyword != "output_device") continue;
      const std::string api = "DistributedDataParallel(" + std::string(arg.keyword) + "=)";
      if (ctx.target.name == "cpu") {
        // The argument goes with the comma before it (or after it, when it comes first).
        std::uint32_t b = m.tokens()[arg.first].begin;
        std::uint32_t e = m.tokens()[arg.last].end;
        if (a > 0) {
          b = m.tokens()[args[a - 1].last].end;
        } else if (a + 1 < args.size()) {
          e = m.tokens()[args[a + 1].first].begin;
        }
        Finding f;
        f.code = "TP402";
        f.op = Operation::Delete;
        f.api = api;
        f.message = "delete " + std::string(arg.keyword) +
                    "= (DistributedDataParallel takes no device ids for a CPU module)";
        f.begin = m.tokens()[arg.first].begin;
        f.end = m.tokens()[arg.last].end;
        fix::Fix fx;
        fx.edits.push_back(fix::Edit{b, e, ""});
        f.fix = std::move(fx);
        ctx.result.findings.push_back(std::move(f));
        ctx.changed = true;
        continue;
      }
      // accelerator: the ids only when the device is not the CPU.
      const TokenIndex v = *m.next(*m.next(arg.first));  // the value, after `name =`
      const std::uint32_t vb = m.tokens()[v].begin;
      const std::uint32_t ve = m.tokens()[arg.last].end;
      const std::string_view value = m.text().substr(vb, ve - vb);
      const std::string cond = " if " + std::string(kDeviceVar) + ".type != \"cpu\" else None";
      if (value.find(cond.substr(1)) != std::string_view::npos) continue;  // already done
      bool paren = false;
      for (TokenIndex t = v; t <= arg.last; ++t) {
        if (m.kind(t) == TokenKind::KwIf || m.kind(t) == TokenKind::KwLambda) paren = true;
      }
      ctx.used_device_var = true;
      ctx.require_torch(kAcceleratorMinTorch);
      const std::string repl =
          paren ? "(" + std::string(value) + ")" + cond : std::string(value) + cond;
      ctx.modify("TP402", api,
                 "pass " + std::string(arg.keyword) +
                     "= only when the device is not the CPU (DistributedDataParallel refuses "
                     "device ids for a CPU module)",
                 vb, ve, repl);
    }
  }
}

}  // namespace

void run_distributed(Context& ctx) {
  const semantic::Model& m = ctx.m;
  const std::string backend = ctx.target.backend.empty() ? "gloo" : ctx.target.backend;
  const std::string note =
      ctx.target.backend.empty() && !ctx.accelerator()
          ? " (" + ctx.target.name + " has no collective backend: gloo runs on the CPU)"
          : "";
  // The backend expression for the accelerator target, spelled with the callee's module.
  auto accel_backend = [&](const semantic::Reference* callee) {
    std::string mod = ctx.render("torch.distributed");
    if (callee && callee->names.size() >= 2) {
      const std::uint32_t b = m.tokens()[callee->first].begin;
      const std::uint32_t e = m.tokens()[callee->names[callee->names.size() - 2]].end;
      mod = std::string(m.text().substr(b, e - b));
    }
    ctx.used_device_var = true;
    ctx.require_torch(kAcceleratorMinTorch);
    return mod + ".get_default_backend_for_device(" + std::string(kDeviceVar) + ")";
  };
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  for (TokenIndex i = 0; i < n; ++i) {
    if (m.kind(i) != TokenKind::String) continue;
    auto sv = semantic::string_value(m.text(), m.tokens()[i]);
    if (!sv || (sv->value != "nccl" && sv->value != "NCCL")) continue;
    const syntax::Token& tok = m.tokens()[i];
    bool is_backend = false;
    const semantic::Reference* callee = nullptr;
    if (auto en = m.enclosing_open(i); en && m.kind(*en) == TokenKind::LPar) {
      callee = callee_of(m, *en);
      std::string_view last = callee_last_name(m, *en);
      if (backend_call(callee ? callee->qualified : std::string(), last)) {
        auto args = call_args(m, *en);
        for (std::size_t a = 0; a < args.size(); ++a) {
          if (args[a].first == i && args[a].last == i &&
              ((a == 0 && args[a].keyword.empty()) || args[a].keyword == "backend")) {
            is_backend = true;
          }
          if (args[a].keyword == "backend" && args[a].last == i) is_backend = true;
        }
      }
    }
    // get_backend() == "nccl"
    bool comparison = false;
    if (auto p = m.prev(i);
        p && (m.kind(*p) == TokenKind::EqEqual || m.kind(*p) == TokenKind::NotEqual)) {
      auto pp = m.prev(*p);
      if (pp && m.kind(*pp) == TokenKind::RPar) {
        auto open = m.match(*pp);
        if (open && callee_last_name(m, *open) == "get_backend") comparison = true;
      }
    }
    if (!is_backend && !comparison) continue;
    if (ctx.accelerator()) {
      if (comparison) {
        ctx.flag("TP400", Operation::Unsupported, "nccl",
                 "comparison with the nccl backend; the backend depends on the device at run time",
                 tok.begin, tok.end);
        continue;
      }
      ctx.modify("TP400", "nccl", "change backend nccl to the default backend of the device",
                 tok.begin, tok.end, accel_backend(callee));
      continue;
    }
    std::string repl = backend;
    if (sv->value == "NCCL") {
      for (char& c : repl) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    ctx.modify("TP400", "nccl",
               "replace string \"" + std::string(sv->value) + "\" with \"" + repl + "\"" + note,
               sv->value_begin, sv->value_begin + 4, repl);
  }
  ddp_device_ids(ctx);
  for (const semantic::Reference& ref : m.references()) {
    const std::string& q = ref.qualified;
    const std::uint32_t b = m.tokens()[ref.first].begin;
    const std::uint32_t e = m.tokens()[ref.last].end;
    if (q == "torch.nn.DataParallel" || q == "torch.nn.parallel.DataParallel" ||
        q == "torch.nn.parallel.data_parallel.DataParallel") {
      ctx.flag("TP401", Operation::Unsupported, "torch.nn.DataParallel",
               "DataParallel only drives CUDA devices; use DistributedDataParallel with one "
               "process per device",
               b, e);
    }
  }
}

}  // namespace torchport::rules
