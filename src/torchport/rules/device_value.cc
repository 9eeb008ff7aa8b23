// Rule family TP304: device indices and device/backend literals whose value reaches a device
// position, found by the device-value layer (flow/device_values.h).
//
// What it does:
//   Asks the device-value layer where the value at each device position comes from, and
//   rewrites what it determines.
//   (1) An integer device index given to `.to(i)`, `torch.device(i)` or `device=i`, where `i`
//   is proven an index: a literal, LOCAL_RANK/RANK from the environment, a rank from mp.spawn or
//   dist.get_rank(), an argparse option of type=int, and the names, parameters and return values
//   that only ever hold those, in this module or imported from another of the project's
//   (`from .config import GPU_ID`; `args.gpu` with the parser built in opts.py). An integer device
//   means the current accelerator (cuda:i on a CUDA machine; on a machine without one, "Cannot
//   access accelerator device when none is available"). It becomes the target's device with that
//   index on the indexed targets (torch.device("npu", i)), the one device on cpu and mps ("cpu":
//   the index goes), and torch.device(<the device's type>, i) on accelerator (torch.device("cpu",
//   i) is the CPU). (2) A "cuda" / "cuda:N" literal, or a device string formatted from "cuda", that
//   reaches a device position through variables, parameters, call arguments, argparse defaults and
//   return values (`parser.add_argument("-d", "--device", default="cuda")` then
//   `evaluate(model, args.device)` then `model.to(device)`; `return "cuda:0"` from the
//   script's own select_device()).
//   (3) The backend name "nccl" that reaches init_process_group's backend the same way, or is
//   assigned or passed to a name that says it is a backend (`args.dist_backend = "nccl"`,
//   `backend = "nccl"`, `launch(gpu_backend="nccl")`).
// Why:
//   The other device rules see the literal where it is used; here the literal sits elsewhere (a
//   default, a helper's return) and only its flow says it is a device. Reporting it would leave
//   the user to do by hand what the code determines.
// Example:
//   def worker(rank):
//       model.to(rank)
//   mp.spawn(worker, nprocs=2)
//   parser.add_argument("-d", "--device", default="cuda")
// Becomes (npu):
//   def worker(rank):
//       model.to(torch.device("npu", rank))
//   parser.add_argument("-d", "--device", default="npu")
//   (cpu: model.to("cpu"); accelerator: model.to(torch.device(device.type, rank)) and
//   default=device.type)
// Safety:
//   Only values whose every source the layer knows are rewritten: a name also bound to a call
//   result, a subscript or a loop variable is left to TP700, which reports it. A literal that
//   another rule already rewrote or reported is left to that rule. Messages are never values.
//   An index that TP100 rewrote inside (`torch.device(torch.cuda.current_device())`) is still
//   this rule's: where the index stays, the device type goes around it with two insertions that
//   keep TP100's rewrite (so a second migrate changes nothing); where it goes (cpu, mps), the
//   replacement drops TP100's finding with it (Finding::drops).
#include <torchport/flow/device_values.h>
#include <torchport/rules/context.h>

#include <algorithm>
#include <cctype>

namespace torchport::rules {

namespace {

/// TP304 (device-value): integer device indices and device/backend literals whose value reaches a
/// device position (the device-value layer). Its one producer: every TP304 finding is made here.
void tp304(Context& ctx, Draft d) { ctx.add("TP304", std::move(d)); }

using flow::Source;
using syntax::Node;
using syntax::NodeKind;

class DeviceValueRule {
 public:
  explicit DeviceValueRule(Context& ctx) : ctx_(ctx), t_(ctx.tree) {
    for (const Finding& f : ctx.result.findings) {
      taken_.emplace_back(f.begin, f.end);
      if (f.op == Operation::Modify) {
        modified_.emplace_back(f.begin, f.end);
        before_.emplace_back(f.begin, f.end);
      }
      if (renames_in_place(f)) api_rewrites_.emplace_back(f.begin, f.end);
    }
  }

