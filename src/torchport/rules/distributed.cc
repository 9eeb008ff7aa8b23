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
//   TP403: where torch.cuda.device_count() is the process count of a
//   torch.multiprocessing.spawn (`n = torch.cuda.device_count()` with `n` the count of a later
//   spawn in the same scope, the call as the count itself, or a count passed to a function of
//   the file whose parameter is the count), the count is 0 without a device and spawn starts no
//   process, silently. accelerator gets a CPU path after the count (`if n == 0: n = 2`, 2
//   processes over gloo), cpu the 2 itself, the device targets a guard (`if n < 1: raise
//   SystemExit("no NPU found: ...")`). All are labelled as a change of behaviour.
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
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace torchport::rules {

namespace {

/// TP400 (nccl-backend): nccl in init_process_group/new_group, Backend.NCCL, is_nccl_available. Its
/// one producer: every TP400 finding is made here.
void tp400(Context& ctx, Draft d) { ctx.add("TP400", std::move(d)); }

/// TP401 (data-parallel): torch.nn.DataParallel is flagged with the DDP recommendation. Its one
/// producer: every TP401 finding is made here.
void tp401(Context& ctx, Draft d) { ctx.add("TP401", std::move(d)); }

/// TP402 (ddp-device-ids): DDP device_ids=/output_device=, init_process_group device_id= on cpu and
/// accelerator. Its one producer: every TP402 finding is made here.
void tp402(Context& ctx, Draft d) { ctx.add("TP402", std::move(d)); }

/// TP403 (process-count): mp.spawn counts from torch.cuda.device_count(): a CPU path or a guard,
/// per target. Its one producer: every TP403 finding is made here.
void tp403(Context& ctx, Draft d) { ctx.add("TP403", std::move(d)); }

}  // namespace

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
    const std::string_view q = ref.qualified;  // compared: a view tests the length first
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
        Draft f;
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
        f.drops = {f.begin, f.end};
        f.changes_file = true;
        tp402(ctx, std::move(f));
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
      Draft f;
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
      f.changes_file = true;
      tp402(ctx, std::move(f));
    }
  }
}

bool spawn_call(std::string_view q) {
  return q == "torch.multiprocessing.spawn" || q == "torch.multiprocessing.start_processes" ||
         q == "torch.multiprocessing.spawn.spawn" ||
         q == "torch.multiprocessing.spawn.start_processes";
}

/// The value tokens [first, last] of the process count of the spawn call whose `(` is `lpar`:
/// nprocs=, or the third positional argument.
std::optional<std::pair<TokenIndex, TokenIndex>> nprocs_arg(const semantic::Model& m,
                                                            TokenIndex lpar) {
  std::size_t pos = 0;
  for (const Arg& a : call_args(m, lpar)) {
    const bool nprocs = a.keyword == "nprocs" || (a.keyword.empty() && pos == 2);
    if (a.keyword.empty()) ++pos;
    if (nprocs) return std::pair{a.keyword.empty() ? a.first : *m.next(*m.next(a.first)), a.last};
  }
  return std::nullopt;
}

/// `torch.cuda.device_count()` starting at token `i`: its byte range.
std::optional<std::pair<std::uint32_t, std::uint32_t>> device_count_call(const semantic::Model& m,
                                                                         TokenIndex i) {
  const semantic::Reference* r = m.reference_at(i);
  if (!r || r->first != i || r->qualified != "torch.cuda.device_count") return std::nullopt;
  auto lp = m.next(r->last);
  if (!lp || m.kind(*lp) != TokenKind::LPar) return std::nullopt;
  auto rp = m.next(*lp);
  if (!rp || m.kind(*rp) != TokenKind::RPar) return std::nullopt;
  return std::pair{m.tokens()[i].begin, m.tokens()[*rp].end};
}

