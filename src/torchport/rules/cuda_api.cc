// Rule family TP100: the torch.cuda API and the other catalogued CUDA-specific names.
//
// What it does:
//   Every dotted reference that resolves (through imports, aliases and simple assignments) to a
//   catalogued API - torch.cuda.*, torch.backends.cudnn.*, torch.backends.cuda.*,
//   torch.get_autocast_gpu_dtype, torch.profiler.ProfilerActivity.CUDA, ... - is replaced by the
//   target's replacement from the catalogue, or reported when the target has none. The longest
//   catalogued prefix wins, so `torch.cuda.Stream().synchronize` maps through torch.cuda.Stream.
//   torch.cuda.* names the catalogue does not list are rewritten to the target's device module
//   and reported as UNKNOWN (device targets), or left in place and reported (cpu).
//   Where the target has no typed tensor class, a legacy constructor becomes the CPU class,
//   which takes the same arguments (sizes or data) and gives the same dtype, moved to the
//   device: `torch.cuda.FloatTensor(x)` -> `torch.FloatTensor(x).to("xpu")` (cpu: the CPU
//   class alone). In set_default_tensor_type the CPU class of the same dtype is the default on
//   every such target (on a device, labelled: tensors made under it are built on the CPU and
//   go where the script moves them). On cpu and accelerator,
//   `assert torch.cuda.is_available()` goes (a requirement the target removes: it runs without
//   CUDA), labelled as a change of behaviour, instead of becoming `assert False`.
// Why:
//   torch.cuda only drives NVIDIA GPUs; each target has its own device module
//   (torch_npu.npu, torch.mlu, torch.xpu, ...) and the accelerator target uses torch.accelerator
//   and torch.get_device_module().
// Example:
//   import torch as t
//   t.cuda.synchronize()
//   from torch import cuda
//   n = cuda.device_count()
// Becomes (npu):
//   import torch as t
//   import torch_npu
//   torch_npu.npu.synchronize()
//   n = torch_npu.npu.device_count()
//   (accelerator: t.get_device_module().synchronize(), t.accelerator.device_count())
// Safety:
//   Replacements with status "partial" or "unknown" are applied and reported with the
//   catalogue's note; "unsupported" ones are left in place and reported, and so are names kept
//   as they are but without effect on the target (cuDNN flags off CUDA). Calls with nothing to
//   act on without a device (memory statistics, empty_cache; the catalogue's without_device)
//   become that value on cpu ("pass" for a whole statement) and are guarded by
//   torch.accelerator.is_available() on accelerator, unless the code already tests it there (the
//   body of `if torch.cuda.is_available():`, `... if torch.cuda.is_available() else ...`, or
//   after `torch.cuda.is_available() and`). A replacement that
//   needs a newer torch than --torch-version is not applied and is reported. A call that passes
//   a keyword the replacement does not take (the catalogue's refused_keywords, from the
//   installed torch's signatures: `torch.cuda.Stream(device=d)` on cpu) is reported and left in
//   place rather than rewritten into a TypeError. A CUDA seed call that becomes
//   torch.manual_seed(...) (cpu, accelerator) right after a line that calls torch.manual_seed
//   with the same arguments is deleted rather than repeated. An unsupported CUDA tensor type in
//   isinstance()'s class argument is reported as a type test (false on the target, as on a
//   machine without CUDA).
#include <torchport/rules/context.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace torchport::rules {