  void run() {
    for (const Node* c : t_.find_all(NodeKind::Call)) call(*c);
    // {"device": "cuda" if opt.cuda else "cpu", "backend": "nccl"}: a configuration's device
    // and backend entries
    for (const Node* d : t_.find_all(NodeKind::Dict)) {
      const Node* key = nullptr;
      for (const Node* c : d->children()) {
        if (c->role() == syntax::Role::Key) key = c;
        if (c->role() != syntax::Role::Value || !key) continue;
        if (key->kind() == NodeKind::Constant && t_.is_string(*key)) {
          auto k = t_.string_value(*key);
          if (k && (*k == "device" || *k == "map_location")) position(*c, Position::Keyword);
          if (k && backend_name(*k)) for_backend_literals(*c, "the " + *k + " entry of a dict");
        }
        key = nullptr;
      }
    }
  }

 private:
  enum class Position { To, DeviceCtor, Keyword, Backend };

  bool free(const Node& n) const {
    const auto r = t_.byte_range(n);
    return std::none_of(taken_.begin(), taken_.end(), [&](const auto& f) {
      return f.first < r.end && r.begin < std::max(f.second, f.first + 1);
    });
  }
  void take(const Node& n) {
    const auto r = t_.byte_range(n);
    taken_.emplace_back(r.begin, r.end);
    modified_.emplace_back(r.begin, r.end);
  }
  bool rewritten(const Node& n) const {
    const auto r = t_.byte_range(n);
    return std::any_of(modified_.begin(), modified_.end(),
                       [&](const auto& f) { return f.first < r.end && r.begin < f.second; });
  }

  std::string_view qualified(const Node& f) const {
    if (f.token() == syntax::kNoToken) return {};
    const semantic::Reference* r = ctx_.m.reference_at(f.token());
    return r && r->last == f.token() ? std::string_view(r->qualified) : std::string_view();
  }

  void call(const Node& c) {
    const Node* f = c.func();
    if (!f) return;
    const bool method = f->kind() == NodeKind::Attribute;
    const std::string_view last =
        method || f->kind() == NodeKind::Name ? t_.name(*f) : std::string_view{};
    const std::string_view q = qualified(*f);
    auto args = c.args();
    const Node* first = args.empty() ? nullptr : *args.begin();
    if (first && first->kind() != NodeKind::Starred) {
      if (method && last == "to" && q.empty()) position(*first, Position::To);
      if (q == "torch.device" && std::next(args.begin()) == args.end())
        position(*first, Position::DeviceCtor);
      if (q == "torch.distributed.init_process_group") position(*first, Position::Backend);
    }
    if (method && (last == "add_argument" || last == "add")) option(c);
    if (method && (last == "assertEqual" || last == "assertNotEqual") && args.size() == 2) {
      // self.assertEqual(p.device.type, "cuda"): a comparison
      const Node& a = **args.begin();
      const Node& b = **std::next(args.begin());
      if (!ctx_.accelerator() && !ctx_.target.host) {
        if (cuda_literal(b) && move(a)) literal_type(b, "a comparison with a device value");
        if (cuda_literal(a) && move(b)) literal_type(a, "a comparison with a device value");
      } else if (ctx_.accelerator() &&
                 ((cuda_literal(b) && move(a)) || (cuda_literal(a) && move(b)))) {
        assert_not_cpu(c, *f, cuda_literal(b) ? b : a, last == "assertEqual");
      }
    }
    for (const Node* k : c.keywords()) {
      const std::string_view kw = t_.name(*k);
      if (!k->value()) continue;
      if (kw == "device" || kw == "map_location" || kw == "device_map")
        position(*k->value(), Position::Keyword);
      if (kw == "backend" && q.starts_with("torch.distributed."))
        position(*k->value(), Position::Backend);
      if (backend_name(kw)) backend_literal(*k->value(), "the " + std::string(kw) + "= argument");
    }
  }

  /// An option whose name says it is a backend (`--dist-backend`, `--gpu_backend`): "nccl" in
  /// its default= and choices= (TP400 does add_argument's when it runs first).
  void option(const Node& c) {
    bool backend = false;
    for (const Node* a : c.args()) {
      if (a->kind() != NodeKind::Constant || !t_.is_string(*a)) return;
      auto s = t_.string_value(*a);
      if (!s || !s->starts_with("-")) return;
      const std::string dest = flow::option_dest(*s);
      backend = backend || backend_name(dest) || dest.find("backend") != std::string::npos;
    }
    if (!backend) return;
    for (const Node* k : c.keywords()) {
      const std::string_view kw = t_.name(*k);
      if (!k->value() || (kw != "default" && kw != "choices")) continue;
      const Node& v = *k->value();
      if (v.kind() == NodeKind::Constant)
        backend_literal(v, "the " + std::string(kw) + " of a backend option");
      if (v.kind() == NodeKind::List || v.kind() == NodeKind::Tuple)
        for (const Node* e : v.elts())
          backend_literal(*e, "the " + std::string(kw) + " of a backend option");
    }
  }