/// What goes after `n = <count>` for the target: a CPU path (accelerator), or a guard that says
/// why the script stops (device targets); "" for the host targets, which set n = 2 themselves.
std::string count_guard(const Context& ctx, const std::string& n, const std::string& indent,
                        const std::string& nl) {
  if (ctx.target.host) return "";
  if (ctx.accelerator()) {
    return indent + "if " + n + " == 0:" + nl + indent + "    " + n +
           " = 2  # no accelerator: 2 CPU processes over gloo" + nl;
  }
  std::string dev = ctx.target.device;
  for (char& c : dev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return indent + "if " + n + " < 1:" + nl + indent + "    raise SystemExit(\"no " + dev +
         " found: this script starts one process per " + dev + "\")" + nl;
}

/// A process count's rewrite, labelled: what the count now does where the original started no
/// process.
Draft count_labelled(const Context& ctx, Draft d) {
  if (ctx.accelerator() || ctx.target.host) {
    return std::move(d).labelled(
        "changes behaviour: 2 CPU processes where the original started none",
        fix::Applicability::Unsafe);
  }
  return std::move(d).labelled(
      "changes behaviour: exits with a message where the original started no process",
      fix::Applicability::Unsafe);
}

std::string count_message(const Context& ctx, const std::string& n) {
  if (ctx.accelerator() || ctx.target.host)
    return "without a device, run " + n + " = 2 CPU processes (gloo) instead of none";
  std::string dev = ctx.target.device;
  for (char& c : dev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "stop with a message when no " + dev + " is found (" + n + " == 0 starts no process)";
}

/// A parameter of a module-level function that is the process count of a spawn call in its body
/// (`def run(fn, world_size): mp.spawn(fn, nprocs=world_size)`): its position and name.
constexpr std::size_t kKeywordOnly = ~std::size_t{0};
struct CountParam {
  std::size_t position = 0;  ///< kKeywordOnly for a keyword-only parameter
  std::string_view name;
};
using CountParams = std::map<std::string_view, CountParam, std::less<>>;

CountParams count_params(const semantic::Model& m) {
  CountParams out;
  const auto& lines = m.lines();
  for (std::size_t hi = 0; hi + 1 < lines.size(); ++hi) {
    const auto& h = lines[hi].tokens;
    std::size_t d = h.size() > 0 && m.kind(h[0]) == TokenKind::KwAsync ? 1 : 0;
    if (lines[hi].scope != 0 || h.size() < d + 4 || m.kind(h[d]) != TokenKind::KwDef ||
        m.kind(h[d + 2]) != TokenKind::LPar)
      continue;
    const std::uint32_t body = lines[hi + 1].scope;
    if (body == 0) continue;                                // a one-line def
    std::vector<std::pair<std::string_view, bool>> params;  // name, keyword-only
    bool keyword_only = false;
    for (const Arg& a : call_args(m, h[d + 2])) {
      if (m.kind(a.first) == TokenKind::Star || m.kind(a.first) == TokenKind::DoubleStar) {
        keyword_only = true;
        continue;
      }
      if (m.kind(a.first) == TokenKind::Name)
        params.emplace_back(m.token_text(a.first), keyword_only);
    }
    // The body runs to the next module-level line (nested scopes in between are skipped):
    // scanning to the end of the file made a module of many functions quadratic.
    for (std::size_t lj = hi + 1; lj < lines.size() && lines[lj].scope != 0; ++lj) {
      if (lines[lj].scope != body) continue;
      for (TokenIndex k : lines[lj].tokens) {
        if (m.kind(k) != TokenKind::LPar) continue;
        const semantic::Reference* c = callee_of(m, k);
        if (!c || !spawn_call(c->qualified)) continue;
        auto v = nprocs_arg(m, k);
        if (!v || v->first != v->second || m.kind(v->first) != TokenKind::Name) continue;
        for (std::size_t p = 0; p < params.size(); ++p) {
          if (params[p].first == m.token_text(v->first))
            out[m.token_text(h[d + 1])] =
                CountParam{params[p].second ? kKeywordOnly : p, params[p].first};
        }
      }
    }
  }
  return out;
}

/// The value tokens [first, last] of the process count the call whose `(` is `lpar` receives:
/// a spawn call's nprocs, or the count parameter of a function of the file.
std::optional<std::pair<TokenIndex, TokenIndex>> count_arg(const semantic::Model& m,
                                                           const CountParams& params,
                                                           TokenIndex lpar) {
  const semantic::Reference* c = callee_of(m, lpar);
  if (c && spawn_call(c->qualified)) return nprocs_arg(m, lpar);
  auto callee = m.prev(lpar);
  if (!callee || m.kind(*callee) != TokenKind::Name) return std::nullopt;
  if (auto before = m.prev(*callee); before && m.kind(*before) == TokenKind::Dot)
    return std::nullopt;
  auto it = params.find(m.token_text(*callee));
  if (it == params.end()) return std::nullopt;
  std::size_t pos = 0;
  for (const Arg& a : call_args(m, lpar)) {
    if (m.kind(a.first) == TokenKind::Star || m.kind(a.first) == TokenKind::DoubleStar)
      return std::nullopt;  // *args: the positions are unknown
    const bool hit = a.keyword.empty() ? pos == it->second.position : a.keyword == it->second.name;
    if (a.keyword.empty()) ++pos;
    if (hit) return std::pair{a.keyword.empty() ? a.first : *m.next(*m.next(a.first)), a.last};
  }
  return std::nullopt;
}

constexpr std::string_view kHostCount = "2  # no device here: 2 CPU processes over gloo";

/// The start of `line`'s physical line and its indentation.
std::pair<std::uint32_t, std::string> indent_of(std::string_view text, const semantic::Line& line) {
  const std::size_t bol = text.find_last_of("\r\n", line.begin - 1) + 1;  // npos + 1 == 0
  return std::pair{static_cast<std::uint32_t>(bol),
                   std::string(text.substr(bol, line.begin - bol))};
}

// TP403, the count in a name: `n = torch.cuda.device_count()` where n is a spawn's count.
void named_counts(Context& ctx, const CountParams& params) {
  const semantic::Model& m = ctx.m;
  const auto& lines = m.lines();
  const std::string nl(m.newline());
  // `n = torch.cuda.device_count()` lines.
  std::vector<std::size_t> counted;
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const auto& t = lines[li].tokens;
    if (t.size() < 5 || m.kind(t[0]) != TokenKind::Name || m.kind(t[1]) != TokenKind::Equal ||
        m.kind(t.back()) != TokenKind::RPar || m.kind(t[t.size() - 2]) != TokenKind::LPar)
      continue;
    const semantic::Reference* callee = callee_of(m, t[t.size() - 2]);
    if (callee && callee->first == t[2] && callee->qualified == "torch.cuda.device_count")
      counted.push_back(li);
  }
  // Per scope, in line order: the plain copies (`world_size = n_gpus`: dst, src) and the names
  // given as a process count (dst only). One pass over the file, so that each count line looks
  // only at these events, not at every later line (that was quadratic in a large module).
  struct CountEvent {
    std::size_t line;
    std::string_view dst, src;
  };
  std::map<std::uint32_t, std::vector<CountEvent>> events;
  if (!counted.empty()) {
    for (std::size_t lj = 0; lj < lines.size(); ++lj) {
      const auto& u = lines[lj].tokens;
      std::vector<CountEvent>* list = nullptr;
      auto add = [&](CountEvent e) {
        if (!list) list = &events[lines[lj].scope];
        list->push_back(e);
      };
      if (u.size() == 3 && m.kind(u[0]) == TokenKind::Name && m.kind(u[1]) == TokenKind::Equal &&
          m.kind(u[2]) == TokenKind::Name)
        add({lj, m.token_text(u[0]), m.token_text(u[2])});
      for (TokenIndex k : u) {
        if (m.kind(k) != TokenKind::LPar) continue;
        auto v = count_arg(m, params, k);
        if (v && v->first == v->second && m.kind(v->first) == TokenKind::Name)
          add({lj, m.token_text(v->first), {}});
      }
    }
  }
  for (const std::size_t li : counted) {
    const semantic::Line& line = lines[li];
    const auto& t = line.tokens;
    const std::string_view name = m.token_text(t[0]);
    // Is `name` (or a plain copy, `world_size = n_gpus`) the process count of a spawn call
    // later in the same scope?
    std::set<std::string_view> names = {name};
    bool counts_processes = false;
    if (auto it = events.find(line.scope); it != events.end()) {
      for (const CountEvent& e : it->second) {
        if (e.line <= li) continue;
        if (!e.src.empty()) {
          if (names.contains(e.src)) names.insert(e.dst);
        } else if (names.contains(e.dst)) {
          counts_processes = true;
          break;
        }
      }
    }
    if (!counts_processes) continue;
    const std::string indent = indent_of(m.text(), line).second;
    const std::string n(name);
    const std::uint32_t at = line.end;
    if (ctx.target.host) {
      // cpu counts no device: the count is the CPU path's 2, said in a comment above.
      const std::uint32_t rb = m.tokens()[t[2]].begin, re = m.tokens()[t.back()].end;
      Draft f;
      f.api = "torch.cuda.device_count";
      f.message = count_message(ctx, n);
      f.begin = rb;
      f.end = re;
      fix::Fix fx;
      fx.edits.push_back(fix::Edit{rb, re, std::string(kHostCount)});
      f.fix = std::move(fx);
      f.changes_file = true;
      // The rewrites inside the replaced value go with it.
      tp403(ctx, count_labelled(ctx, std::move(f).taking(rb, re)));
      continue;
    }
    if (!ctx.accelerator()) {
      // The script checks the count itself on the next line (`assert n_gpus >= 2, "..."`):
      // its own message says why it stops.
      const bool checked =
          li + 1 < lines.size() && !lines[li + 1].tokens.empty() &&
          m.kind(lines[li + 1].tokens[0]) == TokenKind::KwAssert &&
          std::any_of(lines[li + 1].tokens.begin(), lines[li + 1].tokens.end(), [&](TokenIndex k) {
            return m.kind(k) == TokenKind::Name && m.token_text(k) == name;
          });
      if (checked) continue;
    }
    tp403(ctx, count_labelled(ctx, ctx.rewrite("torch.cuda.device_count", count_message(ctx, n), at,
                                               at, count_guard(ctx, n, indent, nl))));
  }
}

/// A simple statement of its own (not `if c: mp.spawn(...)`).
bool simple_statement(const semantic::Model& m, const semantic::Line& line) {
  switch (m.kind(line.tokens[0])) {
    case TokenKind::KwIf:
    case TokenKind::KwElif:
    case TokenKind::KwElse:
    case TokenKind::KwWhile:
    case TokenKind::KwFor:
    case TokenKind::KwWith:
    case TokenKind::KwTry:
    case TokenKind::KwExcept:
    case TokenKind::KwFinally:
    case TokenKind::KwDef:
    case TokenKind::KwClass:
    case TokenKind::KwAsync:
    case TokenKind::KwLambda:
    case TokenKind::At:
      return false;
    default:
      return true;
  }
}

// TP403, the count given to spawn directly: `mp.spawn(fn, args=(torch.cuda.device_count(),),
// nprocs=torch.cuda.device_count())`. The count gets a name, assigned before the statement
// and followed by the target's path; every device_count() of the statement reads it.
void direct_counts(Context& ctx, const CountParams& params) {
  const semantic::Model& m = ctx.m;
  const auto& lines = m.lines();
  const std::string nl(m.newline());
  // A name that nothing in reach binds: not the scope, its outermost function, or the module
  // (a load of an unbound name was a NameError, so the new binding changes no reader).
  auto free_name = [&](std::uint32_t scope) -> std::optional<std::string> {
    for (std::string_view cand : {"world_size", "nprocs", "num_procs"}) {
      if (!m.lookup(cand, scope) && !m.lookup(cand, m.outermost_function(scope)) &&
          !m.lookup(cand, 0))
        return std::string(cand);
    }
    return std::nullopt;
  };
  // The count named for an earlier statement of a scope: later statements of the same block
  // read it (scope -> line index).
  std::map<std::uint32_t, std::size_t> named;
  for (std::size_t li = 0; li < lines.size(); ++li) {
    const semantic::Line& line = lines[li];
    const auto& t = line.tokens;
    if (t.empty() || !simple_statement(m, line)) continue;
    bool direct = false;
    for (TokenIndex k : t) {
      if (m.kind(k) != TokenKind::LPar) continue;
      auto v = count_arg(m, params, k);
      if (!v) continue;
      auto call = device_count_call(m, v->first);
      if (call && m.tokens()[v->second].end == call->second) direct = true;
    }
    if (!direct) continue;
    // An earlier statement of the same block (nothing dedented between) named the count.
    bool reuse = false;
    if (auto e = named.find(line.scope); e != named.end() && lines[e->second].depth == line.depth) {
      reuse = true;
      for (std::size_t k = e->second; k < li; ++k) {
        if (lines[k].scope == line.scope && lines[k].depth < line.depth) reuse = false;
      }
    }
    std::optional<std::string> n = free_name(line.scope);
    if (!n) continue;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> calls;
    for (TokenIndex k : t)
      if (auto c = device_count_call(m, k)) calls.push_back(*c);
    const auto [bol, indent] = indent_of(m.text(), line);
    Draft f;
    f.api = "torch.cuda.device_count";
    f.message = count_message(ctx, *n) + "; the count is read once, into " + *n;
    f.begin = calls.front().first;
    f.end = calls.front().second;
    fix::Fix fx;
    // The first call moves onto the new line `n = <count>`: the rewrites inside it go with it
    // (Finding::takes), applied to the moved call; a host target counts 2 instead.
    std::optional<std::pair<std::size_t, std::size_t>> into;
    if (reuse) {
      f.message = "read the process count from " + *n + ", named above";
    } else {
      const std::string head = indent + *n + " = ";
      const bool moved = !ctx.target.host;
      fx.edits.push_back(fix::Edit{
          bol, bol,
          head + (moved ? "" : std::string(kHostCount)) + nl + count_guard(ctx, *n, indent, nl)});
      if (moved) into = std::pair{std::size_t{0}, head.size()};
      named[line.scope] = li;
    }
    for (const auto& [cb, ce] : calls) fx.edits.push_back(fix::Edit{cb, ce, *n});
    f.fix = std::move(fx);
    f.changes_file = true;
    for (std::size_t c = 0; c < calls.size(); ++c)
      f = std::move(f).taking(calls[c].first, calls[c].second, c == 0 ? into : std::nullopt);
    tp403(ctx, reuse ? std::move(f) : count_labelled(ctx, std::move(f)));
  }
}

// TP403: a process count taken from torch.cuda.device_count() for a torch.multiprocessing.spawn
// / start_processes call (nprocs=, or the third positional argument): `n = ...device_count()`
// with `n` (or a plain copy, `world_size = n_gpus`) the count of a later call in the same scope,
// or the call itself as the count. Without a device the count is 0 and spawn starts no
// process: the script ends at once, silently. accelerator and cpu get a CPU path (2 processes
// over gloo, the backend get_default_backend_for_device / TP400 give the CPU); the device
// targets a guard that says why the script stops.
void process_count(Context& ctx) {
  // Every TP403 finding starts from a torch.cuda.device_count() reference: a file without one
  // (most of them) skips the scans of its lines.
  const auto& refs = ctx.m.references();
  if (std::none_of(refs.begin(), refs.end(), [](const semantic::Reference& r) {
        return std::string_view(r.qualified) == "torch.cuda.device_count";
      }))
    return;
  const CountParams params = count_params(ctx.m);
  named_counts(ctx, params);
  direct_counts(ctx, params);
}

/// TP400: the NCCL backend where it is given, replaced by the target's collective backend.
class Nccl {
 public:
  explicit Nccl(Context& ctx)
      : ctx_(ctx),
        m_(ctx.m),
        backend_(ctx.target.backend.empty() ? "gloo" : ctx.target.backend),
        note_(backend_ == "gloo" && !ctx.target.host && !ctx.accelerator()
                  ? " (" + ctx.target.name + " has no collective backend: gloo runs on the CPU)"
                  : "") {
    for (TokenIndex i : m_.string_tokens())
      if (nccl_string(m_, i)) nccl_.push_back(i);
  }

  /// True when the file has no "nccl" string and names no init_process_group / new_group (a
  /// callee's name, or the import an alias comes from, is in the text): nothing to do.
  bool idle() const { return nccl_.empty() && !contains(m_.text(), "_group", 1); }  // its 'g'

  /// argparse options whose name mentions "backend": their default and choices, and their dest
  /// names (returned), so that `args.dist_backend` counts as resolved.
  std::set<std::string, std::less<>> argparse_options();
  /// The backend argument of init_process_group / new_group: a literal, a variable assigned
  /// literals, an argparse option; what cannot be resolved is reported.
  void backend_arguments(const std::set<std::string, std::less<>>& backend_options);
  /// get_backend() == "nccl".
  void comparisons();

 private:
  /// The backend expression for the accelerator target, spelled with the callee's module.
  std::string accel_backend(const semantic::Reference* callee, std::uint32_t at);
  /// Rewrites the "nccl" string token `i`; `how` says where the string was found.
  void rewrite(TokenIndex i, const semantic::Reference* callee, const std::string& how);
  /// Rewrites every "nccl" string in tokens [first, last]; returns how many it found.
  std::size_t rewrite_in(TokenIndex first, TokenIndex last, const semantic::Reference* callee,
                         const std::string& how);
  /// The variable `first` passed as the backend of `callee`: true when each of its simple
  /// assignments in this scope or at module level is a literal (its "nccl" ones rewritten).
  bool literal_variable(TokenIndex first, const semantic::Reference* callee);

  Context& ctx_;
  const semantic::Model& m_;
  const std::string backend_;
  const std::string note_;
  std::set<TokenIndex> done_;     // "nccl" string tokens already rewritten
  std::vector<TokenIndex> nccl_;  // every "nccl" string token, in order
};

std::string Nccl::accel_backend(const semantic::Reference* callee, std::uint32_t at) {
  auto alias = m_.module_alias("torch.distributed");
  std::string mod = alias ? *alias : ctx_.render("torch.distributed");
  if (callee && callee->names.size() >= 2) {
    const std::uint32_t b = m_.tokens()[callee->first].begin;
    const std::uint32_t e = m_.tokens()[callee->names[callee->names.size() - 2]].end;
    mod = std::string(m_.text().substr(b, e - b));
  }
  ctx_.require_torch(kAcceleratorMinTorch);
  return mod + ".get_default_backend_for_device(" + ctx_.device_expr(at) + ")";
}

void Nccl::rewrite(TokenIndex i, const semantic::Reference* callee, const std::string& how) {
  if (!done_.insert(i).second) return;
  auto sv = semantic::string_value(m_.text(), m_.tokens()[i]);
  const syntax::Token& tok = m_.tokens()[i];
  if (ctx_.accelerator()) {
    tp400(ctx_,
          ctx_.rewrite("nccl", "change backend nccl to the default backend of the device" + how,
                       tok.begin, tok.end, accel_backend(callee, tok.begin)));
    return;
  }
  std::string repl = backend_;
  if (sv->value == "NCCL") {
    for (char& c : repl) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  tp400(ctx_, ctx_.rewrite("nccl",
                           "replace string \"" + std::string(sv->value) + "\" with \"" + repl +
                               "\"" + how + note_,
                           sv->value_begin, sv->value_begin + 4, repl));
}

std::size_t Nccl::rewrite_in(TokenIndex first, TokenIndex last, const semantic::Reference* callee,
                             const std::string& how) {
  std::size_t found = 0;
  for (auto it = std::lower_bound(nccl_.begin(), nccl_.end(), first);
       it != nccl_.end() && *it <= last; ++it) {
    rewrite(*it, callee, how);
    ++found;
  }
  return found;
}

std::set<std::string, std::less<>> Nccl::argparse_options() {
  const semantic::Model& m = m_;
  const auto n = static_cast<TokenIndex>(m.tokens().size());
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
      dests.push_back(flow::option_dest(name));
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
  return backend_options;
}

bool Nccl::literal_variable(TokenIndex first, const semantic::Reference* callee) {
  const semantic::Model& m = m_;
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
  return assignments > 0 && literal == assignments;
}

void Nccl::backend_arguments(const std::set<std::string, std::less<>>& backend_options) {
  const semantic::Model& m = m_;
  const auto n = static_cast<TokenIndex>(m.tokens().size());
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
      resolved = literal_variable(first, callee);
    } else if (arg->last == *m.next(*m.next(first)) && m.kind(arg->last) == TokenKind::Name &&
               m.kind(*m.next(first)) == TokenKind::Dot) {
      // args.dist_backend: an argparse option of this file.
      resolved = backend_options.contains(m.token_text(arg->last));
    }
    if (!resolved) {
      // The device-value layer: a backend whose every source is the "nccl" literal (TP304
      // rewrites it where it is written: `args.dist_backend = "nccl"`, a parameter's default).
      if (const syntax::Node* e = ctx_.expression_at(first, arg->last)) {
        const flow::Value& v = ctx_.values().of(*e);
        resolved = v.only({flow::Source::Backend, flow::Source::Text});
      }
    }
    if (resolved) continue;
    tp400(ctx_,
          report(Operation::Unknown, "nccl",
                 "the backend is given as `" + std::string(expr) +
                     "`, whose value torchport cannot resolve; if it can be nccl, use " +
                     (ctx_.accelerator() ? std::string("torch.distributed.get_default_backend_for_"
                                                       "device(device)")
                                         : "\"" + backend_ + "\"" + note_),
                 m.tokens()[first].begin, m.tokens()[arg->last].end));
  }
}