namespace {

/// TP100 (cuda-module-api): torch.cuda.*, torch.backends.cudnn/cuda and other catalogued APIs. Its
/// one producer: every TP100 finding is made here.
void tp100(Context& ctx, Draft d) { ctx.add("TP100", std::move(d)); }

// Token `t` is in the class argument of isinstance()/issubclass() (also inside a tuple there).
bool in_type_test(const semantic::Model& m, semantic::TokenIndex t) {
  auto open = m.enclosing_open(t);
  if (open && m.kind(*open) == syntax::TokenKind::LPar) {
    auto before = m.prev(*open);
    if (before && m.kind(*before) != syntax::TokenKind::Name) {
      t = *open;  // a tuple of classes
      open = m.enclosing_open(t);
    }
  }
  if (!open || m.kind(*open) != syntax::TokenKind::LPar) return false;
  auto callee = m.prev(*open);
  if (!callee || m.kind(*callee) != syntax::TokenKind::Name ||
      (m.token_text(*callee) != "isinstance" && m.token_text(*callee) != "issubclass"))
    return false;
  auto args = call_args(m, *open);
  return args.size() == 2 && t >= args[1].first && t <= args[1].last;
}

// A replacement as the message shows it: the accelerator's {module} placeholder is the call the
// output holds, torch.get_device_module(), never the placeholder itself.
std::string shown(std::string_view replacement) {
  std::string out(replacement);
  for (std::size_t at = out.find("{module}"); at != std::string::npos; at = out.find("{module}"))
    out.replace(at, 8, "torch.get_device_module()");
  return out;
}

// torch.cuda functions that torch.cpu also has (checked against torch 2.13: dir(torch.cpu)), so
// the accelerator target can call them through torch.get_device_module(), CPU included.
constexpr std::array<std::string_view, 9> kCommonDeviceModule = {
    "synchronize", "current_device", "set_device",    "current_stream", "stream",
    "Stream",      "Event",          "StreamContext", "device_count"};

bool common(std::string_view name) {
  for (auto n : kCommonDeviceModule) {
    if (n == name) return true;
  }
  return false;
}

bool cuda_specific(std::string_view q) {
  return q == "torch.cuda" || q.starts_with("torch.cuda.") ||
         q.starts_with("torch.backends.cudnn") || q.starts_with("torch.backends.cuda.");
}

std::size_t segments(std::string_view q) {
  return q.empty() ? 0 : static_cast<std::size_t>(std::count(q.begin(), q.end(), '.')) + 1;
}

// The fallback when the catalogue has no mapping for a torch.cuda / backends name.
std::optional<catalogue::Mapping> fallback(const Context& ctx, std::string_view q) {
  catalogue::Mapping mp;
  mp.source =
      "unverified: no catalogue entry; torchport's generic rule for the name (rules/cuda_api.cc)";
  const std::string& t = ctx.target.name;
  if (q.starts_with("torch.backends.")) {
    if (ctx.accelerator()) return std::nullopt;  // harmless off CUDA, effective on CUDA
    mp.status = catalogue::Status::Unsupported;
    mp.note = "a CUDA backend setting with no effect on " + t + "; left in place";
    return mp;
  }
  std::string_view rest = q == "torch.cuda" ? std::string_view{} : q.substr(11);
  std::string_view first = rest.substr(0, rest.find('.'));
  if (ctx.accelerator() || ctx.target.host) {
    const std::string module = ctx.accelerator() ? "{module}" : ctx.target.module;
    if (rest.empty()) {
      mp.replacement = module;
      mp.status = catalogue::Status::Partial;
      mp.note = "the device module has fewer functions than torch.cuda";
    } else if (first == "is_available" && ctx.accelerator()) {
      mp.replacement = "torch.accelerator.is_available";
      mp.status = catalogue::Status::Supported;
    } else if (first == "device_count" && ctx.accelerator()) {
      mp.replacement = "torch.accelerator.device_count";
      mp.status = catalogue::Status::Supported;
    } else if (first == "is_available" || common(first)) {
      mp.replacement = module + "." + std::string(first);
      mp.status = catalogue::Status::Supported;
    } else if (first == "manual_seed" || first == "manual_seed_all") {
      mp.replacement = "torch.manual_seed";
      mp.status = catalogue::Status::Partial;
      mp.note = "torch.manual_seed seeds every device, the CPU included";
    } else if (ctx.accelerator()) {
      mp.replacement = module + "." + std::string(first);
      mp.status = catalogue::Status::Unknown;
      mp.note = "works where the device module has it (cuda, xpu, npu); torch.cpu does not";
    } else {
      mp.status = catalogue::Status::Unsupported;
      mp.note = "no CPU equivalent; left in place";
    }
    if (!mp.replacement.empty() && rest.find('.') != std::string_view::npos && !rest.empty()) {
      // Only the first segment after torch.cuda is mapped; the caller appends the rest.
    }
    return mp;
  }
  if (ctx.target.module.empty()) return std::nullopt;
  mp.replacement = ctx.target.module + (rest.empty() ? "" : "." + std::string(first));
  mp.status = catalogue::Status::Unknown;
  mp.note = "assumed to exist as " + mp.replacement + "; not confirmed by the vendor's lists";
  return mp;
}

// True when the tokens [first, last] are a whole simple statement: at the start of the logical
// line, after `;`, or after the `:` of a one-line compound statement (`if x: f()`), and
// followed by the end of the line or `;`.
// A call with nothing to act on where there is no device (memory statistics, empty_cache):
// on cpu it becomes the catalogue's value (`pass` where it is a whole statement); on
// accelerator it is guarded by torch.accelerator.is_available(), so the output also runs on
// CPU-only machines. Returns false when the reference is not the callee of a call (the plain
// mapping applies then).

// A call of torch.cuda.is_available() or torch.accelerator.is_available().
bool availability_call(const Context& ctx, const syntax::Node* n) {
  if (!n || n->kind() != syntax::NodeKind::Call || !n->func()) return false;
  const semantic::Reference* r = ctx.m.reference_at(n->func()->last_token());
  return r && r->last == n->func()->last_token() &&
         (r->qualified == "torch.cuda.is_available" ||
          r->qualified == "torch.accelerator.is_available");
}

// The call whose callee ends at token `last` runs only when an accelerator is available: in the
// body of an `if` or a conditional expression that tests is_available() (alone or as one term
// of an `and`), or after is_available() in an `and` (`torch.cuda.is_available() and
// torch.cuda.is_bf16_supported()`). A guard of its own would repeat the test.
bool guarded_by_availability(const Context& ctx, semantic::TokenIndex last) {
  using syntax::Node;
  using syntax::NodeKind;
  const Node* attr = ctx.attribute_named_at(last);
  if (!attr || attr->role() != syntax::Role::Func || !attr->parent()) return false;
  auto tests = [&](const Node* test) {
    if (availability_call(ctx, test)) return true;
    if (!test || test->kind() != NodeKind::BoolOp || test->extra_tokens().empty() ||
        ctx.m.kind(test->extra_tokens()[0]) != syntax::TokenKind::KwAnd)
      return false;
    for (const Node* v : test->children())
      if (availability_call(ctx, v)) return true;
    return false;
  };
  for (const Node* n = attr->parent(); n && n->parent(); n = n->parent()) {
    const Node* p = n->parent();
    const NodeKind k = p->kind();
    if (k == NodeKind::FunctionDef || k == NodeKind::AsyncFunctionDef || k == NodeKind::ClassDef ||
        k == NodeKind::Lambda)
      return false;
    if ((k == NodeKind::If || k == NodeKind::IfExp) && n->role() == syntax::Role::Body &&
        tests(p->test()))
      return true;
    if (k == NodeKind::BoolOp && !p->extra_tokens().empty() &&
        ctx.m.kind(p->extra_tokens()[0]) == syntax::TokenKind::KwAnd) {
      for (const Node* v : p->children()) {
        if (v == n) break;
        if (availability_call(ctx, v)) return true;
      }
    }
  }
  return false;
}

// The call whose callee is the reference at `ref` divides: it is the right operand of `%`,
// `//` or `/` (or of their augmented assignments) or divmod's divisor. Its [begin, end) bytes
// go to `range`.
const syntax::Node* divides(const Context& ctx, const semantic::Reference& ref, std::size_t n) {
  using syntax::Node;
  using syntax::NodeKind;
  using syntax::TokenKind;
  if (n != ref.names.size()) return nullptr;
  const Node* func = ctx.expression_at(ref.first, ref.last);
  if (!func || func->role() != syntax::Role::Func || !func->parent()) return nullptr;
  const Node* call = func->parent();
  const Node* p = call->parent();
  if (!p) return nullptr;
  const auto op = [&](std::initializer_list<TokenKind> kinds) {
    const std::uint32_t t = p->token();
    return t != syntax::kNoToken &&
           std::find(kinds.begin(), kinds.end(), ctx.m.kind(t)) != kinds.end();
  };
  bool yes = false;
  if (p->kind() == NodeKind::BinOp && call->role() == syntax::Role::Right)
    yes = op({TokenKind::Percent, TokenKind::DoubleSlash, TokenKind::Slash});
  else if (p->kind() == NodeKind::AugAssign && call->role() == syntax::Role::Value)
    yes = op({TokenKind::PercentEqual, TokenKind::DoubleSlashEqual, TokenKind::SlashEqual});
  else if (p->kind() == NodeKind::Call && call->role() == syntax::Role::Arg && p->func() &&
           p->func()->kind() == NodeKind::Name && ctx.tree.name(*p->func()) == "divmod") {
    const auto args = p->args();
    yes = std::distance(args.begin(), args.end()) == 2 && *std::next(args.begin()) == call;
  }
  return yes ? call : nullptr;
}

// A count that divides (`rank % torch.cuda.device_count()`) becomes the catalogue's as_divisor
// ("1" on cpu, where the call is otherwise 0): `rank % 0` would raise ZeroDivisionError.
// Labelled: the count differs from the call's elsewhere. True when done.
bool divisor_count(Context& ctx, const semantic::Reference& ref, std::size_t n,
                   const std::string& prefix, const catalogue::Mapping& mp) {
  const syntax::Node* call = mp.as_divisor.empty() ? nullptr : divides(ctx, ref, n);
  if (!call) return false;
  const syntax::ByteRange range = ctx.tree.byte_range(*call);
  const std::string value = ctx.render(mp.as_divisor, range.begin);
  tp100(ctx, ctx.rewrite(prefix,
                         "change " + prefix + "(...) to " + value + " (" + mp.as_divisor_note + ")",
                         range.begin, range.end,
                         ctx.operand(value, call->first_token(), call->last_token()))
                 .labelled("changes behaviour: a count of devices that cannot be 0 where "
                           "it divides",
                           fix::Applicability::Unsafe));
  ctx.require_torch(mp.min_torch);
  if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
  return true;
}

bool emulate_without_device(Context& ctx, const semantic::Reference& ref, std::size_t n,
                            const std::string& prefix, const catalogue::Mapping& mp) {
  const semantic::Model& m = ctx.m;
  if (n != ref.names.size()) return false;
  const auto lpar = m.next(ref.last);
  if (!lpar || m.kind(*lpar) != syntax::TokenKind::LPar) return false;
  const auto rpar = m.match(*lpar);
  if (!rpar) return false;
  const std::uint32_t begin = m.tokens()[ref.first].begin;
  const std::uint32_t name_end = m.tokens()[ref.last].end;
  const std::uint32_t call_end = m.tokens()[*rpar].end;
  const semantic::Line& line = m.lines()[ref.line];
  const bool whole_line = line.tokens.front() == ref.first && line.tokens.back() == *rpar;
  if (mp.replacement.empty()) {  // cpu: the call becomes its value
    const std::string value = ctx.statement_call(ref.first, *rpar) ? "pass" : mp.without_device;
    Draft d =
        ctx.rewrite(prefix, "change " + prefix + "(...) to " + value + " (" + mp.note + ")", begin,
                    call_end, value == "pass" ? value : ctx.operand(value, ref.first, *rpar));
    // A whole statement dropped computes nothing: only a value in an expression is a change.
    if (value != "pass" && !mp.changes.empty())
      d = std::move(d).labelled(mp.changes, fix::Applicability::Unsafe);
    tp100(ctx, std::move(d));
    return true;
  }
  if (!ctx.version_ok(mp.min_torch)) return false;  // reported by the caller
  ctx.require_torch(mp.min_torch);
  ctx.require_torch(kAcceleratorMinTorch);
  const std::string guard = ctx.render("torch.accelerator.is_available()");
  const std::string name = ctx.render(mp.replacement);
  if (guarded_by_availability(ctx, ref.last)) {
    tp100(ctx,
          ctx.rewrite(prefix,
                      "change " + prefix + " to " + shown(mp.replacement) +
                          " (it runs only where the code tested torch.accelerator.is_available())",
                      begin, name_end, name));
    return true;
  }
  const std::string message = "change " + prefix + " to " + shown(mp.replacement) +
                              ", called only when an accelerator is available (without one: " +
                              (whole_line ? std::string("skipped") : mp.without_device) + ")";
  if (whole_line) {
    // A statement of its own: an `if` block with the line's indentation.
    const std::string_view text = m.text();
    std::uint32_t line_start = begin;
    while (line_start > 0 && text[line_start - 1] != '\n' && text[line_start - 1] != '\r') {
      --line_start;
    }
    const std::string indent(text.substr(line_start, begin - line_start));
    const bool blank =
        std::all_of(indent.begin(), indent.end(), [](char c) { return c == ' ' || c == '\t'; });
    const std::string step = indent.find('\t') != std::string::npos ? "\t" : "    ";
    tp100(ctx,
          ctx.rewrite(prefix, message, begin, name_end,
                      blank ? "if " + guard + ":" + std::string(m.newline()) + indent + step + name
                            : "if " + guard + ": " + name));
    return true;
  }
  Draft f;
  f.op = Operation::Modify;
  f.api = prefix;
  f.message = message;
  f.begin = begin;
  f.end = call_end;
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{begin, name_end, "(" + name});
  fx.edits.push_back(
      fix::Edit{call_end, call_end, " if " + guard + " else " + mp.without_device + ")"});
  if (!mp.changes.empty()) {
    // Only without an accelerator: the value is the constant there.
    f.changes = mp.changes + " (without an accelerator)";
    fx.applicability = fix::Applicability::Unsafe;
  }
  f.fix = std::move(fx);
  f.changes_file = true;
  tp100(ctx, std::move(f));
  return true;
}