  static bool backend_name(std::string_view name) {
    // Compared without case, without a lowered copy (this runs for every keyword argument).
    auto same = [](std::string_view a, std::string_view lower) {
      return std::equal(a.begin(), a.end(), lower.begin(), lower.end(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) == y;
      });
    };
    constexpr std::size_t k = 8;  // "_backend", "backend_"
    return same(name, "backend") ||
           (name.size() >= k && (same(name.substr(name.size() - k), "_backend") ||
                                 same(name.substr(0, k), "backend_")));
  }

  void position(const Node& e, Position where) {
    const flow::Value& v = dv().of(e);
    if (where == Position::Backend) {
      if (!v.only({Source::Backend, Source::Text, Source::None})) return;
      for (const Node* lit : v.literals)
        if (lit->kind() == NodeKind::Constant && !lit->has(syntax::kNone))
          backend_literal(*lit, "the backend of init_process_group");
      return;
    }
    if (where != Position::Keyword || t_.name(*e.parent()) == "device") {
      if (flow::DeviceValues::is_index(v)) {  // v is of(e): is_index(e) would walk it again
        index(e, where);
        return;
      }
    }
    // Device strings: every source a device literal (or "cpu", None); the literals that are
    // not at the position itself (those are TP300's).
    if (!v.only({Source::DeviceString, Source::HostString, Source::Formatted, Source::None,
                 Source::Text}) ||
        !(v.has(Source::DeviceString) || v.has(Source::Formatted)))
      return;
    // A literal at the position itself is TP300's where it rewrote or reported it (taken);
    // one it does not know (device_map="cuda") is this rule's.
    // torch.load cannot restore to "cpu:0": on accelerator (whose fallback is the CPU) a built
    // string that reaches map_location becomes the device itself, without an index.
    const bool map_location = where == Position::Keyword && e.parent() &&
                              e.parent()->kind() == NodeKind::keyword &&
                              t_.name(*e.parent()) == "map_location";
    for (const Node* lit : v.literals) {
      if (lit->kind() == NodeKind::Constant && t_.is_string(*lit)) device_literal(*lit);
      if (lit->kind() == NodeKind::JoinedStr && !(map_location && ctx_.accelerator()))
        formatted(*lit);
      if (lit->kind() == NodeKind::Call || lit->kind() == NodeKind::BinOp ||
          (lit->kind() == NodeKind::JoinedStr && map_location && ctx_.accelerator()))
        built(*lit, map_location);
    }
  }

  // ---- integer indices ----

  /// True when every finding that overlaps `n` is a rewrite within it whose code renames in
  /// place (RuleInfo::renames_in_place: TP100's `torch.cuda.current_device` renamed, or the
  /// whole call made a value on cpu), so the index itself is still this rule's.
  bool only_api_rewrites(const Node& n) const {
    const auto r = t_.byte_range(n);
    return std::all_of(taken_.begin(), taken_.end(), [&](const auto& f) {
      const bool overlaps = f.first < r.end && r.begin < std::max(f.second, f.first + 1);
      return !overlaps ||
             (f.first >= r.begin && f.second <= r.end &&
              std::find(api_rewrites_.begin(), api_rewrites_.end(), f) != api_rewrites_.end());
    });
  }

