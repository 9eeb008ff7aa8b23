// Rule family TP400-TP402: distributed training.
//
// What it does:
//   TP400 replaces the NCCL backend with the target's collective backend: "nccl" in the
//   backend argument of init_process_group / new_group (also inside an expression such as
//   `"nccl" if ok else "gloo"`), in the simple assignments of a variable passed as the backend
//   (`backend = "nccl"`), in the default= and choices= of an argparse option whose name
//   mentions "backend", and in comparisons with get_backend(). A backend argument whose value
//   cannot be resolved (a parameter, `cfg.backend`, a call) is reported UNKNOWN.
//   torch.distributed.Backend.NCCL and is_nccl_available() are catalogued (TP100).
//   TP401 reports torch.nn.DataParallel, which only drives CUDA devices (with --distributed,
//   TP412 replaces it instead).
//   TP402 handles DistributedDataParallel's device_ids= and output_device= keywords and
//   init_process_group's device_id=: cpu drops
//   them; accelerator passes them only when an accelerator is available
//   (`device_ids=[rank] if torch.accelerator.is_available() else None`); the other targets keep
//   them.
//   TP403: where `n = torch.cuda.device_count()` is the process count of a later
//   torch.multiprocessing.spawn in the same scope, the count is 0 without a device and spawn
//   starts no process, silently. accelerator and cpu get a CPU path after the assignment
//   (`if n == 0: n = 2`, 2 processes over gloo); the device targets a guard (`if n < 1: raise
//   SystemExit("no NPU found: ...")`). Both are labelled as a change of behaviour.
// Why:
//   NCCL exists only on NVIDIA GPUs; the targets use hccl (npu, hpu), cncl (mlu), mccl (musa),
//   xccl (xpu) or gloo (cpu, and mps which has no collective backend).
// Example:
//   dist.init_process_group(backend="nccl")
// Becomes (npu):
//   dist.init_process_group(backend="hccl")
//   ddp = DDP(model, device_ids=[rank])  -> cpu: DDP(model)
//   (accelerator: backend=dist.get_default_backend_for_device(device), torch >= 2.6)
// Safety:
//   "nccl" anywhere else (a log message) is left alone; so is a variable assigned anything but
//   string literals (reported instead). DataParallel is reported, never
//   rewritten: replacing it with DistributedDataParallel needs a launcher and process group.
//   DistributedDataParallel refuses device_ids/output_device for a CPU module (ValueError),
//   which is why TP402 drops them there.
#include <torchport/rules/context.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace torchport::rules {

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

bool nccl_string(const semantic::Model& m, TokenIndex i) {
  if (m.kind(i) != TokenKind::String) return false;
  auto sv = semantic::string_value(m.text(), m.tokens()[i]);
  return sv && (sv->value == "nccl" || sv->value == "NCCL");
}

bool backend_call(std::string_view q, std::string_view last) {
  return q == "torch.distributed.init_process_group" || q == "torch.distributed.new_group" ||
         q == "torch.distributed.distributed_c10d.init_process_group" ||
         (q.empty() && (last == "init_process_group" || last == "new_group"));
}