// The replacement returns None where the CUDA API returns a value (the catalogue's returns,
// read from the vendor's source: torch_npu.npu.get_device_capability() without
// TORCH_NPU_DEVICE_CAPABILITY): a call used as a value becomes `(replacement(...) or if_none)`,
// so `capability >= (8, 0)` takes its fallback path instead of raising TypeError. Labelled: the
// value changes where the vendor's function gives None. True when done.
bool none_guarded(Context& ctx, const semantic::Reference& ref, std::size_t n,
                  const std::string& prefix, const catalogue::Mapping& mp,
                  const std::string& message, const std::string& text) {
  const semantic::Model& m = ctx.m;
  if (n != ref.names.size()) return false;
  const auto lpar = m.next(ref.last);
  if (!lpar || m.kind(*lpar) != syntax::TokenKind::LPar) return false;
  const auto rpar = m.match(*lpar);
  if (!rpar || ctx.statement_call(ref.first, *rpar)) return false;
  Draft f;
  f.op = Operation::Modify;
  f.api = prefix;
  f.message = message + "; where it returns None the call gives " + mp.if_none;
  f.begin = m.tokens()[ref.first].begin;
  f.end = m.tokens()[*rpar].end;
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{f.begin, m.tokens()[ref.last].end, "(" + text});
  fx.edits.push_back(fix::Edit{f.end, f.end, " or " + mp.if_none + ")"});
  fx.applicability = fix::Applicability::Unsafe;
  f.changes = "changes behaviour: " + mp.if_none + " where " + mp.replacement + " returns None";
  f.fix = std::move(fx);
  f.changes_file = true;
  tp100(ctx, std::move(f));
  ctx.require_torch(mp.min_torch);
  return true;
}