  // An index that another rule rewrote inside (`torch.device(torch.cuda.current_device())`,
  // whose callee TP100 renamed): the device type goes around it with two insertions, so its
  // bytes, and the rewrite in them, stay. Without it a second migrate would add the type.
  void wrap_index(const Node& e, Position where, const std::string& type_arg) {
    const auto r = t_.byte_range(e);
    const std::string i(t_.text(e));
    Draft f;
    f.op = Operation::Modify;
    f.api = "device index";
    f.begin = r.begin;
    f.end = r.end;
    fix::Fix fx;
    if (where == Position::DeviceCtor) {
      fx.edits.push_back(fix::Edit{r.begin, r.begin, type_arg + ", "});
      f.message = "change the integer device index " + i + " (cuda:" + i + " on CUDA) to " +
                  ctx_.torch_name() + ".device(" + type_arg + ", " + i + ") (the index is kept)";
    } else {
      const std::string open = ctx_.torch_name() + ".device(" + type_arg + ", ";
      fx.edits.push_back(fix::Edit{r.begin, r.begin, open});
      fx.edits.push_back(fix::Edit{r.end, r.end, ")"});
      f.message = "change the integer device index " + i + " (cuda:" + i + " on CUDA) to " + open +
                  i + ") (the index is kept)";
    }
    f.fix = std::move(fx);
    f.changes_file = true;
    tp304(ctx_, std::move(f));
    take(e);
  }

  void index(const Node& e, Position where) {
    // Another rule's rewrite inside the index: kept around it where the index stays, dropped
    // with the index where it goes (Finding::drops).
    const bool inside = !free(e);
    if (inside && !only_api_rewrites(e)) return;
    const std::string i(t_.text(e));
    const auto r = t_.byte_range(e);
    std::string type_arg;  // the device type, as an argument of torch.device
    if (ctx_.accelerator()) {
      type_arg = ctx_.device_type_expr(r.begin);
    } else {
      type_arg = "\"" + ctx_.target.device + "\"";
    }
    const bool kept_index = ctx_.accelerator() || ctx_.target.device_index;
    if (inside && kept_index) return wrap_index(e, where, type_arg);
    std::string repl;
    std::string what;
    std::string shown;  // the message's replacement: the whole device, never an argument list
    if (!ctx_.accelerator() && !ctx_.target.device_index) {
      repl = type_arg;  // cpu, mps: the one device
      what = ctx_.target.name + " has one device: the index is dropped";
    } else if (where == Position::DeviceCtor) {
      repl = type_arg + ", " + i;
      shown = ctx_.torch_name() + ".device(" + repl + ")";
      what = "the index is kept";
    } else {
      repl = ctx_.torch_name() + ".device(" + type_arg + ", " + i + ")";
      what = "the index is kept";
    }
    Draft d = ctx_.rewrite("device index",
                           "change the integer device index " + i + " (cuda:" + i +
                               " on CUDA) to " + (shown.empty() ? repl : shown) + " (" + what + ")",
                           r.begin, r.end, repl);
    if (inside) d = std::move(d).dropping(r.begin, r.end);
    tp304(ctx_, std::move(d));
    take(e);
  }

  // ---- device strings ----

  void device_literal(const Node& lit) {
    if (!free(lit) || in_message(lit)) return;
    auto s = t_.string_value(lit);
    if (!s || !semantic::is_cuda_device_string(*s)) return;
    const auto r = t_.byte_range(lit);
    const std::string index = s->size() > 4 ? s->substr(5) : std::string();
    std::string repl;
    if (ctx_.accelerator()) {
      const std::string type = ctx_.device_type_expr(r.begin);
      repl = index.empty() ? type : "f\"{" + type + "}:" + index + "\"";
    } else if (!ctx_.target.device_index || index.empty()) {
      repl = "\"" + ctx_.target.device + "\"";
    } else {
      repl = "\"" + ctx_.target.device + ":" + index + "\"";
    }
    if (lit.has(syntax::kImplicitConcat)) return;
    const std::string old(t_.text(lit));
    tp304(ctx_, ctx_.rewrite(std::string(*s),
                             "change the device string " + old + " to " + repl +
                                 " (its value reaches a device position)",
                             r.begin, r.end, repl));
    take(lit);
  }

  void formatted(const Node& js) {
    if (!free(js) || in_message(js)) return;
    // f"cuda:{rank}": the "cuda" at the start of the first literal part.
    auto parts = js.parts();
    if (parts.empty()) return;
    const Node* head = *parts.begin();
    const auto hr = t_.byte_range(*head);
    const std::string_view text = t_.text(*head);
    if (!text.starts_with("cuda:")) return;
    const auto r = t_.byte_range(js);
    if (!ctx_.accelerator() && !ctx_.target.device_index) {
      const std::string repl = "\"" + ctx_.target.device + "\"";
      tp304(ctx_, ctx_.rewrite("f\"cuda:{...}\"",
                               "change the device string " + std::string(t_.text(js)) + " to " +
                                   repl + " (" + ctx_.target.name + " has one device)",
                               r.begin, r.end, repl));
    } else {
      std::string repl =
          ctx_.accelerator() ? "{" + ctx_.device_type_expr(r.begin) + "}" : ctx_.target.device;
      if (ctx_.accelerator() && repl.find('"') != std::string::npos) return;
      tp304(ctx_, ctx_.rewrite("f\"cuda:{...}\"",
                               "change the device type cuda in " + std::string(t_.text(js)) +
                                   " to " + repl + " (its value reaches a device position)",
                               hr.begin, hr.begin + 4, repl));
    }
    take(js);
  }

