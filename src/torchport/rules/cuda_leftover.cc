// Rule family TP700: CUDA device strings, NCCL names and integer devices no other rule rewrote
// are reported.
//
// What it does:
//   Runs after every rewriting family and walks the syntax tree for what is still
//   CUDA-specific in the file without a finding: a device string ("cuda", "cuda:0",
//   'cuda:{:d}', f"cuda:{rank}"), the backend name "nccl", a comparison with one
//   (`device_type == "cuda"`, `dev.startswith("cuda")`, `"cuda" in str(x.device)`), the prefix
//   "cuda:" taken apart by a str method (`device.replace("cuda:", "")`), and an
//   integer device given to .to(), .cuda(), torch.device() or device= (a literal, or a name such
//   as local_rank, gpu, gpu_id or device_id). Each becomes an UNKNOWN row saying what to check.
//   A plain device string literal gets a display-only fix: the target's device string in its
//   place ("cuda:1" -> "npu:1"; "mps" where the target has one device), shown, never applied;
//   none for accelerator, whose device is chosen at run time.
// Why:
//   Where the meaning of a value is not clear from the code (a string stored in a tuple, a
//   backend chosen in a helper, a guard that tests for CUDA), rewriting it could change what the
//   program does. Leaving it silently would hide a CUDA dependency: the row makes it visible.
// Example:
//   choices = ("cuda", "cpu")
//   use_fused = device_type == "cuda"
//   model.to(local_rank)
//   print("running on cuda")
// Becomes (npu):
//   unchanged; three UNKNOWN rows (the print message is text for people and is not reported)
// Safety:
//   Display only: nothing is rewritten (the display-only fixes are never applied). Strings in
//   messages (print, warnings.warn, logging methods, exceptions, assert messages, argparse help=)
//   and docstrings are not reported.
#include <torchport/rules/context.h>
#include <torchport/syntax/tree.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace torchport::rules {

namespace {

/// TP700 (cuda-leftover): CUDA device strings, NCCL names and integer devices no other rule rewrote
/// are reported. Its one producer: every TP700 finding is made here.
void tp700(Context& ctx, Draft d) { ctx.add("TP700", std::move(d)); }

using syntax::Node;
using syntax::NodeKind;
using syntax::Role;

bool device_string(std::string_view v) {
  if (v == "cuda") return true;
  if (!v.starts_with("cuda:") || v.size() == 5) return false;
  return std::none_of(v.begin(), v.end(), [](char c) { return c == ' ' || c == '\t'; });
}

bool int_device_name(std::string_view n) {
  static constexpr std::array<std::string_view, 8> kNames = {
      "local_rank", "ddp_local_rank", "gpu",       "gpu_id",
      "gpu_idx",    "gpu_index",      "device_id", "local_gpu"};
  return std::find(kNames.begin(), kNames.end(), n) != kNames.end();
}

class Walker {
 public:
  explicit Walker(Context& ctx) : ctx_(ctx), t_(ctx.tree) {}

  void run() {
    mark();
    visit(t_.root(), false, false);
  }

