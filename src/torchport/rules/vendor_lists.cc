// Rule family TP950: torch APIs judged by the vendor's per-version support list.
//
// What it does:
//   Calls of general torch APIs (not torch.cuda, not catalogued, not already reported by
//   another family) are looked up in the vendor's list for the target and the requested
//   --torch-version (Ascend's supported_op / op_list, Cambricon's torch_api.yaml, in
//   data/catalogue/support/): UNSUPPORTED where the list says so (unsupported_api.csv),
//   UNKNOWN where it gives limits or does not list the API (unknown_api.csv).
// Why:
//   A vendor's adapter implements a subset of torch; its own list is the best static
//   predictor of what will fail before the code runs.
// Example:
//   y = torch.sparse.mm(a, b)
// Becomes (npu):
//   y = torch.sparse.mm(a, b)   (reported: unsupported on npu according to the list)
// Safety:
//   Nothing is rewritten. Targets without a list (xpu, mps, hpu, cpu, accelerator) are not
//   judged: the family needs the target's support lists.
#include <torchport/rules/context.h>
#include <torchport/syntax/tree.h>

#include <algorithm>

namespace torchport::rules {

namespace {

/// TP950 (vendor-api-support): torch APIs the vendor's per-version list marks unsupported, limited
/// or unlisted. Its one producer: every TP950 finding is made here.
Finding tp950(Draft d) { return finding("TP950", std::move(d)); }

}  // namespace

void run_vendor_lists(Context& ctx) {
  const syntax::Tree& tree = ctx.tree;
  const catalogue::Catalogue& cat = ctx.cat;
  const Options& ropts = ctx.opts;
  std::vector<Finding>& findings = ctx.result.findings;
  // The ranges the rules reported, by start, with the running maximum of their ends: a range
  // [b, e) overlaps one of them iff the largest end among those starting before e exceeds b.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> taken;
  for (const Finding& f : findings) taken.emplace_back(f.begin, f.end);
  std::sort(taken.begin(), taken.end());
  std::vector<std::uint32_t> max_end(taken.size());
  for (std::size_t i = 0; i < taken.size(); ++i)
    max_end[i] = std::max(taken[i].second, i ? max_end[i - 1] : 0);
  // The target's list for the torch version, chosen once for the file's questions.
  const catalogue::SupportQuery support = cat.support_query(ropts.target, ropts.torch_version);
  for (const syntax::Node* call : tree.find_all(syntax::NodeKind::Call)) {
    const syntax::Node* fn = call->func();
    if (!fn) continue;
    syntax::ByteRange r = tree.byte_range(*fn);
    const std::string* qn = ctx.qualified_spanning(r);
    if (!qn) continue;
    const std::string& q = *qn;
    if (!q.starts_with("torch.") || q.starts_with("torch.cuda") ||
        q.starts_with("torch.backends.cud") || cat.find(q))
      continue;
    auto before = std::lower_bound(taken.begin(), taken.end(), r.end,
                                   [](const auto& t, std::uint32_t e) { return t.first < e; });
    std::size_t n_before = static_cast<std::size_t>(before - taken.begin());
    bool reported = n_before > 0 && max_end[n_before - 1] > r.begin;
    if (reported) continue;
    auto s = support.find(q);
    if (!s || s->status == catalogue::Status::Supported) continue;
    Draft f;
    f.api = q;
    f.begin = r.begin;
    f.end = tree.byte_range(*call).end;
    std::string tip = s->tip.empty() || s->tip == "-" ? "" : ": " + s->tip;
    if (s->status == catalogue::Status::Unsupported) {
      f.op = Operation::Unsupported;
      f.message = "unsupported on " + ropts.target + " according to " + s->source + tip;
    } else if (s->status == catalogue::Status::Partial) {
      f.op = Operation::Unknown;
      f.message = "supported on " + ropts.target + " with limits" + tip + " [" + s->source + "]";
    } else {
      f.op = Operation::Unknown;
      f.message = "not in the supported list of " + s->source;
    }
    findings.push_back(tp950(std::move(f)));
  }
}

}  // namespace torchport::rules