  /// "cuda:{}".format(i) and "cuda:%d" % i: the format string's "cuda" becomes the device on
  /// the indexed targets; on cpu and mps the whole value is the one device; on accelerator
  /// torch.device(<the device's type>, i).
  void built(const Node& n, bool map_location) {
    if (!free(n) || in_message(n)) return;
    if (map_location && ctx_.accelerator()) {
      const auto r = t_.byte_range(n);
      const std::string repl = ctx_.device_expr(r.begin);
      tp304(ctx_, ctx_.rewrite(
                      "\"cuda:...\"",
                      "change the device string " + std::string(t_.text(n)) + " to " + repl +
                          " (it reaches torch.load's map_location, which cannot restore to a CPU "
                          "index on the CPU fallback: the current device)",
                      r.begin, r.end, repl));
      take(n);
      return;
    }
    const Node* fmt = nullptr;
    const Node* index = nullptr;
    if (n.kind() == NodeKind::Call && n.func() && n.func()->kind() == NodeKind::Attribute) {
      fmt = n.func()->value();
      if (n.args().size() == 1 && n.keywords().empty()) index = *n.args().begin();
    } else if (n.kind() == NodeKind::BinOp) {
      fmt = n.left();
      index = n.right();
    }
    if (!fmt || fmt->kind() != NodeKind::Constant || fmt->first_token() != fmt->last_token())
      return;
    auto sv = semantic::string_value(ctx_.m.text(), ctx_.m.tokens()[fmt->first_token()]);
    if (!sv || !sv->value.starts_with("cuda:")) return;
    const auto r = t_.byte_range(n);
    const std::string old(t_.text(n));
    if (ctx_.accelerator()) {
      if (!index || index->kind() == NodeKind::Tuple) return;
      const std::string repl = ctx_.torch_name() + ".device(" + ctx_.device_type_expr(r.begin) +
                               ", " + std::string(t_.text(*index)) + ")";
      tp304(ctx_, ctx_.rewrite("\"cuda:...\"",
                               "change the device string " + old + " to " + repl +
                                   " (its value reaches a device position)",
                               r.begin, r.end, repl));
    } else if (!ctx_.target.device_index) {
      const std::string repl = "\"" + ctx_.target.device + "\"";
      tp304(ctx_, ctx_.rewrite("\"cuda:...\"",
                               "change the device string " + old + " to " + repl + " (" +
                                   ctx_.target.name + " has one device: the index is dropped)",
                               r.begin, r.end, repl));
    } else {
      tp304(ctx_, ctx_.rewrite("\"cuda:...\"",
                               "change the device type cuda in " + old + " to " +
                                   ctx_.target.device + " (its value reaches a device position)",
                               sv->value_begin, sv->value_begin + 4, ctx_.target.device));
    }
    take(n);
  }

  // ---- the backend ----

  void backend_literal(const Node& lit, const std::string& where) {
    if (lit.kind() != NodeKind::Constant || !t_.is_string(lit) || !free(lit) || in_message(lit))
      return;
    auto s = t_.string_value(lit);
    if (!s || *s != "nccl" || lit.has(syntax::kImplicitConcat)) return;
    const auto r = t_.byte_range(lit);
    std::string repl;
    if (ctx_.accelerator()) {
      auto alias = ctx_.m.module_alias("torch.distributed");
      repl = (alias ? *alias : ctx_.torch_name() + ".distributed") +
             ".get_default_backend_for_device(" + ctx_.device_expr(r.begin) + ")";
      ctx_.require_torch(kAcceleratorMinTorch);
    } else {
      repl =
          "\"" + (ctx_.target.backend.empty() ? std::string("gloo") : ctx_.target.backend) + "\"";
    }
    tp304(ctx_,
          ctx_.rewrite("nccl",
                       "change the backend \"nccl\" to " + repl + " (its value is " + where + ")",
                       r.begin, r.end, repl));
    take(lit);
  }