// `torch.manual_seed(s)` on the line before, in the same block: the seed call at `ref`, which
// becomes torch.manual_seed(s) on the target, would repeat it (nanoGPT, minGPT's set_seed).
// The whole line is deleted instead: the generator's state is the same. True when done.
bool drop_repeated_seed(Context& ctx, const semantic::Reference& ref, const std::string& prefix) {
  using semantic::TokenIndex;
  using syntax::TokenKind;
  const semantic::Model& m = ctx.m;
  auto seed_call =
      [&](const semantic::Line& l) -> std::optional<std::pair<TokenIndex, TokenIndex>> {
    if (l.tokens.empty()) return std::nullopt;
    const semantic::Reference* r = m.reference_at(l.tokens.front());
    if (!r || r->first != l.tokens.front()) return std::nullopt;
    const std::string& q = r->qualified;
    if (q != "torch.manual_seed" && q != "torch.cuda.manual_seed" &&
        q != "torch.cuda.manual_seed_all")
      return std::nullopt;
    auto lp = m.next(r->last);
    if (!lp || m.kind(*lp) != TokenKind::LPar || !m.match(*lp) || *m.match(*lp) != l.tokens.back())
      return std::nullopt;
    return std::make_pair(*lp, l.tokens.back());
  };
  const auto li = m.line_of(ref.first);
  if (!li || *li == 0) return false;
  const semantic::Line& line = m.lines()[*li];
  const semantic::Line& prev = m.lines()[*li - 1];
  if (prev.scope != line.scope || prev.depth != line.depth) return false;
  const auto mine = seed_call(line), theirs = seed_call(prev);
  if (!mine || !theirs || !ctx.statement_call(ref.first, mine->second)) return false;
  if (mine->second - mine->first != theirs->second - theirs->first) return false;
  for (TokenIndex k = 0; mine->first + k <= mine->second; ++k)
    if (m.token_text(mine->first + k) != m.token_text(theirs->first + k)) return false;
  // The line's own text: from the start of its first physical line to after its line break.
  std::uint32_t b = line.begin;
  while (b > 0 && m.text()[b - 1] != '\n' && m.text()[b - 1] != '\r') --b;
  if (m.text().substr(b, line.begin - b).find_first_not_of(" \t") != std::string_view::npos)
    return false;  // something else before it on the line
  Draft f;
  f.op = Operation::Delete;
  f.api = prefix;
  f.message = "delete " + prefix + "(...): on " + ctx.target.name +
              " it is torch.manual_seed(...), which the line before calls with the same "
              "arguments already";
  f.begin = m.tokens()[ref.first].begin;
  f.end = m.tokens()[mine->second].end;
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{b, line.end, ""});
  f.fix = std::move(fx);
  f.changes_file = true;
  tp100(ctx, std::move(f));
  return true;
}