void Nccl::comparisons() {
  const semantic::Model& m = m_;
  for (TokenIndex i : nccl_) {
    if (done_.contains(i)) continue;
    auto p = m.prev(i);
    if (!p || (m.kind(*p) != TokenKind::EqEqual && m.kind(*p) != TokenKind::NotEqual)) continue;
    auto pp = m.prev(*p);
    if (!pp || m.kind(*pp) != TokenKind::RPar) continue;
    auto open = m.match(*pp);
    if (!open || callee_last_name(m, *open) != "get_backend") continue;
    if (ctx_.accelerator()) {
      const syntax::Token& tok = m.tokens()[i];
      tp400(
          ctx_,
          report(Operation::Unsupported, "nccl",
                 "comparison with the nccl backend; the backend depends on the device at run time",
                 tok.begin, tok.end));
      continue;
    }
    rewrite(i, nullptr, "");
  }
}

// TP401: torch.nn.DataParallel, reported (with --distributed, TP412 in ddp.cc replaces it by
// DistributedDataParallel).
void data_parallel(Context& ctx) {
  if (ctx.opts.distributed) return;
  const semantic::Model& m = ctx.m;
  for (const semantic::Reference& ref : m.references()) {
    const std::string_view q = ref.qualified;  // compared: a view tests the length first
    if (q == "torch.nn.DataParallel" || q == "torch.nn.parallel.DataParallel" ||
        q == "torch.nn.parallel.data_parallel.DataParallel") {
      tp401(ctx,
            report(Operation::Unsupported, "torch.nn.DataParallel",
                   "DataParallel only drives CUDA devices; use DistributedDataParallel with one "
                   "process per device",
                   m.tokens()[ref.first].begin, m.tokens()[ref.last].end));
    }
  }
}

}  // namespace

void run_distributed(Context& ctx) {
  Nccl nccl(ctx);  // TP400
  if (!nccl.idle()) {
    nccl.backend_arguments(nccl.argparse_options());
    nccl.comparisons();
  }
  ddp_device_ids(ctx);  // TP402
  process_count(ctx);   // TP403
  data_parallel(ctx);   // TP401
}

}  // namespace torchport::rules