  bool in_message(const Node& n) const {
    for (const Node* p = n.parent(); p; p = p->parent()) {
      if (p->kind() == NodeKind::Raise || p->kind() == NodeKind::JoinedStr) return true;
      if (syntax::is_statement(p->kind())) return false;
    }
    return false;
  }

 public:
  /// Comparisons with "cuda" whose other side is a device value that torchport rewrote where it
  /// was set (`device_type = "cuda" if ... else "cpu"` ... `if device_type == "cuda":`), or a
  /// device's type (`x.device.type`): both sides move together. On cpu they stay
  /// (false, as on a machine without CUDA: TP700 reports them).
  void comparisons() {
    if (!ctx_.accelerator() && ctx_.target.host) return;
    for (const Node* c : t_.find_all(NodeKind::Compare)) {
      auto comps = c->comparators();
      if (!c->left() || comps.size() != 1) continue;
      const Node& l = *c->left();
      const Node& r = **comps.begin();
      const syntax::CmpOp op = t_.compare_ops(*c).front();
      const bool eq = op == syntax::CmpOp::Eq || op == syntax::CmpOp::NotEq;
      const bool in = op == syntax::CmpOp::In || op == syntax::CmpOp::NotIn;
      if (!eq && !in) continue;
      if (cuda_literal(l) && (move(r) || guards_rewrite(*c))) {
        compare(*c, l, r, op);
      } else if (eq && cuda_literal(r) && (move(l) || guards_rewrite(*c))) {
        compare(*c, r, l, op);
      } else if (in &&
                 (r.kind() == NodeKind::Set || r.kind() == NodeKind::Tuple ||
                  r.kind() == NodeKind::List) &&
                 std::any_of(r.elts().begin(), r.elts().end(),
                             [&](const Node* e) { return cuda_literal(*e); }) &&
                 move(l)) {
        if (ctx_.accelerator()) {
          if (r.elts().size() == 1)
            compare(*c, **r.elts().begin(), l,
                    op == syntax::CmpOp::In ? syntax::CmpOp::Eq : syntax::CmpOp::NotEq);
          continue;
        }
        for (const Node* e : r.elts())
          if (cuda_literal(*e)) literal_type(*e, "a comparison with a device value");
      }
    }
    for (const Node* c : t_.find_all(NodeKind::Call)) {
      const Node* f = c->func();
      auto args = c->args();
      if (!f || f->kind() != NodeKind::Attribute || t_.name(*f) != "startswith" ||
          args.size() != 1 || !cuda_literal(**args.begin()) ||
          !(move(*f->value()) || guards_rewrite(*c)))
        continue;
      if (!ctx_.accelerator()) {
        literal_type(**args.begin(), "a comparison with a device value");
        continue;
      }
      // `not` binds looser than most operators: only where the call is a whole test.
      if (!free(*c) || c->role() != syntax::Role::Test) continue;
      const auto rr = t_.byte_range(*c);
      const std::string repl = "not " + std::string(t_.text(*f->value())) + ".startswith(\"cpu\")";
      tp304(ctx_,
            ctx_.rewrite("device comparison",
                         "change " + std::string(t_.text(*c)) + " to " + repl +
                             " (the device was moved to the accelerator, or the CPU without one)",
                         rr.begin, rr.end, repl));
      take(*c);
    }
  }

 private:
  /// The comparison is (part of) the test of an `if` whose body torchport rewrote for the
  /// device (`if args.device.startswith("cuda"): torch.cuda.synchronize()`): the guard tests the
  /// device the body acts on, so it moves with it.
  bool guards_rewrite(const Node& cmp) const {
    const Node* child = &cmp;
    for (const Node* p = cmp.parent(); p; child = p, p = p->parent()) {
      if (p->kind() == NodeKind::BoolOp || (p->kind() == NodeKind::UnaryOp)) continue;
      if (p->kind() != NodeKind::If || child->role() != syntax::Role::Test) return false;
      auto body = p->body();
      if (body.empty()) return false;
      const std::uint32_t b = t_.byte_range(**body.begin()).begin;
      std::uint32_t e = b;
      for (const Node* st : body) e = t_.byte_range(*st).end;
      return std::any_of(before_.begin(), before_.end(),
                         [&](const auto& f) { return b <= f.first && f.second <= e; });
    }
    return false;
  }