 private:
  /// A string inside the byte range of a finding is said already; a string elsewhere on the
  /// same line is not (`if name == "cuda" and not torch.cuda.is_available()`: the rewritten
  /// call does not speak for the comparison). ranges_ holds the findings' ranges, merged and
  /// sorted, so a query is a binary search.
  bool covered(std::uint32_t b, std::uint32_t e) const {
    if (e <= b) e = b + 1;
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), b,
                               [](std::uint32_t off, const auto& r) { return off < r.second; });
    return it != ranges_.end() && it->first < e;
  }

  void report(const Node& n, std::string api, std::string message) {
    const auto r = t_.byte_range(n);
    if (covered(r.begin, r.end)) return;
    tp700(ctx_,
          rules::report(Operation::Unknown, std::move(api), std::move(message), r.begin, r.end));
  }
  /// report() with a display-only fix: the edit that would make it the target's device string.
  void suggest(const Node& n, std::string api, std::string message, fix::Edit edit) {
    const auto r = t_.byte_range(n);
    if (covered(r.begin, r.end)) return;
    tp700(ctx_, display(Operation::Unknown, std::move(api), std::move(message), r.begin, r.end,
                        std::move(edit)));
  }
  /// The target's device string in place of the CUDA one of a plain string literal ("cuda:1" ->
  /// "npu:1"; without the index where the target has one device), or nullopt: the device is
  /// chosen at run time (accelerator), or the literal is not plain (an f-string, escapes,
  /// implicit concatenation).
  std::optional<fix::Edit> device_suggestion(const Node& n) const {
    const catalogue::Target& target = ctx_.target;
    if (ctx_.accelerator() || target.device.empty() || n.kind() != NodeKind::Constant ||
        n.first_token() != n.last_token())
      return std::nullopt;
    auto sv = semantic::string_value(ctx_.m.text(), ctx_.m.tokens()[n.first_token()]);
    if (!sv || !semantic::is_cuda_device_string(sv->value) ||
        ctx_.m.text().substr(sv->value_begin, sv->value.size()) != sv->value)
      return std::nullopt;
    const auto b = sv->value_begin;
    const auto e = static_cast<std::uint32_t>(b + sv->value.size());
    if (!target.device_index) return fix::Edit{b, e, target.device};
    return fix::Edit{b, b + 4, target.device};
  }

  bool is_message_call(const Node& call) const {
    const Node* f = call.func();
    if (!f) return false;
    std::string_view name;
    if (f->kind() == NodeKind::Name) name = t_.name(*f);
    if (f->kind() == NodeKind::Attribute) {
      static constexpr std::array<std::string_view, 9> kMethods = {
          "debug", "info", "warning", "warn", "error", "critical", "exception", "log", "write"};
      const std::string_view attr = t_.name(*f);
      if (std::find(kMethods.begin(), kMethods.end(), attr) != kMethods.end()) return true;
      name = attr;
    }
    return name == "print" || name == "warn" || name.ends_with("Error") ||
           name.ends_with("Exception") || name.ends_with("Warning");
  }

  /// `device_type == "cuda" and torch.version.hip is None`: the comparison holding `n` is one
  /// term of an `and` whose other terms test the torch build (torch.version.hip / .cuda).
  bool cuda_build_guard(const Node& n) const {
    const Node* cmp = n.parent();
    if (!cmp || cmp->kind() != NodeKind::Compare || !cmp->parent()) return false;
    const Node* op = cmp->parent();
    if (op->kind() != NodeKind::BoolOp || op->extra_tokens().empty() ||
        ctx_.m.kind(op->extra_tokens()[0]) != syntax::TokenKind::KwAnd)
      return false;
    bool found = false;
    for (const Node* v : op->children()) {
      if (v == cmp) continue;
      syntax::walk(*v, [&](const Node& a) {
        if (found || a.kind() != NodeKind::Attribute) return;
        const semantic::Reference* r = ctx_.m.reference_at(a.last_token());
        found = r && r->last == a.last_token() &&
                (r->qualified == "torch.version.hip" || r->qualified == "torch.version.cuda");
      });
    }
    return found;
  }

  std::string device_phrase() const {
    return ctx_.accelerator() ? std::string("the accelerator") : ctx_.target.name;
  }

  /// The value string() reports of the Constant or JoinedStr `n` ("nccl", "cuda:" for an
  /// f-string or a prefix, or a device string), or nullopt: `n` is reported by no one.
  std::optional<std::string> reported_value(const Node& n) const {
    std::optional<std::string> v;
    if (n.kind() == NodeKind::Constant) {
      // A number, None, True, False or `...` has no string value (Tree::string_value).
      if (!t_.is_string(n)) return std::nullopt;
      // Most strings are none of these: a one-token literal without escapes is its own value
      // (semantic::string_value), read without decoding it into a new string. Its value starts
      // with "cuda" or is "nccl" whenever the decoded one does (decoding it only turns "\r" or
      // "\r\n" into "\n"), so what it rejects the decoded value would reject.
      if (n.first_token() == n.last_token()) {
        const auto sv = semantic::string_value(ctx_.m.text(), ctx_.m.tokens()[n.first_token()]);
        if (sv && !sv->value.starts_with("cuda") && sv->value != "nccl") return std::nullopt;
      }
      v = t_.string_value(n);
    } else if (n.kind() == NodeKind::JoinedStr) {
      // f"cuda:{rank}": the literal text before the first replacement field.
      for (const Node* part : n.parts()) {
        if (part->kind() == NodeKind::Constant) v = std::string(t_.text(*part));
        break;
      }
      if (v && !(v->starts_with("cuda:") || (*v == "cuda" && n.parts().size() == 1))) v.reset();
      if (v) v = "cuda:";  // a device string whatever the index
    }
    // Only these values are reported: every other string is done here.
    if (!v || (*v != "nccl" && *v != "cuda:" && !device_string(*v))) return std::nullopt;
    return v;
  }

  void string(const Node& n, bool compare) {
    const std::optional<std::string> v = reported_value(n);
    if (!v) return;
    const std::string api(t_.text(n).substr(0, 40));
    if (*v == "nccl") {
      report(n, api,
             "the NCCL backend name is left as is: it is not passed where torchport knows it names "
             "the collective backend; on " +
                 ctx_.target.name + " use the target's backend (" +
                 (ctx_.target.backend.empty() ? std::string("gloo") : ctx_.target.backend) + ")");
    } else if (v == "cuda:" && parsed_prefix(n)) {
      report(n, api,
             "a CUDA device prefix is parsed here (" + std::string(t_.name(*n.parent()->func())) +
                 "): the device strings of " + device_phrase() +
                 " do not carry it; check the parsing for them");
    } else if (device_string(*v) ||
               (v == "cuda:" && (n.kind() == NodeKind::JoinedStr ||
                                 (n.parent() && n.parent()->kind() == NodeKind::BinOp)))) {
      if (compare && cuda_build_guard(n)) {
        report(n, api,
               "a comparison with \"cuda\" and-ed with a test of torch.version (hip / cuda) is "
               "kept as is: it asks for an NVIDIA CUDA build, to guard a CUDA-only path; on " +
                   device_phrase() +
                   " it is false and the code takes its portable path (catalogue: \"cuda\" and "
                   "torch.version)");
      } else if (compare && ctx_.target.host) {
        report(n, api,
               "a comparison with a CUDA device type is left as is: it is false on " +
                   ctx_.target.name +
                   ", as on a machine without CUDA, so the code runs its CPU path");
      } else if (compare) {
        report(n, api,
               "a comparison with a CUDA device type is left as is: it is true only on CUDA; "
               "check whether it means \"on " +
                   device_phrase() + "\" (never make it true on CPU)");
      } else {
        const std::string message =
            "a CUDA device string is left as is: its use as a device is not clear here; "
            "check it for " +
            device_phrase();
        if (auto edit = device_suggestion(n))
          suggest(n, api, message, std::move(*edit));
        else
          report(n, api, message);
      }
    }
  }

  /// `s.replace("cuda:", "")`, `s.startswith("cuda:")`, `s.split("cuda:")`: the string is an
  /// argument of a str method that takes a device string apart.
  bool parsed_prefix(const Node& n) const {
    const Node* c = n.parent();
    if (!c || c->kind() != NodeKind::Call || n.role() != Role::Arg) return false;
    const Node* f = c->func();
    if (!f || f->kind() != NodeKind::Attribute) return false;
    static constexpr std::array<std::string_view, 11> kMethods = {
        "replace",   "removeprefix", "startswith", "endswith", "split", "rsplit",
        "partition", "rpartition",   "find",       "index",    "lstrip"};
    return std::find(kMethods.begin(), kMethods.end(), t_.name(*f)) != kMethods.end();
  }

  /// `arg` is an integer device: a literal, or a name such as local_rank.
  bool int_device_arg(const Node& arg) const {
    if (arg.kind() == NodeKind::Constant && arg.has(syntax::kNumber)) {
      const std::string_view s = t_.text(arg);
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    }
    if (arg.kind() == NodeKind::Name || arg.kind() == NodeKind::Attribute)
      return int_device_name(t_.name(arg));
    return false;
  }

  void int_device(const Node& arg) {
    if (!int_device_arg(arg)) return;
    // `.cuda(1)` rewritten to `.npu(1)`: the call's row speaks for its index.
    const auto r = t_.byte_range(arg);
    if (!line_free(r.begin, r.end)) return;
    report(arg, std::string(t_.text(arg)),
           "an integer device index means cuda:N: on " + device_phrase() +
               " pass a device (e.g. torch.device(\"" +
               (ctx_.accelerator() ? std::string("<type>") : ctx_.target.device) + "\", " +
               std::string(t_.text(arg)) + "))");
  }

  /// Calls `each` with every argument of the call `c` that call() reads as a device: the first
  /// argument of .to(), .cuda() and torch.device(), and device=.
  template <typename F>
  void device_args(const Node& c, F&& each) const {
    const Node* f = c.func();
    if (!f) return;
    const std::string_view last = f->kind() == NodeKind::Attribute || f->kind() == NodeKind::Name
                                      ? t_.name(*f)
                                      : std::string_view{};
    const bool method = f->kind() == NodeKind::Attribute;
    auto args = c.args();
    if (!args.empty() &&
        ((method && (last == "to" || last == "cuda")) || t_.text(*f) == "torch.device"))
      each(**args.begin());
    for (const Node* k : c.keywords())
      if (t_.name(*k) == "device" && k->value()) each(*k->value());
  }

  void call(const Node& c) {
    device_args(c, [&](const Node& arg) { int_device(arg); });
  }

  /// Whether visiting `n` can report anything, whatever the walk's flags: a string with a
  /// reported value, or a call with an integer device. A Constant that is a statement of its
  /// own (a docstring) or a part of an f-string is never visited.
  bool may_report(const Node& n) const {
    switch (n.kind()) {
      case NodeKind::Constant:
        if (const Node* p = n.parent();
            p && (p->kind() == NodeKind::Expr || p->kind() == NodeKind::JoinedStr))
          return false;
        return reported_value(n).has_value();
      case NodeKind::JoinedStr:
        return reported_value(n).has_value();
      case NodeKind::Call: {
        bool hit = false;
        device_args(n, [&](const Node& arg) { hit = hit || int_device_arg(arg); });
        return hit;
      }
      default:
        return false;
    }
  }

  /// The nodes the walk enters: those that may report and their ancestors, sorted. A subtree
  /// with none of them reports nothing (string() and call() are the walk's only findings), so
  /// the walk skips it.
  void mark() {
    for (NodeKind k : {NodeKind::Constant, NodeKind::JoinedStr, NodeKind::Call})
      for (const Node* n : t_.find_all(k))
        if (may_report(*n))
          for (const Node* a = n; a; a = a->parent()) entered_.push_back(a);
    std::sort(entered_.begin(), entered_.end());
    entered_.erase(std::unique(entered_.begin(), entered_.end()), entered_.end());
  }

  void visit(const Node& n, bool message, bool compare) {
    if (!std::binary_search(entered_.begin(), entered_.end(), &n)) return;
    switch (n.kind()) {
      case NodeKind::Expr:
        // A bare string statement is a docstring or a comment.
        if (const Node* v = n.value();
            v && (v->kind() == NodeKind::Constant || v->kind() == NodeKind::JoinedStr))
          return;
        break;
      case NodeKind::Raise:
        message = true;
        break;
      case NodeKind::Assert:
        for (const Node* c : n.children()) visit(*c, message || c->role() == Role::Msg, compare);
        return;
      case NodeKind::Call: {
        const bool msg = is_message_call(n);
        if (!message) call(n);
        if (msg || message) {
          // Arguments of a message are text for people; a call inside one is code again.
          for (const Node* c : n.children()) {
            if (c->kind() == NodeKind::Call && !is_message_call(*c))
              visit(*c, false, compare);
            else
              visit(*c, true, compare);
          }
          return;
        }
        const Node* f = n.func();
        const bool startswith = f && f->kind() == NodeKind::Attribute &&
                                (t_.name(*f) == "startswith" || t_.name(*f) == "endswith");
        for (const Node* c : n.children()) {
          // argparse's help= is text for people; setup()'s extras_require= names extras
          // (`"cuda": [...]`), not devices.
          const bool help = c->kind() == NodeKind::keyword &&
                            (t_.name(*c) == "help" || t_.name(*c) == "extras_require");
          visit(*c, help, compare || (startswith && c->role() == Role::Arg));
        }
        return;
      }
      case NodeKind::Compare:
        for (const Node* c : n.children()) visit(*c, message, true);
        return;
      case NodeKind::Constant:
      case NodeKind::JoinedStr:
        if (!message) string(n, compare);
        if (n.kind() == NodeKind::JoinedStr)
          for (const Node* c : n.children())
            if (c->kind() != NodeKind::Constant) visit(*c, message, compare);
        return;
      default:
        break;
    }
    for (const Node* c : n.children()) visit(*c, message, compare);
  }

 public:
  void snapshot() {
    ranges_.clear();
    ranges_.reserve(ctx_.result.findings.size());
    lines_covered_.clear();
    // Findings that are not about CUDA (float64, torch version changes) do not say it.
    const auto cuda = [](const Finding& f) { return subject_of(f) == Subject::Cuda; };
    if (std::none_of(ctx_.result.findings.begin(), ctx_.result.findings.end(), cuda))
      return;  // no line is covered: line_free() without a table
    // Lines are numbered from 1 (LineCol::line); one slot more for the line after the last.
    const std::size_t n = static_cast<std::size_t>(t_.lines().line_count()) + 2;
    std::vector<std::int64_t> delta(n + 1, 0);
    for (const Finding& f : ctx_.result.findings) {
      if (!cuda(f)) continue;
      ranges_.emplace_back(f.begin, std::max(f.end, f.begin + 1));
      std::uint32_t a = t_.lines().locate(f.begin).line;
      std::uint32_t z = t_.lines().locate(std::max(f.end, f.begin + 1) - 1).line;
      if (a > z) std::swap(a, z);
      delta[std::min<std::size_t>(a, n)] += 1;
      delta[std::min<std::size_t>(static_cast<std::size_t>(z) + 1, n)] -= 1;
    }
    std::sort(ranges_.begin(), ranges_.end());
    std::size_t k = 0;
    for (const auto& r : ranges_) {
      if (k > 0 && r.first <= ranges_[k - 1].second) {
        ranges_[k - 1].second = std::max(ranges_[k - 1].second, r.second);
      } else {
        ranges_[k++] = r;
      }
    }
    ranges_.resize(k);
    lines_covered_.assign(n + 1, 0);
    std::int64_t open = 0;
    for (std::size_t i = 0; i < n; ++i) {
      open += delta[i];
      lines_covered_[i + 1] = lines_covered_[i] + (open > 0 ? 1 : 0);
    }
  }
  /// An import or a reference of a CUDA module on a line that has a finding already is said
  /// by it (the module path rewritten, a keyword inserted at the decorator). lines_covered_[k]
  /// counts the covered lines before line k, so a query costs O(1); empty when no line is.
  bool line_free(std::uint32_t b, std::uint32_t e) const {
    if (lines_covered_.empty()) return true;
    std::uint32_t lb = t_.lines().locate(b).line, le = t_.lines().locate(e).line;
    if (lb > le) std::swap(lb, le);
    const std::size_t last = lines_covered_.size() - 1;
    const std::size_t lo = std::min<std::size_t>(lb, last);
    const std::size_t hi = std::min<std::size_t>(static_cast<std::size_t>(le) + 1, last);
    return lines_covered_[hi] <= lines_covered_[lo];
  }

 private:
  Context& ctx_;
  const syntax::Tree& t_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges_;  ///< [begin, end), merged
  std::vector<std::uint32_t> lines_covered_;
  std::vector<const Node*> entered_;  ///< mark(): the nodes visit() enters, sorted
};

}  // namespace