/// `assert torch.cuda.is_available(), "needs a GPU"` on cpu and accelerator: the target runs
/// without CUDA by design (accelerator: on the CPU when there is no accelerator), so the
/// requirement goes, as a labelled change of behaviour, instead of becoming `assert False`.
bool drop_cuda_requirement(Context& ctx, const semantic::Reference& ref) {
  if (!ctx.target.host && !ctx.accelerator()) return false;
  const syntax::Node* attr = ctx.attribute_named_at(ref.last);
  const syntax::Node* call = attr && attr->role() == syntax::Role::Func ? attr->parent() : nullptr;
  const syntax::Node* stmt = call ? call->parent() : nullptr;
  if (!stmt || stmt->kind() != syntax::NodeKind::Assert || call->role() != syntax::Role::Test ||
      !call->args().empty() || !call->keywords().empty())
    return false;
  const auto r = ctx.tree.byte_range(*stmt);
  tp100(ctx, ctx.rewrite("torch.cuda.is_available",
                         "remove `" + std::string(ctx.tree.text(*stmt)).substr(0, 80) + "`: " +
                             (ctx.accelerator()
                                  ? std::string("the accelerator target runs on the CPU when "
                                                "there is no accelerator")
                                  : ctx.target.name + " runs without CUDA by design") +
                             " (the script's requirement of a CUDA device goes with it)",
                         r.begin, r.end, "pass")
                 .labelled("changes behaviour: a requirement of a CUDA device is removed",
                           fix::Applicability::Unsafe));
  return true;
}

