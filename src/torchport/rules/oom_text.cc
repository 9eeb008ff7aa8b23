// Rule family TP120: a test of CUDA's out-of-memory text becomes torch.OutOfMemoryError's.
//
// What it does:
//   A test `"CUDA out of memory" in X` (or `not in`; any string literal that names CUDA and "out
//   of memory", in any case) inside an `except ... as e:` handler, where X is the handled
//   exception's text: str(e), repr(e), e.args[0], traceback.format_exc() (or one of those
//   .lower() / .casefold(), for a literal in lower case), or a name the handler
//   binds once, in its own body before the test, to one of those. The test becomes
//   `isinstance(e, torch.OutOfMemoryError)` (`not isinstance(...)` for `not in`).
// Why:
//   Each device words its out-of-memory error its own way: torch_npu's says "NPU out of memory.
//   Tried to allocate ..." (the strings of libtorch_npu.so in the torch-npu 2.13.0 wheel). The
//   CUDA text never matches there, so the script's fallback (a smaller batch, a skipped step)
//   never runs. The device allocators raise c10::OutOfMemoryError (libtorch_npu.so constructs
//   it too), which Python sees as torch.OutOfMemoryError, the same class as
//   torch.cuda.OutOfMemoryError (installed torch 2.13.0): the test that means the same on every
//   device, CUDA included. (The CPU's allocator raises a plain RuntimeError, "can't allocate
//   memory", which neither test matches.)
// Example:
//   except RuntimeError as e:
//       if "CUDA out of memory" in str(e):
// Becomes (every target):
//   except RuntimeError as e:
//       if isinstance(e, torch.OutOfMemoryError):
// Safety:
//   Unsafe, and labelled: on CUDA an out-of-memory failure outside the caching allocator (a
//   cuBLAS workspace, "CUDA error: out of memory") is a plain RuntimeError whose text matched
//   and whose type does not. torch.OutOfMemoryError is new in torch 2.5 (pytorch/pytorch#121702;
//   huggingface/accelerate#3475 uses it "from PyTorch 2.5.0"): with an older --torch-version the
//   test is reported. A test whose text the tree does not tie to the handled exception (a
//   variable bound elsewhere, a log line read back) is reported, not rewritten.
#include <torchport/rules/context.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace torchport::rules {

namespace {

/// TP120 (oom-text): a test of CUDA's out-of-memory text in an exception becomes isinstance(e,
/// torch.OutOfMemoryError). Its one producer: every TP120 finding is made here.
void tp120(Context& ctx, Draft d) { ctx.add("TP120", std::move(d)); }

using syntax::Node;
using syntax::NodeKind;

constexpr std::string_view kMinTorch = "2.5";

bool oom_text(std::string_view s) {
  std::string low(s);
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return low.find("cuda") != std::string::npos && low.find("out of memory") != std::string::npos;
}

/// The innermost except handler around `n`, in the same function.
const Node* enclosing_handler(const Node& n) {
  for (const Node* p = n.parent(); p; p = p->parent()) {
    const NodeKind k = p->kind();
    if (k == NodeKind::ExceptHandler) return p;
    if (k == NodeKind::FunctionDef || k == NodeKind::AsyncFunctionDef || k == NodeKind::Lambda ||
        k == NodeKind::ClassDef)
      return nullptr;
  }
  return nullptr;
}

class OomText {
 public:
  explicit OomText(Context& ctx) : ctx_(ctx), t_(ctx.tree) {}

  void run() {
    for (const Node* c : t_.find_all(NodeKind::Compare)) compare(*c);
  }

 private:
  /// `e` when `x` is the text of the exception `e` the handler names: str(e), repr(e),
  /// e.args[0], traceback.format_exc().
  bool text_of(const Node& x, std::string_view e) const {
    // str(e).lower(), str(e).casefold(): the same text in lower case (for a literal in lower
    // case: "CUDA out of memory" in str(e).lower() was never true, and stays as it is)
    if (lower_ && x.kind() == NodeKind::Call && x.func() &&
        x.func()->kind() == NodeKind::Attribute &&
        (t_.name(*x.func()) == "lower" || t_.name(*x.func()) == "casefold") &&
        x.children().size() == 1 && x.func()->value())
      return text_of(*x.func()->value(), e);
    if (x.kind() == NodeKind::Call && x.func()) {
      const Node& f = *x.func();
      const auto args = x.args();
      const auto nargs = std::distance(args.begin(), args.end());
      const bool no_keywords =
          x.children(syntax::Role::Keyword).begin() == x.children(syntax::Role::Keyword).end();
      if (f.kind() == NodeKind::Name && (t_.name(f) == "str" || t_.name(f) == "repr") &&
          nargs == 1 && no_keywords) {
        const Node* a = *args.begin();
        return a->kind() == NodeKind::Name && t_.name(*a) == e && !bound_locally(t_.name(f));
      }
      const semantic::Reference* r = ctx_.m.reference_at(f.last_token());
      return r && r->last == f.last_token() && r->qualified == "traceback.format_exc" &&
             nargs == 0 && no_keywords;
    }
    // e.args[0]
    if (x.kind() == NodeKind::Subscript && x.value() && x.value()->kind() == NodeKind::Attribute &&
        t_.name(*x.value()) == "args") {
      const Node* base = x.value()->value();
      const Node* idx = x.child(syntax::Role::Slice);
      return base && base->kind() == NodeKind::Name && t_.name(*base) == e && idx &&
             t_.text(*idx) == "0";
    }
    return false;
  }

