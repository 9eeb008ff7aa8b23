// Rule family TP303: --specify-device: device indices from the vendor's device-index variable.
//
// What it does:
//   With --specify-device (Ascend's -s), on a target whose vendor documents an environment
//   variable for the device index of a process (data/targets.json "device_id_env": DEVICE_ID
//   for npu), every explicit device index becomes that variable:
//   - the argument of torch.cuda.set_device(x) and of the context manager
//     torch.cuda.device(x) (a device string there is TP300's);
//   - the index of .cuda(i) / .cuda(device=i);
//   - the index of torch.device("cuda", i) / torch.device("cuda", index=i).
//   A file that uses the variable gets a prologue after its imports (TP900) that reads it
//   and makes it the current device: `DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))`
//   and `torch_npu.npu.set_device(DEVICE_ID)`, so `.cuda()` without an index and device
//   strings without one land there too; `.cuda()` alone therefore also asks for the prologue.
//   It also notes the first use of torch.distributed, for the driver's warning.
// Why:
//   A launcher that starts one process per device tells each one its device through the
//   variable; indices written into the script would put every process on the same device.
// Example:
//   torch.cuda.set_device(args.gpu)
//   x = x.cuda(args.gpu)
//   dev = torch.device("cuda", 1)
// Becomes (npu):
//   DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))
//   torch_npu.npu.set_device(DEVICE_ID)
//   torch_npu.npu.set_device(DEVICE_ID)
//   x = x.npu(DEVICE_ID)
//   dev = torch.device("npu", DEVICE_ID)
// Safety:
//   It can break a distributed script whose processes pick their device from their rank: the
//   driver warns when the project uses torch.distributed. An index that already names the
//   variable is left alone (the output migrates to itself). Rewrites other rules made inside a
//   replaced index are dropped with it. Without a documented variable the driver refuses -s.
#include <torchport/rules/context.h>

#include <algorithm>

namespace torchport::rules {

namespace {

/// TP303 (specify-device): --specify-device: device indices from the vendor's device-index
/// variable. Its one producer: every TP303 finding is made here.
void tp303(Context& ctx, Draft d) { ctx.add("TP303", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

bool names(const semantic::Model& m, TokenIndex first, TokenIndex last, std::string_view name) {
  for (TokenIndex t = first; t <= last; ++t)
    if (m.kind(t) == TokenKind::Name && m.token_text(t) == name) return true;
  return false;
}

/// The value tokens of argument `a` (after `kw=` for a keyword argument).
TokenIndex value_first(const semantic::Model& m, const Arg& a) {
  return a.keyword.empty() ? a.first : *m.next(*m.next(a.first));
}

class Pinner {
 public:
  explicit Pinner(Context& ctx) : ctx_(ctx), m_(ctx.m), var_(ctx.target.device_id_env) {}

  /// Replaces the value of `a` with the variable, unless it names it already.
  void pin(const Arg& a, const std::string& api, const std::string& what) {
    const TokenIndex first = value_first(m_, a);
    if (names(m_, first, a.last, var_)) return;
    const std::uint32_t b = m_.tokens()[first].begin, e = m_.tokens()[a.last].end;
    if (std::any_of(done_.begin(), done_.end(),
                    [&](const auto& r) { return r.first <= b && e <= r.second; }))
      return;  // inside an index replaced already (set_device(torch.device("cuda", 1)))
    const std::string old(m_.text().substr(b, e - b));
    // Rewrites inside the replaced index go with it (Finding::drops).
    tp303(ctx_,
          ctx_.rewrite(api, "change " + what + " " + old + " to " + var_ + " (--specify-device)", b,
                       e, var_)
              .dropping(b, e));
    ctx_.used_device_id = true;
    done_.emplace_back(b, e);
  }

  void set_device(TokenIndex lpar, const std::string& api) {
    auto args = call_args(m_, lpar);
    for (const Arg& a : args) {
      if (m_.kind(a.first) == TokenKind::Star || m_.kind(a.first) == TokenKind::DoubleStar) return;
      if (!a.keyword.empty() && a.keyword != "device") continue;
      const TokenIndex first = value_first(m_, a);
      if (first == a.last && m_.kind(first) == TokenKind::String) {
        // A device string: TP300 gives it the variable (or it names no CUDA device).
        auto sv = semantic::string_value(m_.text(), m_.tokens()[first]);
        if (sv && semantic::is_cuda_device_string(sv->value)) return;
      }
      pin(a, api, "the device of " + api);
      return;
    }
  }

  void device(TokenIndex lpar) {
    auto args = call_args(m_, lpar);
    if (args.size() < 2 || !args[0].keyword.empty() || args[0].first != args[0].last) return;
    if (m_.kind(args[0].first) != TokenKind::String) return;
    auto sv = semantic::string_value(m_.text(), m_.tokens()[args[0].first]);
    if (!sv || sv->value != "cuda") return;
    const Arg& idx = args[1];
    if (!idx.keyword.empty() && idx.keyword != "index") return;
    if (m_.kind(idx.first) == TokenKind::Star || m_.kind(idx.first) == TokenKind::DoubleStar)
      return;
    pin(idx, "torch.device", "the index of torch.device(\"cuda\", i)");
  }

  void cuda_method(TokenIndex lpar) {
    auto args = call_args(m_, lpar);
    for (const Arg& a : args) {
      if (m_.kind(a.first) == TokenKind::Star || m_.kind(a.first) == TokenKind::DoubleStar) return;
      if (a.keyword.empty() || a.keyword == "device") {
        pin(a, ".cuda", "the index of .cuda(i)");
        return;
      }
    }
    // No index: the current device, which the prologue sets.
    ctx_.used_device_id = true;
  }

 private:
  Context& ctx_;
  const semantic::Model& m_;
  const std::string& var_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> done_;
};

}  // namespace

void run_specify_device(Context& ctx) {
  if (!ctx.opts.specify_device || ctx.target.device_id_env.empty()) return;
  const semantic::Model& m = ctx.m;
  auto distributed = [&](std::string_view q, TokenIndex t) {
    if (q != "torch.distributed" && !q.starts_with("torch.distributed.")) return;
    const std::uint32_t at = m.tokens()[t].begin;
    if (!ctx.result.distributed_at || at < *ctx.result.distributed_at)
      ctx.result.distributed_at = at;
  };
  for (const semantic::Import& im : m.imports()) distributed(im.target, im.module_begin);
  for (const semantic::Reference& r : m.references()) distributed(r.qualified, r.first);
  Pinner p(ctx);
  // Outer calls first: an index replaced whole takes the calls inside it along.
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  for (TokenIndex i = 0; i < n; ++i) {
    if (m.kind(i) != TokenKind::LPar || !m.match(i)) continue;
    if (const semantic::Reference* c = callee_of(m, i)) {
      if (c->qualified == "torch.cuda.set_device" || c->qualified == "torch.cuda.device") {
        p.set_device(i, c->qualified);
        continue;
      }
      if (c->qualified == "torch.device") {
        p.device(i);
        continue;
      }
      if (!c->qualified.empty()) continue;
    }
    // `.cuda(` on a tensor or module: as TP301 recognises it.
    auto name = m.prev(i);
    if (!name || m.kind(*name) != TokenKind::Name || m.token_text(*name) != "cuda") continue;
    auto dot = m.prev(*name);
    if (!dot || m.kind(*dot) != TokenKind::Dot || m.is_store(*name)) continue;
    if (const semantic::Reference* r = m.reference_at(*name); r && !r->qualified.empty()) continue;
    p.cuda_method(i);
  }
}

}  // namespace torchport::rules