// DistributedDataParallel refuses device_ids/output_device for a CPU module, and
// init_process_group a CPU device_id (ValueError).
void ddp_device_ids(Context& ctx) {
  if (!ctx.target.host && !ctx.accelerator()) return;
  const semantic::Model& m = ctx.m;
  for (const semantic::Reference& ref : m.references()) {
    const std::string& q = ref.qualified;
    // init_process_group(device_id=) refuses a CPU device too (ValueError).
    const bool init = q == "torch.distributed.init_process_group" ||
                      q == "torch.distributed.distributed_c10d.init_process_group";
    if (q != "torch.nn.parallel.DistributedDataParallel" &&
        q != "torch.nn.parallel.distributed.DistributedDataParallel" && !init) {
      continue;
    }
    auto lpar = m.next(ref.last);
    if (!lpar || m.kind(*lpar) != TokenKind::LPar) continue;
    auto args = call_args(m, *lpar);
    for (std::size_t a = 0; a < args.size(); ++a) {
      const Arg& arg = args[a];
      if (init ? arg.keyword != "device_id"
               : arg.keyword != "device_ids" && arg.keyword != "output_device") {
        continue;
      }
      const std::string api =
          std::string(init ? "init_process_group(" : "DistributedDataParallel(") +
          std::string(arg.keyword) + "=)";
      const std::string why = init ? "init_process_group refuses a CPU device_id"
                                   : "DistributedDataParallel refuses device ids for a CPU module";
      if (ctx.target.host) {
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
        f.message = "delete " + std::string(arg.keyword) + "= (" + why + ")";
        f.begin = m.tokens()[arg.first].begin;
        f.end = m.tokens()[arg.last].end;
        fix::Fix fx;
        fx.edits.push_back(fix::Edit{b, e, ""});
        fx.applicability = fix::Applicability::Unsafe;
        f.changes = "changes behaviour: " + std::string(arg.keyword) + " dropped";
        f.fix = std::move(fx);
        // The deleted argument takes the rewrites inside it along (device rules run first).
        std::erase_if(ctx.result.findings,
                      [&](const Finding& g) { return g.begin >= f.begin && g.end <= f.end; });
        ctx.result.findings.push_back(std::move(f));
        ctx.changed = true;
        continue;
      }
      // accelerator: the ids only when an accelerator is available.
      const TokenIndex v = *m.next(*m.next(arg.first));  // the value, after `name =`
      const std::uint32_t vb = m.tokens()[v].begin;
      const std::uint32_t ve = m.tokens()[arg.last].end;
      const std::string_view value = m.text().substr(vb, ve - vb);
      const std::string cond =
          " if " + ctx.render("torch.accelerator.is_available()") + " else None";
      if (value.find(cond.substr(1)) != std::string_view::npos) continue;  // already done
      bool paren = false;
      for (TokenIndex t = v; t <= arg.last; ++t) {
        if (m.kind(t) == TokenKind::KwIf || m.kind(t) == TokenKind::KwLambda) paren = true;
      }
      ctx.require_torch(kAcceleratorMinTorch);
      // Insertions around the value, so that rewrites inside it (a "cuda" string) still apply.
      Finding f;
      f.code = "TP402";
      f.op = Operation::Modify;
      f.api = api;
      f.message = "pass " + std::string(arg.keyword) + "= only when an accelerator is available (" +
                  why + ")";
      f.begin = vb;
      f.end = ve;
      fix::Fix fx;
      if (paren) fx.edits.push_back(fix::Edit{vb, vb, "("});
      fx.edits.push_back(fix::Edit{ve, ve, (paren ? ")" : "") + cond});
      f.fix = std::move(fx);
      ctx.result.findings.push_back(std::move(f));
      ctx.changed = true;
    }
  }
}