/// `torch.cuda.FloatTensor(...)` where the target has no typed tensor class of its own: the CPU
/// class, which takes the same arguments (sizes or data) and gives the same dtype, moved to the
/// target's device (`torch.FloatTensor(n).to("xpu")`; on cpu the CPU class is the whole answer).
/// `torch.set_default_tensor_type(torch.cuda.BFloat16Tensor)` on cpu names the CPU class.
bool legacy_constructor(Context& ctx, const semantic::Reference& ref) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kTypes = {{
      {"FloatTensor", "float32"},
      {"DoubleTensor", "float64"},
      {"HalfTensor", "float16"},
      {"BFloat16Tensor", "bfloat16"},
      {"LongTensor", "int64"},
      {"IntTensor", "int32"},
      {"ShortTensor", "int16"},
      {"CharTensor", "int8"},
      {"ByteTensor", "uint8"},
      {"BoolTensor", "bool"},
  }};
  const std::string& q = ref.qualified;
  if (!q.starts_with("torch.cuda.") || ref.names.size() < 3) return false;
  const std::string_view cls = std::string_view(q).substr(11);
  auto type =
      std::find_if(kTypes.begin(), kTypes.end(), [&](const auto& t) { return t.first == cls; });
  if (type == kTypes.end()) return false;
  const catalogue::Mapping* mp = ctx.cat.lookup(q, ctx.target.name);
  if (mp && !mp->replacement.empty() && mp->status != catalogue::Status::Unsupported) return false;
  if (std::find(ctx.target.no_dtypes.begin(), ctx.target.no_dtypes.end(), type->second) !=
      ctx.target.no_dtypes.end())
    return false;  // TP210's: the device has no such dtype
  const syntax::Node* attr = ctx.attribute_named_at(ref.last);
  if (!attr) return false;
  const semantic::Model& m = ctx.m;
  const std::uint32_t b = m.tokens()[ref.first].begin, e = m.tokens()[ref.last].end;
  const std::string cpu_class = ctx.torch_name() + "." + std::string(cls);
  if (attr->role() == syntax::Role::Func) {
    const syntax::Node* call = attr->parent();
    tp100(ctx,
          ctx.rewrite(q,
                      "change " + q + "(...) to " + cpu_class + "(...)" +
                          (ctx.target.host ? std::string(" (the same arguments, the CPU's tensor)")
                                           : ".to(" + ctx.device_expr(b) +
                                                 ") (the same arguments and dtype, on the device)"),
                      b, e, cpu_class));
    if (!ctx.target.host) {
      const std::uint32_t end = ctx.tree.byte_range(*call).end;
      tp100(ctx, ctx.rewrite(q, "move the tensor " + q + "(...) built to the device", end, end,
                             ".to(" + ctx.device_expr(b) + ")"));
    }
    return true;
  }
  // torch.set_default_tensor_type(torch.cuda.XTensor): a type. The target has no class to
  // name, so the default becomes the CPU's of the same dtype: on cpu that is the whole answer;
  // on a device the tensors made under it are built on the CPU and go to the device where the
  // script moves them (`model = Model(); ... model.to(device)`), labelled. set_default_device
  // would not do: set_default_tensor_type(<a CPU type>), the usual way to restore the default,
  // does not undo it.
  const syntax::Node* call = attr->parent();
  if (attr->role() != syntax::Role::Arg || !call || !call->func() ||
      ctx.tree.name(*call->func()) != "set_default_tensor_type")
    return false;
  Draft d =
      ctx.rewrite(q,
                  "change " + q + " to " + cpu_class + " (the default tensor type on the CPU" +
                      (ctx.target.host ? std::string(")")
                                       : std::string(": the tensors made under it are built on the "
                                                     "CPU, in the same dtype, and go to the device "
                                                     "where the script moves them)")),
                  b, e, cpu_class);
  if (!ctx.target.host)
    d = std::move(d).labelled(
        "changes behaviour: tensors made under the default type are built on the CPU",
        fix::Applicability::Unsafe);
  tp100(ctx, std::move(d));
  return true;
}

// A reference resolved against the catalogue: the longest catalogued prefix of its qualified
// name, the mapping for the target (the fallback for an uncatalogued torch.cuda name, the
// device module's function on accelerator), and the bytes the chain names of the prefix cover.
struct Resolved {
  std::string prefix;
  catalogue::Mapping mapping;
  std::size_t n = 1;  ///< how many chain names cover the prefix
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::string extra;  ///< segments the head already covers beyond the prefix
};

// The device module's function on accelerator: the target must also run on CPU-only machines,
// where torch.accelerator.X raises; the current accelerator's device module (torch.cpu there)
// has these functions.
void accelerator_module_function(const Context& ctx, Resolved& r) {
  if (!ctx.accelerator() || !r.prefix.starts_with("torch.cuda.")) return;
  const std::string_view fn = std::string_view(r.prefix).substr(11);
  // Event: see the catalogue; set_device: torch.accelerator.set_device_index, guarded.
  if (!common(fn) || fn == "device_count" || fn == "Event" || fn == "set_device") return;
  catalogue::Mapping& mp = r.mapping;
  mp.replacement = "{module}." + std::string(fn);
  mp.status = catalogue::Status::Supported;
  mp.min_torch = std::string(kAcceleratorMinTorch);
  mp.note = "the current accelerator's device module, torch.cpu when there is none";
  mp.changes.clear();  // the device module's own function
  // Without an accelerator the device module is torch.cpu: its function's signature.
  mp.refused_keywords.clear();
  // (the host target's mapping: the one whose device is the CPU, data/targets.json `host`)
  for (const catalogue::Target& host : ctx.cat.targets()) {
    if (!host.host) continue;
    if (const catalogue::Mapping* cpu = ctx.cat.lookup(r.prefix, host.name);
        cpu && cpu->replacement == "torch.cpu." + std::string(fn))
      mp.refused_keywords = cpu->refused_keywords;
  }
}

