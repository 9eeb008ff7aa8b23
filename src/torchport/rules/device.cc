// Rule family TP300-TP302: device placement and device values.
//
// What it does:
//   TP300 rewrites "cuda", "cuda:N" and f"cuda:{i}" where they are used as devices: the
//   device=, map_location=, device_type= and output_device= keywords; the first argument of
//   torch.device, .to, torch.autocast, torch.amp.*, torch.set_default_device; torch.load's
//   second argument; `x.device.type == "cuda"` and comparisons with device variables; argparse
//   `--device` defaults and choices; torch.library's device types (custom_op's device_types=,
//   a tuple of them included, register_kernel's and impl's device argument: a kernel
//   registered for "cuda" only is not found for the target's tensors); and variables assigned a
//   device value (`device = "cuda" if torch.cuda.is_available() else "cpu"`). It also adds
//   map_location=<the device> to torch.load calls that have none, since storages saved on a
//   CUDA device fail to load anywhere else.
//   TP301 rewrites `.cuda(...)` calls on tensors and modules, TP302 `.is_cuda`.
//   A device string built at run time ("cuda:%d" % i, "cuda:" + str(i), "cuda:{}".format(i))
//   keeps its index on the indexed targets, becomes the one device on cpu and mps, and on
//   accelerator becomes torch.device(<the device's type>, i) (another shape is reported).
//   On cpu and accelerator a one-line `x.record_stream(s)` statement is guarded by
//   `if x.device.type != "cpu":` (CPU tensors have no caching allocator, and
//   aten::record_stream no CPU kernel); another shape is reported.
// Why:
//   These are the places where a CUDA device is named; a string anywhere else (a log message, a
//   URL, a docstring) is not a device and is never touched.
// Example:
//   x = torch.zeros(2, device="cuda:0").cuda(non_blocking=True)
//   if x.device.type == "cuda" and x.is_cuda: ...
//   ckpt = torch.load(path, map_location=f"cuda:{rank}")
// Becomes (npu):
//   x = torch.zeros(2, device="npu:0").npu(non_blocking=True)
//   if x.device.type == "npu" and x.is_npu: ...
//   ckpt = torch.load(path, map_location=f"npu:{rank}")
//   Comparisons of a device type with "cuda" are guards, "on the accelerator", and keep that
//   meaning: for accelerator `dev.type == "cuda"` becomes `dev.type != "cpu"` (never true on the
//   CPU fallback, where pin_memory() and fused kernels fail); on cpu they are kept and reported
//   (false, as on a machine without CUDA).
//   On cpu, `"cuda" if <test> else "cpu"` names the CPU in both branches, so it becomes "cpu",
//   the test dropped, where the test cannot do anything (names, attributes, literals, operators,
//   torch.cuda / torch.backends queries): `torch.device("cuda" if use_cuda else "cpu")` ->
//   `torch.device("cpu")`, not `torch.device("cpu" if use_cuda else "cpu")`.
//   (cpu: .to("cpu", non_blocking=True) and `.device.type != "cpu"`, False as is_cuda was on a
//   machine without CUDA; accelerator: the script's own `device` /
//   `device.type` where one is in reach (else an inserted module-level `device`),
//   torch.device(device.type, rank), and `.device.type != "cpu"` for .is_cuda: on an
//   accelerator, never true for a CPU tensor)
//   For accelerator, torch.device("cuda") becomes torch.accelerator.current_accelerator() only
//   in a branch that chose the accelerator (`if use_cuda:`, `if torch.cuda.is_available():`):
//   current_accelerator() is None on a machine without one. Elsewhere an assigned value becomes
//   `current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")` and
//   any other use the device variable.
// Safety:
//   Only strings in the contexts above change. `.cuda(i)` keeps its index except on the
//   single-device targets cpu and mps, where it is dropped (reported). Where the replacement of
//   `.is_cuda` is itself a comparison (accelerator, cpu, hpu), it is parenthesised wherever the
//   syntax tree puts it under an operator that binds tighter (`x.is_cuda | y.is_cuda`,
//   `x.is_cuda == False`, `-x.is_cuda`, `[*x.is_cuda]`, `x.is_cuda.real`); inside an f-string it
//   takes the other quote (Python before 3.12 cannot reuse the string's own), and inside an
//   f-string nested in another it is reported, not rewritten.
//   --specify-device makes device strings with an index ("cuda:0") f"<device>:{DEVICE_ID}"
//   (Ascend's -s; the variable is the target's device_id_env; TP303 does the other explicit
//   indices); "cuda" stays a device type, pinned by the prologue that sets the current device.
#include <torchport/rules/context.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <span>
#include <vector>