// TP403: `n = torch.cuda.device_count()` whose `n` is the process count of a later
// torch.multiprocessing.spawn / start_processes call in the same scope (nprocs=n, or the third
// positional argument). Without a device the count is 0 and spawn starts no process: the
// script ends at once, silently. accelerator and cpu get a CPU path (2 processes over gloo,
// the backend get_default_backend_for_device / TP400 give the CPU); the device targets a guard
// that says why the script stops.
void process_count(Context& ctx) {
  const semantic::Model& m = ctx.m;
  const auto& lines = m.lines();
  auto spawn_call = [](std::string_view q) {
    return q == "torch.multiprocessing.spawn" || q == "torch.multiprocessing.start_processes" ||
           q == "torch.multiprocessing.spawn.spawn" ||
           q == "torch.multiprocessing.spawn.start_processes";
  };
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const semantic::Line& line = lines[li];
    const auto& t = line.tokens;
    if (t.size() < 5 || m.kind(t[0]) != TokenKind::Name || m.kind(t[1]) != TokenKind::Equal ||
        m.kind(t.back()) != TokenKind::RPar || m.kind(t[t.size() - 2]) != TokenKind::LPar)
      continue;
    const semantic::Reference* callee = callee_of(m, t[t.size() - 2]);
    if (!callee || callee->first != t[2] || callee->qualified != "torch.cuda.device_count")
      continue;
    const std::string_view name = m.token_text(t[0]);
    // Is `name` (or a plain copy, `world_size = n_gpus`) the process count of a spawn call
    // later in the same scope?
    std::set<std::string_view> names = {name};
    bool counts_processes = false;
    for (std::size_t lj = li + 1; lj < lines.size() && !counts_processes; ++lj) {
      if (lines[lj].scope != line.scope) continue;
      const auto& u = lines[lj].tokens;
      if (u.size() == 3 && m.kind(u[0]) == TokenKind::Name && m.kind(u[1]) == TokenKind::Equal &&
          m.kind(u[2]) == TokenKind::Name && names.contains(m.token_text(u[2])))
        names.insert(m.token_text(u[0]));
      for (TokenIndex k : u) {
        if (m.kind(k) != TokenKind::LPar) continue;
        const semantic::Reference* c = callee_of(m, k);
        if (!c || !spawn_call(c->qualified)) continue;
        std::size_t pos = 0;
        for (const Arg& a : call_args(m, k)) {
          const bool nprocs = a.keyword == "nprocs" || (a.keyword.empty() && pos == 2);
          if (a.keyword.empty()) ++pos;
          if (!nprocs) continue;
          const TokenIndex v = a.keyword.empty() ? a.first : *m.next(*m.next(a.first));
          if (v == a.last && m.kind(v) == TokenKind::Name && names.contains(m.token_text(v)))
            counts_processes = true;
        }
      }
    }
    if (!counts_processes) continue;
    const std::string_view text = m.text();
    const std::size_t bol = text.find_last_of("\r\n", line.begin - 1) + 1;  // npos + 1 == 0
    const std::string indent(text.substr(bol, line.begin - bol));
    const std::string nl(m.newline());
    const std::string n(name);
    const std::uint32_t at = line.end;
    if (ctx.accelerator() || ctx.target.host) {
      ctx.modify("TP403", "torch.cuda.device_count",
                 "without a device, run " + n + " = 2 CPU processes (gloo) instead of none", at, at,
                 indent + "if " + n + " == 0:" + nl + indent + "    " + n +
                     " = 2  # no accelerator: 2 CPU processes over gloo" + nl);
      ctx.label_last("changes behaviour: 2 CPU processes where the original started none",
                     fix::Applicability::Unsafe);
    } else {
      // The script checks the count itself on the next line (`assert n_gpus >= 2, "..."`):
      // its own message says why it stops.
      const bool checked =
          li + 1 < lines.size() && !lines[li + 1].tokens.empty() &&
          m.kind(lines[li + 1].tokens[0]) == TokenKind::KwAssert &&
          std::any_of(lines[li + 1].tokens.begin(), lines[li + 1].tokens.end(), [&](TokenIndex k) {
            return m.kind(k) == TokenKind::Name && m.token_text(k) == name;
          });
      if (checked) continue;
      std::string dev = ctx.target.device;
      for (char& c : dev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      ctx.modify(
          "TP403", "torch.cuda.device_count",
          "stop with a message when no " + dev + " is found (" + n + " == 0 starts no process)", at,
          at,
          indent + "if " + n + " < 1:" + nl + indent + "    raise SystemExit(\"no " + dev +
              " found: this script starts one process per " + dev + "\")" + nl);
      ctx.label_last(
          "changes behaviour: exits with a message where the original started no process",
          fix::Applicability::Unsafe);
    }
  }
}

}  // namespace