void run_cuda_leftover(Context& ctx) {
  Walker w(ctx);
  w.snapshot();
  w.run();
  // CUDA modules and APIs that the catalogue keeps as they are (`import torch.backends.cudnn as
  // cudnn`, `cudnn.benchmark = True` for accelerator) are still CUDA-specific: one row each.
  const semantic::Model& m = ctx.m;
  auto cuda_module = [](std::string_view q) {
    // Most names are not under torch.cuda / torch.backends: one test of the shortest prefix.
    if (q.size() < 10 || !q.starts_with("torch.") || (q[6] != 'c' && q[6] != 'b')) return false;
    for (std::string_view p : {"torch.cuda", "torch.backends.cudnn", "torch.backends.cuda"})
      if (q == p || (q.starts_with(p) && q[p.size()] == '.')) return true;
    return false;
  };
  w.snapshot();
  auto free = [&](std::uint32_t b, std::uint32_t e) { return w.line_free(b, e); };
  for (const semantic::Import& im : m.imports()) {
    const std::string& q = im.kind == semantic::ImportKind::From ? im.target : im.module;
    if (!cuda_module(q)) continue;
    const std::uint32_t b = m.tokens()[im.item_begin].begin, e = m.tokens()[im.item_end - 1].end;
    if (!free(b, e)) continue;
    tp700(ctx, report(Operation::Unknown, q,
                      "import of the CUDA module " + q + " kept: check what its uses do on " +
                          (ctx.accelerator() ? std::string("the accelerator") : ctx.target.name),
                      b, e));
  }
  for (const semantic::Reference& r : m.references()) {
    if (!cuda_module(r.qualified)) continue;
    const std::uint32_t b = m.tokens()[r.first].begin, e = m.tokens()[r.last].end;
    if (!free(b, e)) continue;
    tp700(ctx, report(Operation::Unknown, r.qualified,
                      r.qualified + " kept as it is: CUDA-specific; check its effect on " +
                          (ctx.accelerator() ? std::string("the accelerator") : ctx.target.name),
                      b, e));
  }
}

}  // namespace torchport::rules
