// Rule family TP903: calls of the project's own custom CUDA operators.
//
// What it does:
//   The operators TP901 finds in the project's C++/CUDA sources (`m.def("fused_adam", ...)`)
//   are project-level information; every Python call whose called name ends in one of them
//   (`ext.fused_adam(...)`, `fused_adam(...)`, matched by the last name as Ascend's tool does)
//   is reported UNSUPPORTED with the file that defines the operator.
// Why:
//   A custom CUDA kernel has no implementation on the target until it is ported: the call
//   fails at run time however well the rest of the file is migrated.
// Example:
//   import fused_ops
//   y = fused_ops.fused_adam(p, g)
// Becomes (npu):
//   y = fused_ops.fused_adam(p, g)   (reported: defined in csrc/ops.cu, port it)
// Safety:
//   Nothing is rewritten. The family runs only where the project is known (migrate and
//   analyze of a directory); a single file has no project information and is not judged.
#include <torchport/rules/context.h>
#include <torchport/syntax/tree.h>

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <string_view>

namespace torchport::rules {

namespace {

/// TP903 (custom-op-call): calls of the project's own custom CUDA operators. Its one producer:
/// every TP903 finding is made here.
void tp903(Context& ctx, Draft d) { ctx.add("TP903", std::move(d)); }

}  // namespace

void run_custom_op_calls(Context& ctx) {
  const CustomOps& ops = *ctx.opts.custom_ops;
  if (ops.empty()) return;
  const syntax::Tree& tree = ctx.tree;
  // The operators' name lengths and first bytes: a called name with neither is no operator,
  // and most are answered without the map's string comparisons.
  std::uint64_t lengths = 0;
  std::bitset<256> firsts;
  const auto length_bit = [](std::size_t n) {
    return std::uint64_t{1} << std::min<std::size_t>(n, 63);
  };
  for (const auto& [name, where] : ops) {
    lengths |= length_bit(name.size());
    if (!name.empty()) firsts.set(static_cast<unsigned char>(name.front()));
  }
  for (const syntax::Node* call : tree.find_all(syntax::NodeKind::Call)) {
    const syntax::Node* fn = call->func();
    if (!fn || (fn->kind() != syntax::NodeKind::Name && fn->kind() != syntax::NodeKind::Attribute))
      continue;
    const std::string_view name = tree.name(*fn);
    if ((lengths & length_bit(name.size())) == 0 ||
        (!name.empty() && !firsts.test(static_cast<unsigned char>(name.front()))))
      continue;
    auto it = ops.find(name);
    if (it == ops.end()) continue;
    const syntax::ByteRange r = tree.byte_range(*call);
    tp903(ctx, report(Operation::Unsupported, std::string(tree.text(*fn)),
                      "User-defined CUDA Operator (defined in " + it->second +
                          "): port it to the target or replace it",
                      r.begin, r.end));
  }
}

}  // namespace torchport::rules