void run_distributed(Context& ctx) {
  const semantic::Model& m = ctx.m;
  const std::string backend = ctx.target.backend.empty() ? "gloo" : ctx.target.backend;
  const std::string note =
      backend == "gloo" && !ctx.target.host && !ctx.accelerator()
          ? " (" + ctx.target.name + " has no collective backend: gloo runs on the CPU)"
          : "";
  // The backend expression for the accelerator target, spelled with the callee's module.
  auto accel_backend = [&](const semantic::Reference* callee, std::uint32_t at) {
    auto alias = m.module_alias("torch.distributed");
    std::string mod = alias ? *alias : ctx.render("torch.distributed");
    if (callee && callee->names.size() >= 2) {
      const std::uint32_t b = m.tokens()[callee->first].begin;
      const std::uint32_t e = m.tokens()[callee->names[callee->names.size() - 2]].end;
      mod = std::string(m.text().substr(b, e - b));
    }
    ctx.require_torch(kAcceleratorMinTorch);
    return mod + ".get_default_backend_for_device(" + ctx.device_expr(at) + ")";
  };
  std::set<TokenIndex> done;  // "nccl" string tokens already rewritten
  // Rewrites the "nccl" string token `i`; `how` says where the string was found.
  auto rewrite = [&](TokenIndex i, const semantic::Reference* callee, const std::string& how) {
    if (!done.insert(i).second) return;
    auto sv = semantic::string_value(m.text(), m.tokens()[i]);
    const syntax::Token& tok = m.tokens()[i];
    if (ctx.accelerator()) {
      ctx.modify("TP400", "nccl", "change backend nccl to the default backend of the device" + how,
                 tok.begin, tok.end, accel_backend(callee, tok.begin));
      return;
    }
    std::string repl = backend;
    if (sv->value == "NCCL") {
      for (char& c : repl) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    ctx.modify(
        "TP400", "nccl",
        "replace string \"" + std::string(sv->value) + "\" with \"" + repl + "\"" + how + note,
        sv->value_begin, sv->value_begin + 4, repl);
  };
  // Rewrites every "nccl" string in tokens [first, last]; returns how many it found.
  auto rewrite_in = [&](TokenIndex first, TokenIndex last, const semantic::Reference* callee,
                        const std::string& how) {
    std::size_t found = 0;
    for (TokenIndex t = first; t <= last; ++t) {
      if (nccl_string(m, t)) {
        rewrite(t, callee, how);
        ++found;
      }
    }
    return found;
  };
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  // argparse options whose name mentions "backend": their default and choices (TP400), and
  // their dest names, so that `args.dist_backend` counts as resolved.
  std::set<std::string, std::less<>> backend_options;
  for (TokenIndex i = 0; i < n; ++i) {
    if (m.kind(i) != TokenKind::LPar || callee_last_name(m, i) != "add_argument") continue;
    auto args = call_args(m, i);
    std::string option;
    std::vector<std::string> dests;
    for (const Arg& a : args) {
      if (!a.keyword.empty() || a.first != a.last || m.kind(a.first) != TokenKind::String) continue;
      auto sv = semantic::string_value(m.text(), m.tokens()[a.first]);
      if (!sv) continue;
      std::string name(sv->value);
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower.find("backend") == std::string::npos) continue;
      if (option.empty() || name.starts_with("--")) option = name;
      std::string dest = name.substr(name.find_first_not_of('-'));
      std::replace(dest.begin(), dest.end(), '-', '_');
      dests.push_back(dest);
    }
    if (option.empty()) continue;
    for (const Arg& a : args) {
      if (a.keyword == "dest") {
        if (auto sv = semantic::string_value(m.text(), m.tokens()[a.last])) {
          dests.emplace_back(sv->value);
        }
      }
      if (a.keyword != "default" && a.keyword != "choices") continue;
      rewrite_in(a.first, a.last, nullptr,
                 " (" + std::string(a.keyword) + " of the " + option + " option)");
    }
    backend_options.insert(dests.begin(), dests.end());
  }
  for (TokenIndex i = 0; i < n; ++i) {
    if (m.kind(i) != TokenKind::LPar) continue;
    const semantic::Reference* callee = callee_of(m, i);
    if (!backend_call(callee ? callee->qualified : std::string(), callee_last_name(m, i))) {
      continue;
    }
    auto args = call_args(m, i);
    const Arg* arg = nullptr;
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (args[a].keyword == "backend" || (a == 0 && args[a].keyword.empty())) arg = &args[a];
      if (args[a].keyword == "backend") break;
    }
    if (!arg) continue;
    // new_group's first positional argument is `ranks`, not the backend.
    if (arg->keyword.empty() && callee_last_name(m, i) == "new_group") continue;
    const TokenIndex first = arg->keyword.empty() ? arg->first : *m.next(*m.next(arg->first));
    if (rewrite_in(first, arg->last, callee, "") > 0) continue;
    if (first == arg->last && m.kind(first) == TokenKind::String) continue;  // "gloo", "hccl"
    const std::string_view expr = m.text().substr(
        m.tokens()[first].begin, m.tokens()[arg->last].end - m.tokens()[first].begin);
    if (expr.find("get_default_backend_for_device") != std::string_view::npos) continue;
    // dist.Backend.NCCL and other imported names: the catalogue's business (TP100).
    if (const semantic::Reference* r = m.reference_at(first);
        r && r->first == first && r->last == arg->last && !r->qualified.empty()) {
      continue;
    }
    bool resolved = false;
    if (first == arg->last && m.kind(first) == TokenKind::Name) {
      // A variable: its simple assignments in this scope or at module level.
      const std::string_view name = m.token_text(first);
      const std::uint32_t scope = m.lines()[*m.line_of(first)].scope;
      std::size_t assignments = 0, literal = 0;
      for (const semantic::Line& line : m.lines()) {
        if (line.tokens.size() < 3 || (line.scope != scope && line.scope != 0) ||
            m.kind(line.tokens[0]) != TokenKind::Name || m.token_text(line.tokens[0]) != name ||
            m.kind(line.tokens[1]) != TokenKind::Equal || line.tokens[0] > first) {
          continue;
        }
        ++assignments;
        const TokenIndex vb = line.tokens[2], ve = line.tokens.back();
        if (rewrite_in(vb, ve, callee, " (assigned to " + std::string(name) + ")") > 0 ||
            (vb == ve && m.kind(vb) == TokenKind::String)) {
          ++literal;
        }
      }
      resolved = assignments > 0 && literal == assignments;
    } else if (arg->last == *m.next(*m.next(first)) && m.kind(arg->last) == TokenKind::Name &&
               m.kind(*m.next(first)) == TokenKind::Dot) {
      // args.dist_backend: an argparse option of this file.
      resolved = backend_options.contains(m.token_text(arg->last));
    }
    if (resolved) continue;
    ctx.flag("TP400", Operation::Unknown, "nccl",
             "the backend is given as `" + std::string(expr) +
                 "`, whose value torchport cannot resolve; if it can be nccl, use " +
                 (ctx.accelerator() ? std::string("torch.distributed.get_default_backend_for_"
                                                  "device(device)")
                                    : "\"" + backend + "\"" + note),
             m.tokens()[first].begin, m.tokens()[arg->last].end);
  }
  // get_backend() == "nccl"
  for (TokenIndex i = 0; i < n; ++i) {
    if (!nccl_string(m, i) || done.contains(i)) continue;
    auto p = m.prev(i);
    if (!p || (m.kind(*p) != TokenKind::EqEqual && m.kind(*p) != TokenKind::NotEqual)) continue;
    auto pp = m.prev(*p);
    if (!pp || m.kind(*pp) != TokenKind::RPar) continue;
    auto open = m.match(*pp);
    if (!open || callee_last_name(m, *open) != "get_backend") continue;
    if (ctx.accelerator()) {
      const syntax::Token& tok = m.tokens()[i];
      ctx.flag("TP400", Operation::Unsupported, "nccl",
               "comparison with the nccl backend; the backend depends on the device at run time",
               tok.begin, tok.end);
      continue;
    }
    rewrite(i, nullptr, "");
  }
  ddp_device_ids(ctx);
  process_count(ctx);
  for (const semantic::Reference& ref : m.references()) {
    const std::string& q = ref.qualified;
    const std::uint32_t b = m.tokens()[ref.first].begin;
    const std::uint32_t e = m.tokens()[ref.last].end;
    // With --distributed, TP412 (ddp.cc) replaces it by DistributedDataParallel.
    if ((q == "torch.nn.DataParallel" || q == "torch.nn.parallel.DataParallel" ||
         q == "torch.nn.parallel.data_parallel.DataParallel") &&
        !ctx.opts.distributed) {
      ctx.flag("TP401", Operation::Unsupported, "torch.nn.DataParallel",
               "DataParallel only drives CUDA devices; use DistributedDataParallel with one "
               "process per device",
               b, e);
    }
  }
}

}  // namespace torchport::rules