namespace torchport::rules {

namespace {

/// TP300 (device-string): "cuda", "cuda:N" and f"cuda:{i}" in device contexts. Its one producer:
/// every TP300 finding is made here.
void tp300(Context& ctx, Draft d) { ctx.add("TP300", std::move(d)); }

/// TP301 (cuda-method): .cuda(...) on tensors and modules. Its one producer: every TP301 finding is
/// made here.
void tp301(Context& ctx, Draft d) { ctx.add("TP301", std::move(d)); }

/// TP302 (is-cuda): .is_cuda on tensors. Its one producer: every TP302 finding is made here.
void tp302(Context& ctx, Draft d) { ctx.add("TP302", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

bool device_keyword(std::string_view kw) {
  return kw == "device" || kw == "map_location" || kw == "device_type" || kw == "output_device";
}

bool device_first_arg(const Context& ctx, std::string_view q) {
  if (q == "torch.device" || q == "torch.autocast" || q == "torch.amp.autocast" ||
      q == "torch.amp.GradScaler" || q == "torch.set_default_device" ||
      q == "torch.get_device_module" || q == "torch.Generator")
    return true;
  // The torch.cuda functions whose first parameter is `device` (installed torch 2.13.0:
  // inspect.signature): `torch.cuda.get_device_properties("cuda")` names the device.
  static constexpr std::array<std::string_view, 16> kCudaDeviceFirst = {
      "current_stream",       "default_stream",          "get_device_capability",
      "get_device_name",      "get_device_properties",   "get_rng_state",
      "max_memory_allocated", "max_memory_reserved",     "mem_get_info",
      "memory_allocated",     "memory_reserved",         "memory_stats",
      "memory_summary",       "reset_peak_memory_stats", "set_device",
      "synchronize"};
  // Only where the target has the function: a call left as it is (reported unsupported)
  // keeps its "cuda" too.
  std::string_view fn = q;
  if (!fn.starts_with("torch.cuda.")) return false;
  fn.remove_prefix(std::string_view("torch.cuda.").size());
  if (std::find(kCudaDeviceFirst.begin(), kCudaDeviceFirst.end(), fn) == kCudaDeviceFirst.end())
    return false;
  const catalogue::Mapping* mp = ctx.cat.lookup(q, ctx.target.name);
  return mp && !mp->replacement.empty();
}

bool is_device_operand(const semantic::Model& m, TokenIndex t) {
  // `<chain>.type`, or a Name bound to a device value.
  if (m.kind(t) != TokenKind::Name) return false;
  const semantic::Reference* r = m.reference_at(t);
  if (!r) return false;
  if (r->names.size() >= 2 && m.token_text(r->last) == "type") return true;
  if (r->names.size() == 1) {
    auto b = m.lookup(m.token_text(r->first), r->scope);
    return b && b->kind == semantic::Binding::Kind::Device;
  }
  return false;
}

enum class Ctx {
  None,
  Device,
  Comparison,
  Choice,
  MapLocation,  ///< torch.load's map_location: no CPU index ("cpu:0" cannot be restored)
};

// Is the string at tokens [s, s_last], outside any bracket, the value of an assignment to a
// device: a target that is a name bound to a device (`device = "cuda" if ok else "cpu"`) or an
// attribute named like one (`self.device = "cuda"`, `cfg.train_device = "cuda:0"`)? Read from
// the tree, so that any statement of a line counts (`x = 1; self.device = "cuda"`), and any
// target of a chain (`a = device = "cuda"`).
bool assigned_as_device(const Context& ctx, TokenIndex s, TokenIndex s_last) {
  const semantic::Model& m = ctx.m;
  auto li = m.line_of(s);
  if (!li) return false;
  const semantic::Line& line = m.lines()[*li];
  // Most strings outside brackets are docstrings and other expression statements: no `=` or
  // `:` before the string on its line, no tree walk.
  if (std::none_of(line.tokens.begin(), line.tokens.end(), [&](TokenIndex t) {
        return t < s && (m.kind(t) == TokenKind::Equal || m.kind(t) == TokenKind::Colon);
      }))
    return false;
  const syntax::Node* v = ctx.expression_at(s, s_last);
  while (v && v->parent() && syntax::is_expression(v->parent()->kind())) v = v->parent();
  if (!v || v->role() != syntax::Role::Value || !v->parent()) return false;
  const syntax::Node& stmt = *v->parent();
  if (stmt.kind() != syntax::NodeKind::Assign && stmt.kind() != syntax::NodeKind::AnnAssign)
    return false;
  for (const syntax::Node* t : stmt.children()) {
    if (t->role() != syntax::Role::Target) continue;
    if (t->kind() == syntax::NodeKind::Name) {
      auto b = m.lookup(ctx.tree.name(*t), line.scope);
      if (b && b->kind == semantic::Binding::Kind::Device) return true;
      continue;
    }
    // `a.b.device`: an attribute chain on a name, its last name like a device
    const syntax::Node* head = t;
    while (head->kind() == syntax::NodeKind::Attribute && head->value()) head = head->value();
    if (t->kind() != syntax::NodeKind::Attribute || head->kind() != syntax::NodeKind::Name)
      continue;
    const std::string_view attr = ctx.tree.name(*t);
    if (attr == "device" || attr.ends_with("_device") || attr.starts_with("device_")) return true;
  }
  return false;
}

// Is the string (or f-string) starting at token `s` used as a device?
Ctx device_context(const Context& ctx, TokenIndex s, TokenIndex s_last) {
  const semantic::Model& m = ctx.m;
  // Comparisons: `<x>.type == "cuda"`, `"cuda" != dev`.
  if (auto p = m.prev(s);
      p && (m.kind(*p) == TokenKind::EqEqual || m.kind(*p) == TokenKind::NotEqual)) {
    if (auto pp = m.prev(*p); pp && is_device_operand(m, *pp)) return Ctx::Comparison;
  }
  if (auto n = m.next(s_last);
      n && (m.kind(*n) == TokenKind::EqEqual || m.kind(*n) == TokenKind::NotEqual)) {
    if (auto nn = m.next(*n); nn && is_device_operand(m, *nn)) {
      const semantic::Reference* r = m.reference_at(*nn);
      if (r && r->first == *nn) return Ctx::Comparison;
    }
  }
  TokenIndex cur = s;
  bool in_container = false;
  while (true) {
    auto en = m.enclosing_open(cur);
    if (!en) break;
    auto before = m.prev(*en);
    const bool call = m.kind(*en) == TokenKind::LPar && before &&
                      (m.kind(*before) == TokenKind::Name || m.kind(*before) == TokenKind::RPar ||
                       m.kind(*before) == TokenKind::RSqb);
    if (!call) {
      cur = *en;
      in_container = true;
      continue;
    }
    auto args = call_args(m, *en);
    std::size_t pos = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      if (cur < a.first || cur > a.last) {
        if (a.keyword.empty()) ++pos;
        continue;
      }
      const semantic::Reference* callee = callee_of(m, *en);
      const std::string q = callee ? callee->qualified : std::string();
      std::string_view last = callee_last_name(m, *en);
      // torch.library's device types: custom_op(..., device_types="cuda") and
      // register_kernel(op, "cuda") register the kernel for that device type only, so on the
      // target it must name the target's (a tuple of them too: each is a device type).
      if (a.keyword == "device_types" ||
          (a.keyword.empty() &&
           ((pos == 1 && (q == "torch.library.register_kernel" || q == "torch.library.impl")) ||
            (pos == 0 && q.empty() && last == "register_kernel")))) {
        return Ctx::Device;
      }
      if (device_keyword(a.keyword)) {
        // A map_location dict maps the *saved* locations: its "cuda:0" keys must stay.
        if (in_container) return Ctx::None;
        return a.keyword == "map_location" ? Ctx::MapLocation : Ctx::Device;
      }
      if ((a.keyword == "default" || a.keyword == "choices") && last == "add_argument" &&
          !args.empty() && args[0].keyword.empty()) {
        auto sv = semantic::string_value(m.text(), m.tokens()[args[0].first]);
        if (sv && sv->value.find("device") != std::string_view::npos) {
          return a.keyword == "choices" ? Ctx::Choice : Ctx::Device;
        }
      }
      if (a.keyword.empty() && !in_container) {
        if (pos == 0 &&
            (device_first_arg(ctx, q) || (q.empty() && last == "to" && callee == nullptr) ||
             (last == "to" && callee && callee->names.size() >= 2 && q.empty()))) {
          return Ctx::Device;
        }
        if (pos == 1 && q == "torch.load") return Ctx::MapLocation;
      }
      return Ctx::None;
    }
    return Ctx::None;
  }
  if (in_container) return Ctx::None;
  return assigned_as_device(ctx, s, s_last) ? Ctx::Device : Ctx::None;
}

std::string index_device(Context& ctx, const std::string& idx, std::uint32_t at) {
  const bool literal = !idx.empty() && std::all_of(idx.begin(), idx.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (ctx.accelerator()) {
    // torch.device(type, index) rather than an f-string over the type.
    return ctx.render("torch.device") + "(" + ctx.device_type_expr(at) + ", " + idx + ")";
  }
  if (literal && ctx.target.device_index) return "\"" + ctx.target.device + ":" + idx + "\"";
  if (!ctx.target.device_index) return "\"" + ctx.target.device + "\"";
  return "f\"" + ctx.target.device + ":{" + idx + "}\"";
}

// True when the call node `call` runs only in a branch that chose the accelerator: it is inside
// the body or else-branch of an `if` (statement or expression) whose test asks for one
// (`is_available()`, `device_count()`, or a name or attribute that says cuda, gpu or accel:
// `if use_cuda:`, `if args.cuda:`). torch.accelerator.current_accelerator() is None without an
// accelerator, so elsewhere the device must fall back to the CPU itself.
bool chosen_by_branch(const Context& ctx, const syntax::Node* call) {
  const semantic::Model& m = ctx.m;
  for (const syntax::Node* n = call; n && n->parent(); n = n->parent()) {
    const syntax::Node* p = n->parent();
    if ((p->kind() != syntax::NodeKind::If && p->kind() != syntax::NodeKind::IfExp) ||
        (n->role() != syntax::Role::Body && n->role() != syntax::Role::OrElse))
      continue;
    const syntax::Node* test = p->child(syntax::Role::Test);
    if (!test) continue;
    for (std::uint32_t t = test->first_token(); t <= test->last_token(); ++t) {
      if (m.kind(t) != TokenKind::Name) continue;
      std::string name(m.token_text(t));
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (name == "is_available" || name == "device_count" ||
          name.find("cuda") != std::string::npos || name.find("gpu") != std::string::npos ||
          name.find("accel") != std::string::npos)
        return true;
    }
  }
  return false;
}

// torch.device("cuda") and torch.device("cuda" if <cond> else "cpu") (string token `i` is
// "cuda"): the accelerator's own idiom, torch.accelerator.current_accelerator() (and
// torch.device("cpu") for the other branch). Outside a branch that chose the accelerator,
// torch.device("cuda") becomes `current_accelerator() if is_available() else torch.device("cpu")`
// (current_accelerator() alone is None on a machine without one). Returns false when the call
// has another shape.
bool device_call_selection(Context& ctx, TokenIndex i, const semantic::StringValue& sv,
                           const std::string& api) {
  const semantic::Model& m = ctx.m;
  if (sv.value != "cuda" && sv.value != "cuda:0") return false;
  auto open = m.enclosing_open(i);
  if (!open || m.kind(*open) != TokenKind::LPar) return false;
  const semantic::Reference* callee = callee_of(m, *open);
  auto close = m.match(*open);
  if (!callee || callee->qualified != "torch.device" || !close) return false;
  auto args = call_args(m, *open);
  if (args.size() != 1 || !args[0].keyword.empty() || args[0].first != i) return false;
  const std::string current = ctx.render("torch.accelerator.current_accelerator()");
  const std::uint32_t call_begin = m.tokens()[callee->first].begin;
  Draft f;
  f.op = Operation::Modify;
  f.api = api;
  f.begin = m.tokens()[i].begin;
  f.end = m.tokens()[i].end;
  fix::Fix fx;
  if (args[0].last == i) {
    if (sv.value != "cuda") return false;
    const syntax::Node* attr = ctx.attribute_named_at(callee->last);
    const syntax::Node* call =
        attr && attr->role() == syntax::Role::Func ? attr->parent() : nullptr;
    if (call && chosen_by_branch(ctx, call)) {
      fx.edits.push_back(fix::Edit{call_begin, m.tokens()[*close].end, current});
      f.message = "change torch.device(\"cuda\") to torch.accelerator.current_accelerator()";
    } else {
      // An assigned value becomes the conditional expression (PyTorch's own idiom); anywhere
      // else the file's device variable (inserted at module level) is the same value.
      const bool assigned = call && !call->has(syntax::kParenthesized) &&
                            call->role() == syntax::Role::Value && call->parent() &&
                            (call->parent()->kind() == syntax::NodeKind::Assign ||
                             call->parent()->kind() == syntax::NodeKind::AnnAssign);
      fx.edits.push_back(
          fix::Edit{call_begin, m.tokens()[*close].end,
                    assigned ? current + " if " + ctx.render("torch.accelerator.is_available()") +
                                   " else " + ctx.render("torch.device") + "(\"cpu\")"
                             : ctx.helper_device(call_begin)});
      f.message =
          "change torch.device(\"cuda\") to torch.accelerator.current_accelerator(), cpu when "
          "there is no accelerator";
    }
  } else {
    // "cuda" if <cond> else "cpu": the branches become devices and the call goes.
    auto after = m.next(i);
    const TokenIndex last = args[0].last;
    auto before_last = m.prev(last);
    auto before_call = m.prev(callee->first);
    if (!after || m.kind(*after) != TokenKind::KwIf || m.kind(last) != TokenKind::String ||
        !before_last || m.kind(*before_last) != TokenKind::KwElse || !before_call) {
      return false;
    }
    const TokenKind pk = m.kind(*before_call);
    if (pk != TokenKind::Equal && pk != TokenKind::LPar && pk != TokenKind::Comma &&
        pk != TokenKind::KwReturn) {
      return false;
    }
    auto other = semantic::string_value(m.text(), m.tokens()[last]);
    if (!other || other->value != "cpu") return false;
    for (TokenIndex t = i + 1; t < last; ++t) {
      if (m.kind(t) == TokenKind::KwLambda) return false;
    }
    // A call written over several lines keeps its parentheses, which hold the lines together:
    // `torch.device(\n "cuda:0" if ok else "cpu"\n)` becomes `(\n <accelerator> if ok else
    // torch.device("cpu")\n)`, not a statement cut at its first line break.
    const std::string_view inside =
        m.text().substr(m.tokens()[*open].end, m.tokens()[*close].begin - m.tokens()[*open].end);
    const bool lines = inside.find_first_of("\r\n") != std::string_view::npos;
    const std::string other_device =
        ctx.render("torch.device") + "(" + std::string(m.token_text(last)) + ")";
    fx.edits.push_back(fix::Edit{call_begin, m.tokens()[*open].end, lines ? "(" : ""});
    fx.edits.push_back(fix::Edit{m.tokens()[i].begin, m.tokens()[i].end, current});
    if (lines) {
      fx.edits.push_back(fix::Edit{m.tokens()[last].begin, m.tokens()[last].end, other_device});
    } else {
      fx.edits.push_back(fix::Edit{m.tokens()[last].begin, m.tokens()[*close].end, other_device});
    }
    f.message = "change torch.device(" + api +
                " if ... else \"cpu\") to torch.accelerator.current_accelerator() if ... else "
                "torch.device(\"cpu\")";
    // Device 0 is the current device of a process that has not chosen another one.
    if (sv.value == "cuda:0") f.message += " (cuda:0: the current device, 0 unless set)";
  }
  f.fix = std::move(fx);
  f.changes_file = true;
  tp300(ctx, std::move(f));
  ctx.require_torch(kAcceleratorMinTorch);
  return true;
}

// torch.load cannot restore storages to an indexed CPU device ("cpu:0"), so on the one-device
// targets and for accelerator (CPU fallback) the whole location becomes the device itself.
void map_location(Context& ctx, const std::string& api, std::uint32_t b, std::uint32_t e) {
  std::string repl = ctx.accelerator() ? ctx.script_device(b, false, true) : std::string();
  if (repl.empty()) repl = ctx.accelerator() ? ctx.helper_device(b) : ctx.device_expr();
  if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
  Draft d =
      ctx.rewrite(api,
                  "replace map_location " + api + " with " + repl +
                      " (the current device; torch.load cannot restore to an indexed CPU device)",
                  b, e, repl);
  // "cuda:1", f"cuda:{rank}": the index goes, so storages land on the current device.
  if (api.find(':') != std::string::npos)
    d = std::move(d).labelled("changes behaviour: a map_location index dropped",
                              fix::Applicability::Unsafe);
  tp300(ctx, std::move(d));
}

// True when string token `i` is the type of `torch.device("cuda", index)`: the index is given
// separately, so --specify-device must not put one into the string too.
bool indexed_device_call(const semantic::Model& m, TokenIndex i) {
  auto open = m.enclosing_open(i);
  if (!open || m.kind(*open) != TokenKind::LPar) return false;
  const semantic::Reference* callee = callee_of(m, *open);
  if (!callee || callee->qualified != "torch.device") return false;
  auto args = call_args(m, *open);
  return args.size() >= 2 && args[0].first == i && args[0].last == i;
}

// True when the expression `n` (an operand that becomes a comparison) sits where the syntax tree
// binds tighter than a comparison, so that the comparison needs parentheses: an operand of a
// binary or unary operator (but `not`), of a comparison or of `await`, the object of an
// attribute, subscript or call, a starred item (`[*x]` and `return *x` take a bitwise_or) or a
// dict unpacking (`{**x}`).
bool binds_tighter_than_comparison(const syntax::Tree& tree, const syntax::Node& n) {
  using syntax::NodeKind;
  using syntax::Role;
  if (n.has(syntax::kParenthesized)) return false;
  const syntax::Node* p = n.parent();
  if (!p) return false;
  switch (p->kind()) {
    case NodeKind::BinOp:
    case NodeKind::Compare:
    case NodeKind::Await:
      return true;
    case NodeKind::UnaryOp:
      return tree.tokens()[p->token()].kind != TokenKind::KwNot;
    case NodeKind::Attribute:
    case NodeKind::Subscript:
      return n.role() == Role::Value;
    case NodeKind::Call:
      return n.role() == Role::Func;
    case NodeKind::Starred:  // a call's `*x` takes any expression, but reads as `(*x) != y`
      return true;
    case NodeKind::Dict:
      return n.first_token() > 0 &&
             tree.tokens()[n.first_token() - 1].kind == TokenKind::DoubleStar;
    default:
      return false;
  }
}

// The f-strings around token `i`: how many enclose it, and the quote character of the innermost
// (0 outside any).
struct FStringQuote {
  int depth = 0;
  char quote = 0;
};
FStringQuote enclosing_fstring(const semantic::Model& m, TokenIndex i) {
  FStringQuote q;
  int closed = 0;  // f-strings that end before `i`, scanning back
  for (TokenIndex k = i; k-- > 0;) {
    const TokenKind kind = m.kind(k);
    if (kind == TokenKind::FStringEnd || kind == TokenKind::TStringEnd) {
      ++closed;
    } else if (kind == TokenKind::FStringStart || kind == TokenKind::TStringStart) {
      if (closed > 0) {
        --closed;
        continue;
      }
      if (q.depth++ == 0) {
        const std::string_view start = m.token_text(k);
        q.quote = start.empty() ? '"' : start.back();
      }
    } else if (kind == TokenKind::Newline) {
      break;  // the previous logical line ends here: no f-string spans a NEWLINE token
    }
  }
  return q;
}

// True when token `i` is in the body of a function decorated with @torch.jit.script (or
// script_method): TorchScript compiles it and cannot read module-level Python objects.
bool in_scripted_function(const semantic::Model& m, TokenIndex i) {
  auto li = m.line_of(i);
  if (!li) return false;
  const auto& lines = m.lines();
  std::uint32_t depth = lines[*li].depth;
  for (std::uint32_t l = *li; l-- > 0;) {
    const semantic::Line& line = lines[l];
    if (line.tokens.empty() || line.depth >= depth) continue;
    depth = line.depth;
    TokenIndex head = line.tokens.front();
    if (m.kind(head) == TokenKind::KwAsync && line.tokens.size() > 1) head = line.tokens[1];
    if (m.kind(head) != TokenKind::KwDef) continue;
    // The decorators: the lines just above the def, at its depth, starting with `@`.
    for (std::uint32_t d = l; d-- > 0 && lines[d].depth == line.depth;) {
      const semantic::Line& dec = lines[d];
      if (dec.tokens.size() < 2 || m.kind(dec.tokens.front()) != TokenKind::At) break;
      const semantic::Reference* r = m.reference_at(dec.tokens[1]);
      if (r && (r->qualified == "torch.jit.script" || r->qualified == "torch.jit.script_method"))
        return true;
    }
    return false;  // the innermost enclosing function is not scripted
  }
  return false;
}

// On the one-device targets (cpu, mps) a CUDA choice of an argparse `choices=[...]` that
// already lists the target's device would become a duplicate: the element is deleted instead.
bool drop_duplicate_choice(Context& ctx, TokenIndex i, const std::string& api) {
  if (ctx.target.device_index) return false;
  const semantic::Model& m = ctx.m;
  auto open = m.enclosing_open(i);
  if (!open || (m.kind(*open) != TokenKind::LSqb && m.kind(*open) != TokenKind::LPar)) return false;
  auto close = m.match(*open);
  if (!close) return false;
  std::vector<TokenIndex> items;  // single-token elements only
  bool simple = true;
  for (auto j = m.next(*open); j && *j < *close; j = m.next(*j)) {
    if (m.kind(*j) == TokenKind::Comma) continue;
    auto nx = m.next(*j);
    if (!nx || (*nx != *close && m.kind(*nx) != TokenKind::Comma)) simple = false;
    items.push_back(*j);
  }
  if (!simple) return false;
  const auto at = std::find(items.begin(), items.end(), i);
  if (at == items.end()) return false;
  const bool listed = std::any_of(items.begin(), items.end(), [&](TokenIndex j) {
    auto v = semantic::string_value(m.text(), m.tokens()[j]);
    return j != i && v && v->value == ctx.target.device;
  });
  if (!listed) return false;
  std::uint32_t b = m.tokens()[i].begin, e = m.tokens()[i].end;
  if (at + 1 != items.end()) {
    e = m.tokens()[*(at + 1)].begin;
  } else {
    b = m.tokens()[*(at - 1)].end;
  }
  Draft f;
  f.op = Operation::Delete;
  f.api = api;
  f.message = "delete the choice " + api + " (\"" + ctx.target.device + "\" is listed already)";
  f.begin = m.tokens()[i].begin;
  f.end = m.tokens()[i].end;
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{b, e, ""});
  f.fix = std::move(fx);
  f.changes_file = true;
  tp300(ctx, std::move(f));
  return true;
}

// A comparison of a device type with "cuda" is a guard: "on the accelerator". On cpu there is
// none, so the test stays false as it was on a machine without CUDA (kept, reported); for
// accelerator it becomes "not on the CPU" (`== "cuda"` -> `!= "cpu"`), which is never true on
// the CPU fallback, where accelerator-only paths (pin_memory, fused kernels) would fail.
// True when handled.
bool comparison_guard(Context& ctx, TokenIndex i, const semantic::StringValue& sv,
                      const std::string& api) {
  const semantic::Model& m = ctx.m;
  const syntax::Token& tok = m.tokens()[i];
  if (ctx.target.host) {
    tp300(ctx,
          report(Operation::Unknown, api,
                 "comparison with " + api +
                     " kept: it tests for a CUDA device, and on cpu it stays false as on a machine "
                     "without CUDA",
                 tok.begin, tok.end));
    return true;
  }
  if (!ctx.accelerator()) return false;
  std::optional<TokenIndex> op;
  if (auto p = m.prev(i);
      p && (m.kind(*p) == TokenKind::EqEqual || m.kind(*p) == TokenKind::NotEqual))
    op = p;
  else if (auto n = m.next(i);
           n && (m.kind(*n) == TokenKind::EqEqual || m.kind(*n) == TokenKind::NotEqual))
    op = n;
  if (!op || sv.value != "cuda") {
    tp300(ctx,
          report(
              Operation::Unknown, api,
              "comparison with " + api +
                  " kept: it tests for one CUDA device; write the test for the accelerator by hand",
              tok.begin, tok.end));
    return true;
  }
  const bool eq = m.kind(*op) == TokenKind::EqEqual;
  Draft f;
  f.op = Operation::Modify;
  f.api = api;
  f.message = std::string("change the guard ") + (eq ? "== " : "!= ") + api + " to " +
              (eq ? "!= \"cpu\"" : "== \"cpu\"") +
              " (on an accelerator; false on the CPU fallback)";
  f.begin = tok.begin;
  f.end = tok.end;
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{m.tokens()[*op].begin, m.tokens()[*op].end, eq ? "!=" : "=="});
  fx.edits.push_back(fix::Edit{sv.value_begin, sv.value_begin + 4, "cpu"});
  f.fix = std::move(fx);
  f.changes_file = true;
  tp300(ctx, std::move(f));
  return true;
}

// A device string built at run time where a device is expected: "cuda:%d" % i,
// "cuda:" + str(i), "cuda:{}".format(i). The indexed targets keep the index ("npu:%d" % i);
// cpu and mps have one device, so the whole expression becomes the device (reported: the index
// is dropped). For accelerator, a whole argument `"cuda:{}".format(i)`, `"cuda:%d" % i` or
// `"cuda:" + str(i)` becomes `torch.device(<the device's type>, i)` (in torch.device(...) itself,
// its arguments `<type>, i`); another shape is reported. True when handled.
bool accelerator_built_device(Context& ctx, TokenIndex i, TokenKind op, Ctx c,
                              const semantic::StringValue& sv) {
  const semantic::Model& m = ctx.m;
  const std::string api = std::string(m.token_text(i));
  const syntax::Token& tok = m.tokens()[i];
  auto unknown = [&](const std::string& why) {
    tp300(ctx, report(Operation::Unknown, api,
                      "a CUDA device string built at run time is left as is: " + why, tok.begin,
                      tok.end));
    return true;
  };
  if (c == Ctx::MapLocation) {
    // torch.load cannot restore to an indexed CPU device: the location becomes the device.
    auto open = m.enclosing_open(i);
    if (!open) return unknown("its extent is not clear");
    for (const Arg& a : call_args(m, *open)) {
      const TokenIndex first = a.keyword.empty() ? a.first : *m.next(*m.next(a.first));
      if (first != i) continue;
      map_location(ctx, api, tok.begin, m.tokens()[a.last].end);
      return true;
    }
    return unknown("its extent is not clear");
  }
  auto open = m.enclosing_open(i);
  if (!open || m.kind(*open) != TokenKind::LPar) return unknown("it is not a whole call argument");
  const auto args = call_args(m, *open);
  const Arg* arg = nullptr;
  for (const Arg& a : args) {
    const TokenIndex first = a.keyword.empty() ? a.first : *m.next(*m.next(a.first));
    if (first == i) arg = &a;
  }
  if (!arg) return unknown("it is not a whole call argument");
  const std::string_view text = m.text();
  auto span = [&](TokenIndex a, TokenIndex b) {
    return std::string(text.substr(m.tokens()[a].begin, m.tokens()[b].end - m.tokens()[a].begin));
  };
  std::string index;
  const TokenIndex after = *m.next(i);
  if (op == TokenKind::Dot) {
    // "cuda:{}".format(x): one positional argument, the call ends the argument.
    const TokenIndex lp = *m.next(*m.next(after));
    const auto fa = m.kind(lp) == TokenKind::LPar ? call_args(m, lp) : std::vector<Arg>{};
    const bool one_field = sv.value == "cuda:{}" || sv.value == "cuda:{0}" ||
                           sv.value == "cuda:{:d}" || sv.value == "cuda:{0:d}";
    if (!one_field || fa.size() != 1 || !fa[0].keyword.empty() || m.match(lp) != arg->last)
      return unknown("not a \"cuda:{}\".format(index) of one index");
    index = span(fa[0].first, fa[0].last);
  } else if (op == TokenKind::Percent) {
    if (sv.value != "cuda:%d" && sv.value != "cuda:%s" && sv.value != "cuda:%i")
      return unknown("not a \"cuda:%d\" % index");
    const TokenIndex first = *m.next(after);
    if (first > arg->last) return unknown("no index after %");
    index = span(first, arg->last);
    if (m.kind(first) == TokenKind::LPar && m.match(first) == arg->last) {
      const auto inner = call_args(m, first);
      if (inner.size() != 1) return unknown("a tuple of several values after %");
      index = span(inner[0].first, inner[0].last);
    }
  } else {
    // "cuda:" + str(x)
    const TokenIndex f = *m.next(after);
    const auto lp = m.next(f);
    if (sv.value != "cuda:" || m.token_text(f) != "str" || !lp || m.kind(*lp) != TokenKind::LPar ||
        m.match(*lp) != arg->last || call_args(m, *lp).size() != 1)
      return unknown("not a \"cuda:\" + str(index)");
    const Arg ia = call_args(m, *lp)[0];
    index = span(ia.first, ia.last);
  }
  const std::string type = ctx.device_type_expr(tok.begin);
  const semantic::Reference* callee = callee_of(m, *open);
  const bool in_device_call =
      callee && callee->qualified == "torch.device" && args.size() == 1 && arg->keyword.empty();
  const std::string repl = in_device_call
                               ? type + ", " + index
                               : ctx.render("torch.device") + "(" + type + ", " + index + ")";
  ctx.require_torch(kAcceleratorMinTorch);
  tp300(ctx, ctx.rewrite(api,
                         "replace the device built from " + api + " with " +
                             ctx.render("torch.device") + "(" + type + ", " + index +
                             ") (the accelerator's device, index " + index + " kept)",
                         tok.begin, m.tokens()[arg->last].end, repl));
  return true;
}

bool built_device_string(Context& ctx, TokenIndex i, const semantic::StringValue& sv) {
  const semantic::Model& m = ctx.m;
  if (!sv.value.starts_with("cuda:")) return false;
  auto n = m.next(i);
  if (!n) return false;
  const TokenKind k = m.kind(*n);
  bool built = k == TokenKind::Percent || k == TokenKind::Plus;
  if (k == TokenKind::Dot) {
    auto f = m.next(*n);
    built = f && m.token_text(*f) == "format";
  }
  if (!built) return false;
  const Ctx c = device_context(ctx, i, i);
  if (c != Ctx::Device && c != Ctx::MapLocation) return false;
  if (ctx.accelerator()) return accelerator_built_device(ctx, i, k, c, sv);
  const std::string api = std::string(m.token_text(i));
  const std::string& t = ctx.target.name;
  if (ctx.target.device_index) {  // the target's devices take an index (data/targets.json)
    tp300(ctx, ctx.rewrite(api,
                           "replace \"cuda\" with \"" + ctx.target.device +
                               "\" in a device string built at run time",
                           sv.value_begin, sv.value_begin + 4, ctx.target.device));
    return true;
  }
  // The whole argument, when it is exactly this expression.
  auto open = m.enclosing_open(i);
  if (!open || m.kind(*open) != TokenKind::LPar) return false;
  for (const Arg& a : call_args(m, *open)) {
    if (i < a.first || i > a.last) continue;
    TokenIndex first = a.first;
    if (!a.keyword.empty()) first = *m.next(*m.next(a.first));  // after `name =`
    if (first != i) return false;
    tp300(ctx, ctx.rewrite(api,
                           "replace the device built from " + api + " with \"" + ctx.target.device +
                               "\" (" + t + " has one device: the index is dropped)",
                           m.tokens()[i].begin, m.tokens()[a.last].end,
                           "\"" + ctx.target.device + "\""));
    return true;
  }
  return false;
}

/// True when the condition after the `if` token `kw` (up to its `else`) calls `is_available()`:
/// `"cuda" if torch.cuda.is_available() else "cpu"`. Another condition (`"cuda" if "cuda" in
/// device else "cpu"`, llm.c) does not say an accelerator exists.
bool tests_availability(const semantic::Model& m, TokenIndex kw) {
  const std::optional<TokenIndex> open = m.enclosing_open(kw);
  for (std::optional<TokenIndex> i = m.next(kw); i; i = m.next(*i)) {
    if (m.enclosing_open(*i) == open) {
      if (m.kind(*i) == TokenKind::KwElse || m.kind(*i) == TokenKind::Newline) return false;
    }
    if (m.kind(*i) == TokenKind::Name && m.token_text(*i) == "is_available") return true;
  }
  return false;
}

// cpu (the host): `"cuda" if <test> else "cpu"` ("cuda:N" too) names the CPU in both branches once
// "cuda" is "cpu", so it becomes the "cpu" string itself, the test dropped, where the test cannot
// do anything (names, attributes, literals, operators, and calls of torch.cuda / torch.backends /
// torch.accelerator queries). The findings inside it go with it. Returns the last token of the
// expression, or nullopt when it has another shape.
std::optional<TokenIndex> host_choice(Context& ctx, TokenIndex i, const semantic::StringValue& sv,
                                      const std::string& api) {
  const semantic::Model& m = ctx.m;
  if (!ctx.target.host || !semantic::is_cuda_device_string(sv.value)) return std::nullopt;
  auto kw = m.next(i);
  auto before = m.prev(i);
  if (!kw || m.kind(*kw) != TokenKind::KwIf || !before) return std::nullopt;
  const TokenKind pk = m.kind(*before);
  if (pk != TokenKind::Equal && pk != TokenKind::LPar && pk != TokenKind::Comma &&
      pk != TokenKind::KwReturn)
    return std::nullopt;
  const auto level = m.enclosing_open(i);
  std::optional<TokenIndex> els;
  const auto line = m.line_of(i);
  for (auto t = m.next(*kw); t; t = m.next(*t)) {
    const TokenKind k = m.kind(*t);
    if (m.line_of(*t) != line) return std::nullopt;  // the statement ended without an else
    if (m.enclosing_open(*t) == level && (k == TokenKind::Comma || k == TokenKind::KwIf))
      return std::nullopt;
    if (k == TokenKind::KwElse && m.enclosing_open(*t) == level) {
      els = t;
      break;
    }
    if (k == TokenKind::KwLambda || k == TokenKind::ColonEqual || k == TokenKind::KwAwait ||
        k == TokenKind::KwYield)
      return std::nullopt;
    if (k == TokenKind::LPar && m.prev(*t) && m.kind(*m.prev(*t)) == TokenKind::Name) {
      const semantic::Reference* callee = callee_of(m, *t);
      const std::string q = callee ? callee->qualified : std::string();
      if (!q.starts_with("torch.cuda.") && !q.starts_with("torch.backends.") &&
          !q.starts_with("torch.accelerator."))
        return std::nullopt;
    }
  }
  if (!els || *els == *m.next(*kw)) return std::nullopt;
  auto other = m.next(*els);
  if (!other || m.kind(*other) != TokenKind::String) return std::nullopt;
  auto ov = semantic::string_value(m.text(), m.tokens()[*other]);
  if (!ov || ov->value != "cpu") return std::nullopt;
  auto after = m.next(*other);
  if (after && m.line_of(*after) == line && m.enclosing_open(*after) == level) {
    const TokenKind ak = m.kind(*after);
    if (ak != TokenKind::Comma && ak != TokenKind::RPar && ak != TokenKind::RSqb &&
        ak != TokenKind::RBrace)
      return std::nullopt;
  }
  const std::uint32_t b = m.tokens()[i].begin, e = m.tokens()[*other].end;
  // The rewrites inside the replaced expression go with it (Finding::takes).
  tp300(ctx, ctx.rewrite(api,
                         "change " + api + " if ... else " + std::string(m.token_text(*other)) +
                             " to " + std::string(m.token_text(*other)) +
                             ": on cpu both branches name the CPU (the test is dropped)",
                         b, e, std::string(m.token_text(*other)))
                 .taking(b, e));
  return other;
}

/// The tokens device_strings acts on, in order: every String token (whose escapes may spell
/// "cuda"), and an FStringStart whose next token is an FStringMiddle that starts with "cuda".
/// The model lists the FStringMiddle tokens (not a search of the whole text for "cuda"): one
/// whose text starts with "cuda" and whose significant token before it (Model::prev) is an
/// FStringStart gives that FStringStart. `merged` holds the list when there are such f-strings.
std::span<const TokenIndex> device_string_sites(const semantic::Model& m,
                                                std::vector<TokenIndex>& merged) {
  const std::string_view source = m.text();
  const std::span<const syntax::Token> toks = m.tokens();
  std::vector<TokenIndex> fstrings;
  for (const TokenIndex i : m.fstring_middle_tokens()) {
    if (source.compare(toks[i].begin, 4, "cuda") != 0) continue;
    const auto p = m.prev(i);
    if (p && m.kind(*p) == TokenKind::FStringStart) fstrings.push_back(*p);
  }
  std::span<const TokenIndex> sites = m.string_tokens();
  if (fstrings.empty()) return sites;
  merged.reserve(sites.size() + fstrings.size());
  std::merge(sites.begin(), sites.end(), fstrings.begin(), fstrings.end(),
             std::back_inserter(merged));
  return merged;
}

void device_strings(Context& ctx) {
  const semantic::Model& m = ctx.m;
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  // The loop steps from one site (device_string_sites) to the next.
  std::vector<TokenIndex> merged;
  const std::span<const TokenIndex> sites = device_string_sites(m, merged);
  // The next site after token i (the first one > i). i moves forward, so the answer is found by
  // walking on from the last one, over the sites i has passed; a search (upper_bound) only where
  // i is before the last site passed.
  std::size_t at = 0;  // the sites before `at` are <= the last i asked
  auto step = [&](TokenIndex i) -> TokenIndex {
    if (at > 0 && sites[at - 1] > i)
      at =
          static_cast<std::size_t>(std::upper_bound(sites.begin(), sites.end(), i) - sites.begin());
    while (at < sites.size() && sites[at] <= i) ++at;
    return at == sites.size() ? n : sites[at];
  };
  for (TokenIndex i = sites.empty() ? n : sites.front(); i < n; i = step(i)) {
    const TokenKind k = m.kind(i);
    if (k == TokenKind::String) {
      auto sv = semantic::string_value(m.text(), m.tokens()[i]);
      // An implicit concatenation ("cuda" "cuda", "cuda:" f"{i}"): its parts are not devices one
      // by one, and a part replaced by an expression would not parse. Reported, not rewritten.
      auto is_str = [&](std::optional<TokenIndex> t, bool before) {
        if (!t) return false;
        const TokenKind tk = m.kind(*t);
        return tk == TokenKind::String ||
               (before ? tk == TokenKind::FStringEnd || tk == TokenKind::TStringEnd
                       : tk == TokenKind::FStringStart || tk == TokenKind::TStringStart);
      };
      if (sv && sv->value.starts_with("cuda") &&
          (is_str(m.prev(i), true) || is_str(m.next(i), false))) {
        if (device_context(ctx, i, i) != Ctx::None) {
          const syntax::Token& tok = m.tokens()[i];
          tp300(ctx,
                report(Operation::Unknown, "\"" + std::string(sv->value) + "\"",
                       "a CUDA device string in an implicit string concatenation is left as is: "
                       "check it for the target",
                       tok.begin, tok.end));
        }
        continue;
      }
      if (sv && !semantic::is_cuda_device_string(sv->value) && built_device_string(ctx, i, *sv))
        continue;
      if (!sv || !semantic::is_cuda_device_string(sv->value)) continue;
      Ctx c = device_context(ctx, i, i);
      if (c == Ctx::None) continue;
      const std::string api = "\"" + std::string(sv->value) + "\"";
      const syntax::Token& tok = m.tokens()[i];
      if (c == Ctx::MapLocation && (ctx.accelerator() || !ctx.target.device_index)) {
        map_location(ctx, api, tok.begin, tok.end);
        continue;
      }
      if (c == Ctx::Choice && drop_duplicate_choice(ctx, i, api)) continue;
      const bool pin = ctx.opts.specify_device && !ctx.target.device_id_env.empty();
      if (pin && c == Ctx::Device) ctx.used_device_id = true;  // the prologue pins "cuda"
      if (c == Ctx::Comparison && comparison_guard(ctx, i, *sv, api)) continue;
      if (ctx.accelerator() && device_call_selection(ctx, i, *sv, api)) continue;
      if (auto last = host_choice(ctx, i, *sv, api)) {
        i = *last;  // the strings inside the dropped test go with it
        continue;
      }
      if (ctx.accelerator()) {
        std::string text;
        auto after = m.next(i);
        if (sv->value == "cuda" && after && m.kind(*after) == TokenKind::KwIf &&
            tests_availability(m, *after)) {
          // `"cuda" if <available> else "cpu"`: the branch runs only with an accelerator.
          text = ctx.render("torch.accelerator.current_accelerator().type");
        } else if (sv->value == "cuda") {
          text = ctx.device_type_expr(tok.begin);
        } else {
          text = "f" + std::string(1, sv->quote) + "{" + ctx.device_type_expr(tok.begin) + "}" +
                 std::string(sv->value.substr(4)) + std::string(1, sv->quote);
        }
        ctx.require_torch(kAcceleratorMinTorch);
        tp300(ctx,
              ctx.rewrite(api, "replace device string " + api + " with the current accelerator",
                          tok.begin, tok.end, text));
      } else if (pin && c == Ctx::Device && sv->value != "cuda" && !indexed_device_call(m, i)) {
        // "cuda:N": an index written into the script. A plain "cuda" is the current device,
        // which the --specify-device prologue sets; it stays a device type ("npu"), so that
        // `device == "cuda"` and `device_type = "cuda"` keep working.
        ctx.used_device_id = true;
        const std::string var = ctx.device_id_var();
        tp300(ctx, ctx.rewrite(api,
                               "replace device string " + api + " with f'" + ctx.target.device +
                                   ":{" + var + "}'",
                               tok.begin, tok.end, "f\"" + ctx.target.device + ":{" + var + "}\""));
      } else if (sv->value != "cuda" && !ctx.target.device_index && c != Ctx::Comparison) {
        // One device: the index is dropped (catalogue entry "cuda:N").
        tp300(ctx, ctx.rewrite(api,
                               "replace string " + api + " with \"" + ctx.target.device + "\" (" +
                                   ctx.target.name + " has one device)",
                               sv->value_begin,
                               sv->value_begin + static_cast<std::uint32_t>(sv->value.size()),
                               ctx.target.device));
      } else {
        tp300(ctx, ctx.rewrite(api,
                               "replace device string " + api + " with \"" + ctx.target.device +
                                   std::string(sv->value.substr(4)) + "\"",
                               sv->value_begin, sv->value_begin + 4, ctx.target.device));
      }
      continue;
    }
    if (k == TokenKind::FStringStart) {
      auto mid = m.next(i);
      if (!mid || m.kind(*mid) != TokenKind::FStringMiddle) continue;
      std::string_view v = m.token_text(*mid);
      if (!(v == "cuda" || v.starts_with("cuda:"))) continue;
      TokenIndex last = i;
      for (TokenIndex j = i; j < n; ++j) {
        if (m.kind(j) == TokenKind::FStringEnd && m.enclosing_open(j) == m.enclosing_open(i)) {
          last = j;
          break;
        }
      }
      const Ctx c = device_context(ctx, i, last);
      if (c == Ctx::None) continue;
      if (c == Ctx::MapLocation && (ctx.accelerator() || !ctx.target.device_index)) {
        map_location(ctx, "f\"" + std::string(v) + "...\"", m.tokens()[i].begin,
                     m.tokens()[last].end);
        continue;
      }
      const std::uint32_t b = m.tokens()[*mid].begin;
      std::string repl = ctx.target.device;
      if (ctx.accelerator()) {
        ctx.require_torch(kAcceleratorMinTorch);
        repl = "{" + ctx.device_type_expr(m.tokens()[i].begin) + "}";
      }
      tp300(ctx, ctx.rewrite("f\"" + std::string(v) + "...\"",
                             "replace \"cuda\" with \"" +
                                 (ctx.accelerator() ? repl : ctx.target.device) +
                                 "\" in an f-string device",
                             b, b + 4, repl));
    }
  }
}

// torch.load without a map_location restores each storage to the device it was saved from, so a
// checkpoint written on a GPU fails to load anywhere else: add map_location=<the device>.
void load_map_location(Context& ctx) {
  const semantic::Model& m = ctx.m;
  for (const semantic::Reference& ref : m.references()) {
    if (ref.qualified != "torch.load") continue;
    auto lpar = m.next(ref.last);
    if (!lpar || m.kind(*lpar) != TokenKind::LPar) continue;
    auto args = call_args(m, *lpar);
    std::size_t positional = 0;
    bool skip = false;
    for (const Arg& a : args) {
      if (a.keyword == "map_location" || m.kind(a.first) == TokenKind::Star ||
          m.kind(a.first) == TokenKind::DoubleStar) {
        skip = true;  // a map_location is given, or may be (*args, **kwargs)
      }
      if (a.keyword.empty()) ++positional;
    }
    if (skip || positional == 0 || positional >= 2) continue;
    // The script's own device where it has one in reach (every target): a run without the
    // accelerator then loads on the CPU, with the rest of the script. Without one, the device
    // the migrated script moves everything to.
    const std::uint32_t site = m.tokens()[ref.first].begin;
    std::string dev = ctx.script_device(site, false, true);
    if (ctx.accelerator()) {
      if (dev.empty()) dev = ctx.device_expr(site);
      ctx.require_torch(kAcceleratorMinTorch);
    } else if (dev.empty()) {
      dev = "\"" + ctx.target.device + "\"";
    }
    const std::uint32_t at = m.tokens()[args.back().last].end;
    tp300(ctx, ctx.rewrite("torch.load",
                           "insert map_location=" + dev +
                               " (storages saved on a CUDA device cannot be restored without one)",
                           at, at, ", map_location=" + dev));
  }
}

// `x.is_cuda` (TP302): the target's attribute, a device-type comparison (TorchScript, accelerator),
// parenthesised or negated where the expression around it needs it.
void is_cuda_attribute(Context& ctx, TokenIndex i) {
  const semantic::Model& m = ctx.m;
  const std::string& t = ctx.target.name;
  const syntax::Token& tok = m.tokens()[i];
  const catalogue::Mapping* mp = ctx.cat.lookup(".is_cuda", t);
  if (mp && mp->status == catalogue::Status::Unsupported) {
    tp302(ctx, report(Operation::Unsupported, ".is_cuda", mp->note, tok.begin, tok.end));
    return;
  }
  std::string repl;
  const bool scripted = !ctx.target.host && in_scripted_function(m, i);
  if (scripted && ctx.accelerator()) {
    // "On an accelerator" (TorchScript reads no module-level names).
    repl = "device.type != \"cpu\"";
  } else if (scripted) {
    // TorchScript knows only torch's built-in Tensor attributes: a vendor's is_npu / is_mlu
    // is a Python property (generate_methods_for_privateuse1_backend), so say it with the
    // device type, which it reads.
    repl = "device.type == \"" + ctx.target.device + "\"";
  } else if (mp && !mp->replacement.empty()) {
    repl = ctx.render(mp->replacement, tok.begin);
    if (repl.starts_with(".")) repl.erase(0, 1);
  } else if (ctx.accelerator()) {
    repl = "device.type != \"cpu\"";  // on an accelerator, whichever is current
  } else {
    repl = "is_" + ctx.target.device;
  }
  // A replacement that is itself a comparison is parenthesised where an operator around it
  // binds tighter (it would chain, or not parse), and quoted apart from an f-string's own.
  const bool comparison =
      repl.find("==") != std::string::npos || repl.find("!=") != std::string::npos;
  const syntax::Node* node = ctx.attribute_named_at(i);
  if (comparison) {
    const FStringQuote fq = enclosing_fstring(m, i);
    if (fq.depth > 1) {
      tp302(ctx,
            report(Operation::Unsupported, ".is_cuda",
                   ".is_cuda inside a nested f-string; rewrite as x.device.type comparison by hand",
                   tok.begin, tok.end));
      return;
    }
    if (fq.quote == '"') std::ranges::replace(repl, '"', '\'');
  }
  const bool parenthesise = comparison && node && binds_tighter_than_comparison(ctx.tree, *node);
  if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
  // `not x.is_cuda` reads better as `x.device.type == "cpu"` than as a double negation.
  const syntax::Node* up = node ? node->parent() : nullptr;
  const bool under_not = node && !node->has(syntax::kParenthesized) && up &&
                         up->kind() == syntax::NodeKind::UnaryOp &&
                         m.kind(up->token()) == TokenKind::KwNot;
  std::string negated;  // `not x.is_cuda` as one comparison: the other operator
  if (const auto eq = repl.find(" == "); eq != std::string::npos)
    negated = repl.substr(0, eq) + " != " + repl.substr(eq + 4);
  if (const auto ne = repl.find(" != "); ne != std::string::npos)
    negated = repl.substr(0, ne) + " == " + repl.substr(ne + 4);
  if (!negated.empty() && under_not) {
    Draft f;
    f.op = Operation::Modify;
    f.api = ".is_cuda";
    f.message = "change not x.is_cuda to x." + negated;
    f.begin = tok.begin;
    f.end = tok.end;
    fix::Fix fx;
    fx.edits.push_back(
        fix::Edit{m.tokens()[up->token()].begin, m.tokens()[node->first_token()].begin, ""});
    fx.edits.push_back(fix::Edit{tok.begin, tok.end, negated});
    f.fix = std::move(fx);
    f.changes_file = true;
    tp302(ctx, std::move(f));
    return;
  }
  if (parenthesise) {
    Draft f;
    f.op = Operation::Modify;
    f.api = ".is_cuda";
    f.message = "change attribute is_cuda to " + repl + " (parenthesised)";
    f.begin = tok.begin;
    f.end = tok.end;
    fix::Fix fx;
    const std::uint32_t start = m.tokens()[node->first_token()].begin;
    fx.edits.push_back(fix::Edit{start, start, "("});
    fx.edits.push_back(fix::Edit{tok.begin, tok.end, repl + ")"});
    f.fix = std::move(fx);
    f.changes_file = true;
    tp302(ctx, std::move(f));
    return;
  }
  tp302(ctx,
        ctx.rewrite(".is_cuda", "change attribute is_cuda to " + repl, tok.begin, tok.end, repl));
}

// `x.cuda(...)` (TP301): the target's method, or .to(<device>, <the other arguments>).
void cuda_method_call(Context& ctx, TokenIndex i, TokenIndex nx) {
  const semantic::Model& m = ctx.m;
  const std::string& t = ctx.target.name;
  const syntax::Token& tok = m.tokens()[i];
  const catalogue::Mapping* mp = ctx.cat.lookup(".cuda", t);
  if (mp && mp->status == catalogue::Status::Unsupported) {
    tp301(ctx, report(Operation::Unsupported, ".cuda", mp->note, tok.begin, tok.end));
    return;
  }
  std::string method;
  if (mp && mp->replacement.starts_with(".") && mp->replacement.find('(') == std::string::npos &&
      mp->replacement != ".to" && mp->replacement != ".cpu") {
    // .npu/.mlu/.musa/.xpu take the same arguments as .cuda; .cpu does not (non_blocking),
    // so cpu goes through .to("cpu", ...).
    method = mp->replacement.substr(1);
  }
  if (!method.empty()) {
    tp301(ctx,
          ctx.rewrite(".cuda", "change method .cuda to ." + method, tok.begin, tok.end, method));
    return;
  }
  // .to(<device>, <the other arguments>). The arguments' own bytes are never replaced, so
  // rewrites inside them (`.cuda(torch.cuda.current_device())`) still apply.
  auto args = call_args(m, nx);
  std::optional<std::pair<std::uint32_t, std::uint32_t>> idx;  // byte range of the index
  for (const Arg& a : args) {
    if (a.keyword.empty() && !idx && m.kind(a.first) != TokenKind::Star &&
        m.kind(a.first) != TokenKind::DoubleStar) {
      idx.emplace(m.tokens()[a.first].begin, m.tokens()[a.last].end);
    } else if (a.keyword == "device") {
      auto eq = m.next(a.first);
      idx.emplace(m.tokens()[*m.next(*eq)].begin, m.tokens()[a.last].end);
    }
  }
  if (ctx.accelerator()) ctx.require_torch(kAcceleratorMinTorch);
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{tok.begin, tok.end, "to"});
  std::string msg;
  std::optional<Take> taken;
  if (!idx) {
    const std::string dev = ctx.device_expr(tok.begin);
    const std::uint32_t at = m.tokens()[nx].end;
    fx.edits.push_back(fix::Edit{at, at, dev + (args.empty() ? "" : ", ")});
    msg = "change method .cuda(...) to .to(" + dev + ")";
  } else {
    const std::string text(m.text().substr(idx->first, idx->second - idx->first));
    const bool literal =
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (literal || !ctx.target.device_index) {
      const std::string dev =
          literal ? index_device(ctx, text, tok.begin) : "\"" + ctx.target.device + "\"";
      fx.edits.push_back(fix::Edit{idx->first, idx->second, dev});
      // The dropped index expression takes the findings inside it along (Finding::takes).
      taken = Take{idx->first, idx->second, std::nullopt};
      msg = "change method .cuda(" + text + ") to .to(" + dev + ")";
      if (!ctx.target.device_index) msg += " (" + t + " has one device)";
    } else {
      const std::string type =
          ctx.accelerator() ? ctx.device_type_expr(tok.begin) : "\"" + ctx.target.device + "\"";
      fx.edits.push_back(
          fix::Edit{idx->first, idx->first, ctx.render("torch.device") + "(" + type + ", "});
      fx.edits.push_back(fix::Edit{idx->second, idx->second, ")"});
      msg = "change method .cuda(" + text + ") to .to(torch.device(" + type + ", " + text + "))";
    }
  }
  Draft f;
  f.op = Operation::Modify;
  f.api = ".cuda";
  f.message = msg;
  f.begin = tok.begin;
  f.end = m.tokens()[*m.match(nx)].end;
  f.fix = std::move(fx);
  f.changes_file = true;
  if (taken) f.takes.push_back(*taken);
  tp301(ctx, std::move(f));
}

void cuda_methods(Context& ctx) {
  const semantic::Model& m = ctx.m;
  // Token texts are compared as written: without "cuda" in the text no name is `cuda` or
  // `is_cuda` (most files of a tree; contains() pairs its 'd' with its 'c'). Only the Name tokens
  // are looked at.
  if (!contains(m.text(), "cuda", 2)) return;
  for (const TokenIndex i : m.identifier_tokens()) {
    std::string_view name = m.token_text(i);
    if (name != "cuda" && name != "is_cuda") continue;
    auto p = m.prev(i);
    if (!p || m.kind(*p) != TokenKind::Dot) continue;
    if (m.is_store(i)) continue;  // `self.is_cuda = ...` names the user's own attribute
    if (const semantic::Reference* r = m.reference_at(i); r && !r->qualified.empty()) continue;
    // Only an attribute of a value: not a name in `import x.cuda` or `from x.cuda import y`
    // (read from the tree: `import os; y = t.cuda()` is an import line with a method call).
    const syntax::Node* a = ctx.attribute_named_at(i);
    if (!a) continue;
    // ... and so does every read of it on the same object (the device-value layer; asked last,
    // as it builds the module's device values: torch.cuda.x and imports never need them)
    if (ctx.values().user_attribute(*a)) continue;
    auto nx = m.next(i);
    if (name == "is_cuda") {
      is_cuda_attribute(ctx, i);
      continue;
    }
    if (!nx || m.kind(*nx) != TokenKind::LPar) continue;  // an attribute of the user's own
    cuda_method_call(ctx, i, *nx);
  }
}

}  // namespace

