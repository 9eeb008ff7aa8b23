// Rule family TP210: float64 on targets that lack it.
//
// What it does:
//   On a target whose data/targets.json "no_dtypes" lists float64 (npu, mps, hpu), reports
//   every float64 the file asks for: the dtype names torch.float64 and torch.double (so also
//   `dtype=torch.float64`, `.to(torch.double)` and torch.set_default_dtype(torch.float64)),
//   the `.double()` method, and the tensor types torch.DoubleTensor / torch.cuda.DoubleTensor
//   (any *DoubleTensor or *DoubleStorage of torch). Nothing is rewritten.
// Why:
//   The device has no float64 kernels: the call fails on the device (Ascend's FAQ: "Unsupport
//   data type: at::ScalarType::Double") or runs elsewhere. Casting to float32 would change the
//   numerics without a word, which torchport never does: the user chooses (float32 on the
//   device, or the computation kept on the CPU in float64).
// Example:
//   x = torch.zeros(3, dtype=torch.float64).cuda()
//   torch.set_default_dtype(torch.float64)
// Becomes (npu):
//   unchanged; UNSUPPORTED rows "torch.float64" and "torch.set_default_dtype(torch.float64)".
// Safety:
//   Runs before cuda_api, which would otherwise map torch.cuda.DoubleTensor to the device
//   module's class of that name (it exists in torch_npu, the device still cannot compute it).
#include <torchport/rules/context.h>

#include <algorithm>

namespace torchport::rules {

namespace {

/// TP210 (float64-on-target): float64 dtypes, .double(), *DoubleTensor and
/// set_default_dtype(float64) on targets that lack float64. Its one producer: every TP210 finding
/// is made here.
void tp210(Context& ctx, Draft d) { ctx.add("TP210", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

bool double_tensor_type(std::string_view q) {
  if (!q.starts_with("torch.")) return false;
  const std::string_view last = q.substr(q.rfind('.') + 1);
  return last == "DoubleTensor" || last == "DoubleStorage";
}

// True when the reference is the first argument of a torch.set_default_dtype(...) call.
bool default_dtype_argument(const semantic::Model& m, const semantic::Reference& ref) {
  auto open = m.enclosing_open(ref.first);
  if (!open || m.kind(*open) != TokenKind::LPar) return false;
  const semantic::Reference* callee = callee_of(m, *open);
  return callee && callee->qualified == "torch.set_default_dtype";
}

}  // namespace

void run_dtypes(Context& ctx) {
  const auto& no = ctx.target.no_dtypes;
  if (std::find(no.begin(), no.end(), "float64") == no.end()) return;
  const semantic::Model& m = ctx.m;
  // Whatever this rule reports is spelled in the file itself: a qualified name is made of the
  // file's own import and attribute names, so torch.float64 needs "float64", and torch.double,
  // .double() and *DoubleTensor / *DoubleStorage need "ouble". Most files have neither (2,025
  // of torch's 2,285), and are done with two scans of the text instead of a walk of every
  // reference and identifier.
  if (!contains(m.text(), "ouble", 2) && !contains(m.text(), "float64", 5)) return;
  const std::string why = ctx.target.name +
                          " has no float64 (data/targets.json no_dtypes): use float32 on the "
                          "device, or keep this computation on the CPU; torchport does not cast "
                          "silently";
  for (const semantic::Reference& ref : m.references()) {
    const std::string& q = ref.qualified;
    const std::uint32_t b = m.tokens()[ref.first].begin;
    const std::uint32_t e = m.tokens()[ref.last].end;
    if (q == "torch.float64" || q == "torch.double") {
      if (default_dtype_argument(m, ref)) {
        tp210(ctx, report(Operation::Unsupported, "torch.set_default_dtype(" + q + ")",
                          "every new floating-point tensor would be float64: " + why, b, e));
      } else {
        tp210(ctx, report(Operation::Unsupported, q, q + ": " + why, b, e));
      }
    } else if (double_tensor_type(q) && !ref.store) {
      ctx.handled.insert(ref.first);  // not mapped to the device module's class by cuda_api
      tp210(ctx, report(Operation::Unsupported, q, q + " holds float64: " + why, b, e));
    }
  }
  // x.double(): a method of any tensor or module (no qualified name to resolve).
  for (const TokenIndex i : m.identifier_tokens()) {
    if (m.token_text(i) != "double") continue;
    auto p = m.prev(i);
    if (!p || m.kind(*p) != TokenKind::Dot) continue;
    auto nx = m.next(i);
    if (!nx || m.kind(*nx) != TokenKind::LPar) continue;
    if (m.is_store(i)) continue;
    if (const semantic::Reference* r = m.reference_at(i); r && !r->qualified.empty()) continue;
    tp210(ctx, report(Operation::Unsupported, ".double()", ".double() casts to float64: " + why,
                      m.tokens()[i].begin, m.tokens()[*nx].end));
  }
}

}  // namespace torchport::rules