  bool cuda_literal(const Node& n) const {
    if (n.kind() != NodeKind::Constant || !t_.is_string(n)) return false;
    auto s = t_.string_value(n);
    return s && *s == "cuda";
  }

  /// The other side of a comparison with "cuda" is a device value whose CUDA sources all move
  /// to the target: a device's type (`x.device.type`), or a value whose every source is a known
  /// device string, each CUDA one rewritten here if no rule did (the call argument that gives a
  /// `device` parameter its value). False when some source is unknown: then neither side changes.
  bool move(const Node& o) {
    // `x.device.type`, `next(iter(devices)).type`: a torch.device's type (a str has no .type;
    // Tensor.type() is called). A bare `x.device` may be a user's own attribute holding anything
    // (`args.device`): its value decides, below.
    if (o.kind() == NodeKind::Attribute && t_.name(o) == "type" && o.value() &&
        o.role() != syntax::Role::Func)
      return true;
    // `str(x.device)` (`"cuda" in str(x.device)`, `str(x.device).startswith("cuda")`): the text
    // of a tensor's or module's device, where nothing says `.device` is the user's own value.
    if (o.kind() == NodeKind::Call && o.func() && o.func()->kind() == NodeKind::Name &&
        t_.name(*o.func()) == "str" && o.args().size() == 1 && o.keywords().empty()) {
      const Node& a = **o.args().begin();
      if (a.kind() == NodeKind::Attribute && t_.name(a) == "device" && !dv().user_attribute(a) &&
          dv().of(a).only({Source::Unknown}))
        return true;
      return move(a);
    }
    const flow::Value& v = dv().of(o);
    if (!v.only({Source::DeviceString, Source::HostString, Source::Formatted, Source::None,
                 Source::Text}) ||
        !(v.has(Source::DeviceString) || v.has(Source::Formatted)))
      return false;
    for (const Node* lit : v.literals) {
      if (rewritten(*lit)) continue;
      if (lit->kind() == NodeKind::JoinedStr) {
        formatted(*lit);
      } else if (lit->kind() == NodeKind::Constant && t_.is_string(*lit)) {
        auto sv = t_.string_value(*lit);
        if (sv && semantic::is_cuda_device_string(*sv)) device_literal(*lit);
      }
    }
    return std::all_of(v.literals.begin(), v.literals.end(), [&](const Node* lit) {
      if (lit->kind() == NodeKind::JoinedStr) return rewritten(*lit);
      auto sv = lit->kind() == NodeKind::Constant && t_.is_string(*lit) ? t_.string_value(*lit)
                                                                        : std::nullopt;
      return !sv || !semantic::is_cuda_device_string(*sv) || rewritten(*lit);
    });
  }

  void compare(const Node& c, const Node& lit, const Node& other, syntax::CmpOp op) {
    if (!ctx_.accelerator()) {
      literal_type(lit, "a comparison with a device value");
      return;
    }
    if (!free(c)) return;
    const std::string o(t_.text(other));
    std::string repl;
    switch (op) {
      case syntax::CmpOp::Eq:
        repl = o + " != \"cpu\"";
        break;
      case syntax::CmpOp::NotEq:
        repl = o + " == \"cpu\"";
        break;
      case syntax::CmpOp::In:
        repl = "\"cpu\" not in " + o;
        break;
      case syntax::CmpOp::NotIn:
        repl = "\"cpu\" in " + o;
        break;
      default:
        return;
    }
    const auto r = t_.byte_range(c);
    tp304(ctx_,
          ctx_.rewrite(
              "device comparison",
              "change " + std::string(t_.text(c)) + " to " + repl +
                  " (\"on the GPU\" is \"not on the CPU\" on the accelerator, which falls back "
                  "to the CPU)",
              r.begin, r.end, repl));
    take(c);
  }