// Resolves `ref`; nullopt when it is no CUDA API to port, or was reported here (a catalogued
// name without a mapping for the target).
std::optional<Resolved> resolve(Context& ctx, const semantic::Reference& ref) {
  const semantic::Model& m = ctx.m;
  const std::string& q = ref.qualified;
  // The longest catalogued prefix (a view of q: every reference of the file comes here, and
  // most are no CUDA API).
  std::string_view longest = q;
  const catalogue::Mapping* found = nullptr;
  const catalogue::Entry* entry = nullptr;
  while (!longest.empty()) {
    entry = ctx.cat.find(longest);
    if (entry && entry->kind != catalogue::Kind::Method && entry->kind != catalogue::Kind::String &&
        entry->kind != catalogue::Kind::EnvVar && entry->kind != catalogue::Kind::Package) {
      found = ctx.cat.lookup(longest, ctx.target.name);
      break;
    }
    entry = nullptr;
    auto dot = longest.rfind('.');
    if (dot == std::string_view::npos) break;
    longest = longest.substr(0, dot);
  }
  if (!entry && !cuda_specific(q)) return std::nullopt;
  Resolved r;
  std::string prefix(longest);
  if (!entry) {
    // torch.cuda.X: map torch.cuda.X itself (X's attributes follow).
    prefix = q.starts_with("torch.cuda.") ? q.substr(0, q.find('.', 11)) : q;
    if (q.starts_with("torch.backends.")) prefix = q;
    std::optional<catalogue::Mapping> fb = fallback(ctx, prefix);
    if (!fb) return std::nullopt;
    r.mapping = std::move(*fb);
  } else if (!found) {
    tp100(ctx, report(Operation::Unknown, prefix,
                      "the catalogue has no mapping of " + prefix + " for " + ctx.target.name,
                      m.tokens()[ref.first].begin, m.tokens()[ref.last].end));
    return std::nullopt;
  } else {
    r.mapping = *found;
  }
  // The chain names covering `prefix`.
  const auto head = m.lookup(m.token_text(ref.first), ref.scope);
  const std::size_t head_segments = head ? segments(head->target) : 1;
  const std::size_t want = segments(prefix);
  r.n = std::min(want >= head_segments ? 1 + (want - head_segments) : 1, ref.names.size());
  r.begin = m.tokens()[ref.first].begin;
  r.end = m.tokens()[ref.names[r.n - 1]].end;
  // Segments covered by those names beyond `prefix` (when the head already goes deeper).
  std::string covered = head ? head->target : std::string(m.token_text(ref.first));
  for (std::size_t i = 1; i < r.n; ++i) covered += "." + std::string(m.token_text(ref.names[i]));
  r.extra = covered.size() > prefix.size() ? covered.substr(prefix.size()) : "";
  r.prefix = std::move(prefix);
  accelerator_module_function(ctx, r);
  return r;
}

// A mapping whose support is unknown, or that keeps the name as it is: reported when it says
// something (never silent). True when the reference is done.
bool unknown_or_kept(Context& ctx, const Resolved& r) {
  const catalogue::Mapping& mp = r.mapping;
  const std::string& prefix = r.prefix;
  const std::string unknown =
      mp.note.empty() ? "support of " + prefix + " on " + ctx.target.name + " is unknown" : mp.note;
  if (mp.replacement.empty() && mp.status == catalogue::Status::Unknown) {
    tp100(ctx, report(Operation::Unknown, prefix, unknown, r.begin, r.end));
    return true;
  }
  if (mp.replacement != prefix) return false;
  if (mp.status == catalogue::Status::Unknown) {
    tp100(ctx, report(Operation::Unknown, prefix, unknown, r.begin, r.end));
  } else if (!mp.note.empty() && !ctx.accelerator()) {
    // Kept, but without effect on the target (a cuDNN flag off CUDA): never silent.
    tp100(ctx, report(Operation::Unsupported, prefix, mp.note, r.begin, r.end));
  } else if (!mp.note.empty()) {
    // accelerator: right to keep (the output also runs on CUDA), but it does nothing on the
    // other devices, and the report says so.
    tp100(ctx,
          report(Operation::Unknown, prefix,
                 mp.note + " (it takes effect on CUDA only, on no other device)", r.begin, r.end));
  }
  return true;
}

// A call passing a keyword the replacement does not take would become a TypeError: reported
// instead. True when done.
bool refused_keyword(Context& ctx, const semantic::Reference& ref, const Resolved& r) {
  const catalogue::Mapping& mp = r.mapping;
  if (mp.refused_keywords.empty() || r.n != ref.names.size()) return false;
  const semantic::Model& m = ctx.m;
  std::string refused;
  if (auto lp = m.next(ref.last); lp && m.kind(*lp) == syntax::TokenKind::LPar) {
    for (const Arg& a : call_args(m, *lp)) {
      if (!a.keyword.empty() && std::find(mp.refused_keywords.begin(), mp.refused_keywords.end(),
                                          a.keyword) != mp.refused_keywords.end())
        refused += (refused.empty() ? "" : ", ") + std::string(a.keyword) + "=";
    }
  }
  if (refused.empty()) return false;
  const std::string shown =
      mp.replacement.starts_with("{module}.")
          ? "torch.cpu." + mp.replacement.substr(9) + " (the device module without an accelerator)"
          : mp.replacement;
  tp100(ctx, report(Operation::Unsupported, r.prefix,
                    shown + " does not take " + refused +
                        " (its signature in the torch the catalogue was built from): the call is "
                        "left in place",
                    r.begin, r.end));
  return true;
}