// `x.record_stream(s)` tells the device's caching allocator that stream s uses x; CPU tensors have
// no such allocator and aten::record_stream no CPU kernel, so the call raises there (the
// CUDA-stream prefetchers of ImageNet trainers). On cpu, and on accelerator (whose output also runs
// on a CPU-only machine), a one-line `x.record_stream(...)` statement is guarded by `if
// x.device.type != "cpu":`; another shape is reported.
void record_stream(Context& ctx) {
  if (!ctx.target.host && !ctx.accelerator()) return;
  const semantic::Model& m = ctx.m;
  const std::string_view text = m.text();
  const std::string nl(m.newline());
  const auto& lines = m.lines();
  for (const TokenIndex i : m.identifier_tokens()) {
    if (m.token_text(i) != "record_stream") continue;
    auto dot = m.prev(i);
    auto li = m.line_of(i);
    if (!dot || m.kind(*dot) != TokenKind::Dot || !li || m.is_store(i)) continue;
    const semantic::Line& line = lines[*li];
    const auto& t = line.tokens;
    const syntax::Token& at = m.tokens()[i];
    // The shape that is guarded: a statement `<name>(.<name>)*.record_stream(...)` of one line.
    std::size_t k = 0;
    while (k + 1 < t.size() && m.kind(t[k]) == TokenKind::Name &&
           m.kind(t[k + 1]) == TokenKind::Dot)
      k += 2;
    const std::size_t bol = text.find_last_of("\r\n", line.begin - 1) + 1;  // npos + 1 == 0
    const std::string indent(text.substr(bol, line.begin - bol));
    const std::uint32_t end = m.tokens()[t.back()].end;
    const bool simple =
        k >= 2 && k < t.size() && t[k] == i && k + 1 < t.size() &&
        m.kind(t[k + 1]) == TokenKind::LPar && m.match(t[k + 1]) == t.back() &&
        text.substr(line.begin, end - line.begin).find_first_of("\r\n") == std::string_view::npos &&
        indent.find_first_not_of(" \t") == std::string::npos;
    if (!simple) {
      tp301(ctx,
            report(Operation::Unknown, ".record_stream",
                   "record_stream raises for a CPU tensor (no caching allocator, no CPU kernel): "
                   "guard it with `if <tensor>.device.type != \"cpu\":` by hand",
                   at.begin, at.end));
      continue;
    }
    const std::string tensor(text.substr(line.begin, m.tokens()[t[k - 2]].end - line.begin));
    const std::string guard = "if " + tensor + ".device.type != \"cpu\":";
    if (*li > 0) {
      const semantic::Line& prev = lines[*li - 1];
      const std::uint32_t pe = m.tokens()[prev.tokens.back()].end;
      if (text.substr(prev.begin, pe - prev.begin) == guard) continue;  // guarded already
    }
    tp301(ctx,
          ctx.rewrite(".record_stream",
                      "run " + tensor +
                          ".record_stream() only for a tensor on a device: CPU tensors have "
                          "no caching allocator to tell (aten::record_stream has no CPU kernel)",
                      line.begin, line.begin, guard + nl + indent + "    "));
  }
}

void run_device(Context& ctx) {
  device_strings(ctx);
  load_map_location(ctx);
  cuda_methods(ctx);
  record_stream(ctx);
}

}  // namespace torchport::rules