  /// accelerator: `assertEqual(p.device.type, "cuda")` -> `assertNotEqual(p.device.type, "cpu")`
  /// ("on the GPU" is "not on the CPU" where the accelerator falls back to the CPU), and
  /// assertNotEqual the other way round.
  void assert_not_cpu(const Node& call, const Node& method, const Node& lit, bool equal) {
    if (!free(call)) return;
    auto sv = semantic::string_value(ctx_.m.text(), ctx_.m.tokens()[lit.first_token()]);
    if (!sv || lit.first_token() != lit.last_token() || method.token() == syntax::kNoToken) return;
    const syntax::Token& name = ctx_.m.tokens()[method.token()];
    const std::string to = equal ? "assertNotEqual" : "assertEqual";
    const auto r = t_.byte_range(call);
    Draft f;
    f.op = Operation::Modify;
    f.api = "device comparison";
    f.message =
        "change " + std::string(t_.name(method)) + "(..., \"cuda\") to " + to +
        "(..., \"cpu\") (\"on the GPU\" is \"not on the CPU\" on the accelerator, which falls "
        "back to the CPU)";
    f.begin = r.begin;
    f.end = r.end;
    fix::Fix fx;
    fx.edits.push_back(fix::Edit{name.begin, name.end, to});
    fx.edits.push_back(fix::Edit{sv->value_begin, sv->value_begin + 4, "cpu"});
    f.fix = std::move(fx);
    f.changes_file = true;
    tp304(ctx_, std::move(f));
    take(call);
  }

  /// "cuda" -> the target's device type, in place (the quotes kept).
  void literal_type(const Node& lit, const std::string& where) {
    if (!free(lit)) return;
    auto sv = semantic::string_value(ctx_.m.text(), ctx_.m.tokens()[lit.first_token()]);
    if (!sv || lit.first_token() != lit.last_token()) return;
    const std::string type =
        ctx_.target.amp_device.empty() ? ctx_.target.device : ctx_.target.amp_device;
    tp304(ctx_, ctx_.rewrite("cuda",
                             "change \"cuda\" to \"" + type + "\" in " + where +
                                 " (torchport rewrote that value where it is set)",
                             sv->value_begin, sv->value_begin + 4, type));
    take(lit);
  }

 public:
  /// "nccl" assigned to a name that says it is a backend: `backend = "nccl"`,
  /// `args.dist_backend = "nccl"`, `def launch(gpu_backend="nccl")`.
  void assignments() {
    for (NodeKind k : {NodeKind::Assign, NodeKind::AnnAssign}) {
      for (const Node* a : t_.find_all(k)) {
        const Node* v = a->value();
        if (!v) continue;
        for (const Node* target : a->children(syntax::Role::Target)) {
          if ((target->kind() == NodeKind::Name || target->kind() == NodeKind::Attribute) &&
              backend_name(t_.name(*target)))
            for_backend_literals(*v, "assigned to " + std::string(t_.text(*target)));
        }
      }
    }
    for (NodeKind k : {NodeKind::FunctionDef, NodeKind::AsyncFunctionDef}) {
      for (const Node* d : t_.find_all(k)) {
        const Node* args = d->arguments();
        if (!args) continue;
        const Node* last = nullptr;
        for (const Node* c : args->children()) {
          if (c->kind() == NodeKind::arg) last = c;
          if ((c->role() == syntax::Role::Default || c->role() == syntax::Role::KwDefault) &&
              last && backend_name(t_.name(*last)))
            for_backend_literals(*c, "the default of the parameter " + std::string(t_.name(*last)));
        }
      }
    }
  }

 private:
  void for_backend_literals(const Node& v, const std::string& where) {
    const flow::Value& val = dv().of(v);
    if (!val.has(Source::Backend)) return;
    for (const Node* lit : val.literals)
      if (lit->kind() == NodeKind::Constant && t_.is_string(*lit)) backend_literal(*lit, where);
  }

  Context& ctx_;
  const syntax::Tree& t_;
  /// The module's device values, built on the first question (a file without a device
  /// position never builds them).
  const flow::DeviceValues& dv() const { return ctx_.values(); }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> taken_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> modified_;  ///< rewrites only
  /// the rewrites that rename in place (TP100's of catalogued torch.cuda APIs; an index may
  /// hold one)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> api_rewrites_;
  /// the other rules' rewrites (a guarded body they changed)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> before_;
};

}  // namespace

void run_device_value(Context& ctx) {
  if (!ctx.tree.ok()) return;
  DeviceValueRule rule(ctx);
  rule.run();
  rule.assignments();
  rule.comparisons();
}

}  // namespace torchport::rules