  /// True when the script binds `name` itself (a `str` of its own): then str(e) is not the
  /// builtin.
  bool bound_locally(std::string_view name) const {
    for (const Node* n : t_.find_all(NodeKind::Name))
      if (n->role() == syntax::Role::Target && t_.name(*n) == name) return true;
    for (const Node* n : t_.find_all(NodeKind::FunctionDef))
      if (t_.name(*n) == name) return true;
    return false;
  }

  /// `x` holds the handled exception's text: the text itself, or a name the handler's own body
  /// binds once, before `use`, to that text (and nowhere else in the handler).
  bool holds_text(const Node& x, const Node& handler, std::string_view e, const Node& use) const {
    if (text_of(x, e)) return true;
    if (x.kind() != NodeKind::Name) return false;
    const std::string_view v = t_.name(x);
    const Node* binding = nullptr;
    int bindings = 0;
    syntax::walk(handler, [&](const Node& n) {
      if (n.kind() == NodeKind::Name && n.role() == syntax::Role::Target && t_.name(n) == v) {
        ++bindings;
        binding = &n;
      }
    });
    if (bindings != 1 || !binding->parent() || binding->parent()->kind() != NodeKind::Assign ||
        binding->parent()->parent() != &handler)
      return false;
    const Node& assign = *binding->parent();
    if (assign.children(syntax::Role::Target).begin() ==
            assign.children(syntax::Role::Target).end() ||
        std::next(assign.children(syntax::Role::Target).begin()) !=
            assign.children(syntax::Role::Target).end())
      return false;
    return assign.last_token() < use.first_token() && assign.value() && text_of(*assign.value(), e);
  }

  void compare(const Node& c) {
    const std::vector<syntax::CmpOp> ops = t_.compare_ops(c);
    const Node* left = c.left();
    if (ops.empty() || !left || left->kind() != NodeKind::Constant || !t_.is_string(*left)) return;
    const std::optional<std::string> text = t_.string_value(*left);
    if (!text || !oom_text(*text)) return;
    lower_ = std::none_of(text->begin(), text->end(),
                          [](unsigned char ch) { return std::isupper(ch) != 0; });
    if (ops[0] != syntax::CmpOp::In && ops[0] != syntax::CmpOp::NotIn) return;
    const auto lr = t_.byte_range(*left);
    const std::string api = "\"" + *text + "\"";
    const Node* right = *c.children(syntax::Role::Comparator).begin();
    const Node* handler = enclosing_handler(c);
    const std::string_view e = handler ? t_.name(*handler) : std::string_view{};
    if (ops.size() != 1 || !right || e.empty() || !holds_text(*right, *handler, e, c)) {
      tp120(
          ctx_,
          report(Operation::Unknown, api,
                 "matches the text of CUDA's out-of-memory error, which no other device raises "
                 "(torch_npu: \"NPU out of memory\"): the test is never true there. Left as is: "
                 "the text is not tied to the exception an `except ... as e:` handles; test "
                 "isinstance(e, torch.OutOfMemoryError) (torch >= 2.5), which every device raises",
                 lr.begin, lr.end));
      return;
    }
    if (!ctx_.version_ok(kMinTorch)) {
      tp120(
          ctx_,
          report(Operation::Unsupported, api,
                 "torch.OutOfMemoryError, the out-of-memory error of every device, needs torch >= "
                 "2.5 (--torch-version " +
                     ctx_.opts.torch_version + "); the CUDA text test is left in place",
                 lr.begin, lr.end));
      return;
    }
    ctx_.require_torch(kMinTorch);
    const auto cr = t_.byte_range(c);
    const std::string test = (ops[0] == syntax::CmpOp::NotIn ? "not " : "") +
                             std::string("isinstance(") + std::string(e) + ", " +
                             ctx_.render("torch.OutOfMemoryError") + ")";
    tp120(ctx_, ctx_.rewrite(api,
                             "change the test of CUDA's out-of-memory text to " + test +
                                 " (each device words the error its own way; every one raises "
                                 "torch.OutOfMemoryError)",
                             cr.begin, cr.end, test)
                    .labelled("changes behaviour: on CUDA, an out-of-memory failure raised "
                              "as a plain RuntimeError (outside the caching allocator) is "
                              "no longer matched",
                              fix::Applicability::Unsafe));
  }

  Context& ctx_;
  const syntax::Tree& t_;
  bool lower_ = false;  ///< the literal being matched is in lower case
};

}  // namespace

void run_oom_text(Context& ctx) { OomText(ctx).run(); }

}  // namespace torchport::rules