// What cannot be rewritten: no replacement, one the --torch-version lacks, or an assignment to
// a name that would become a call. Reported; true when done.
bool not_rewritable(Context& ctx, const semantic::Reference& ref, const Resolved& r) {
  const catalogue::Mapping& mp = r.mapping;
  const std::string& prefix = r.prefix;
  if (mp.status == catalogue::Status::Unsupported || mp.replacement.empty()) {
    std::string why =
        mp.note.empty() ? prefix + " has no equivalent on " + ctx.target.name : mp.note;
    // `isinstance(x, torch.cuda.FloatTensor)`: a type test, not a construction to port.
    if (in_type_test(ctx.m, ref.first))
      why = prefix + " in a type test: no tensor is one on " + ctx.target.name +
            ", so the test is false there, as on a machine without CUDA (left as is; test "
            "x.dtype and x.device.type if that is what it means)";
    tp100(ctx, report(Operation::Unsupported, prefix, why, r.begin, r.end));
    return true;
  }
  if (!ctx.version_ok(mp.min_torch)) {
    tp100(ctx,
          report(Operation::Unsupported, prefix,
                 "the replacement " + shown(mp.replacement) + " needs torch >= " + mp.min_torch +
                     " (--torch-version " + ctx.opts.torch_version + "); left in place",
                 r.begin, r.end));
    return true;
  }
  // An attribute that is assigned to (or deleted) keeps its name: a store target can only
  // become another dotted name, never a call or a value.
  const bool plain_name = std::all_of(mp.replacement.begin(), mp.replacement.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
  if (ref.store && r.n == ref.names.size() && !plain_name) {
    tp100(ctx, report(Operation::Unsupported, prefix,
                      "assignment to " + prefix + "; use " + shown(mp.replacement) + " instead",
                      r.begin, r.end));
    return true;
  }
  return false;
}

// The rewrite to the mapping's replacement (labelled when it changes behaviour, guarded where
// the vendor's function returns None).
void rewrite(Context& ctx, const semantic::Reference& ref, const Resolved& r) {
  const catalogue::Mapping& mp = r.mapping;
  const std::string& prefix = r.prefix;
  if (mp.replacement == "torch.manual_seed" && drop_repeated_seed(ctx, ref, prefix)) return;
  std::string text = ctx.spell_host_event(ctx.render(mp.replacement, r.begin) + r.extra);
  if (mp.replacement.find(kHostEvent) != std::string::npos) ctx.used_host_event = true;
  if (ctx.m.text().substr(r.begin, r.end - r.begin) == text) return;
  ctx.require_torch(mp.min_torch);
  if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
  std::string message = ctx.spell_host_event("change " + prefix + " to " + shown(mp.replacement));
  if (!mp.note.empty()) message += " (" + ctx.spell_host_event(mp.note) + ")";
  if (!mp.if_none.empty() && none_guarded(ctx, ref, r.n, prefix, mp, message, text)) return;
  Draft d = ctx.rewrite(prefix, message, r.begin, r.end, text);
  if (!mp.changes.empty()) d = std::move(d).labelled(mp.changes, fix::Applicability::Unsafe);
  tp100(ctx, std::move(d));
  if (mp.status == catalogue::Status::Unknown) {
    tp100(ctx,
          report(Operation::Unknown, prefix,
                 mp.note.empty() ? "support of " + mp.replacement + " is not confirmed" : mp.note,
                 r.begin, r.end));
  }
}

}  // namespace

void run_cuda_api(Context& ctx) {
  for (const semantic::Reference& ref : ctx.m.references()) {
    if (ref.qualified.empty() || ctx.handled.contains(ref.first)) continue;
    // (a view: its comparisons test the length first, std::string's with a literal do not)
    const std::string_view q = ref.qualified;
    if (q == "torch.nn.DataParallel" || q == "torch.nn.parallel.DataParallel") continue;  // TP401
    if (q == "torch.cuda.is_available" && drop_cuda_requirement(ctx, ref)) continue;
    if (legacy_constructor(ctx, ref)) continue;
    const std::optional<Resolved> r = resolve(ctx, ref);
    if (!r || unknown_or_kept(ctx, *r) || refused_keyword(ctx, ref, *r)) continue;
    if (divisor_count(ctx, ref, r->n, r->prefix, r->mapping)) continue;
    if (!r->mapping.without_device.empty() &&
        emulate_without_device(ctx, ref, r->n, r->prefix, r->mapping))
      continue;
    if (not_rewritable(ctx, ref, *r)) continue;
    rewrite(ctx, ref, *r);
  }
}

}  // namespace torchport::rules
