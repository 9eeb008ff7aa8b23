// Rule family TP600: ProfilerActivity.CUDA on cpu and accelerator.
//
// What it does:
//   torch.profiler.ProfilerActivity.CUDA (however it is imported) as an element of a list, tuple
//   or set display - the `activities=` of torch.profiler.profile - is rewritten for the two
//   targets that have no single device activity:
//   - cpu: deleted when the display also lists ProfilerActivity.CPU, else replaced by it;
//   - accelerator: `*(torch.profiler.supported_activities() - {ProfilerActivity.CPU})` when the
//     display lists CPU, else `*torch.profiler.supported_activities()`: the build's device
//     activities (CUDA, XPU, ...), none besides CPU on a CPU-only machine.
// Why:
//   torch.profiler.profile raises on an activity listed twice ("specified more than once") and on
//   an empty list ("No valid profiler activities found"), so neither a plain substitution nor a
//   deletion is right in every display.
// Example:
//   with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
// Becomes (cpu):
//   with profile(activities=[ProfilerActivity.CPU]):
//   (accelerator: [ProfilerActivity.CPU, *(torch.profiler.supported_activities() -
//   {ProfilerActivity.CPU})])
// Safety:
//   Anywhere else (assigned to a name, passed alone) the use is left in place and reported on
//   these two targets. The other targets map it through the catalogue (TP100).
#include <torchport/rules/context.h>

namespace torchport::rules {

namespace {

/// TP600 (profiler-activity): ProfilerActivity.CUDA on cpu and accelerator. Its one producer: every
/// TP600 finding is made here.
void tp600(Context& ctx, Draft d) { ctx.add("TP600", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

constexpr std::string_view kCuda = "torch.profiler.ProfilerActivity.CUDA";
constexpr std::string_view kCpu = "torch.profiler.ProfilerActivity.CPU";

// The top-level elements of the display opened by `open`: [first, last] token ranges.
std::vector<std::pair<TokenIndex, TokenIndex>> elements(const semantic::Model& m, TokenIndex open) {
  std::vector<std::pair<TokenIndex, TokenIndex>> out;
  auto close = m.match(open);
  if (!close) return out;
  std::optional<TokenIndex> first;
  TokenIndex last = open;
  for (auto i = m.next(open); i && *i < *close; i = m.next(*i)) {
    const bool top = m.enclosing_open(*i) == open;
    if (top && m.kind(*i) == TokenKind::Comma) {
      if (first) out.emplace_back(*first, last);
      first.reset();
      continue;
    }
    if (!first) first = *i;
    last = *i;
  }
  if (first) out.emplace_back(*first, last);
  return out;
}

// True when `n` is an element of a list, tuple or set display written with its brackets, and
// `open` is that display's opening bracket: read from the tree, so that an f-string's replacement
// field, a parenthesized expression and a call's or subscript's brackets are not displays.
bool display_element(const syntax::Node* n, std::optional<TokenIndex> open) {
  using syntax::NodeKind;
  if (!n || !open || n->role() != syntax::Role::Elt || n->has(syntax::kParenthesized)) return false;
  const syntax::Node* p = n->parent();
  return p &&
         (p->kind() == NodeKind::List || p->kind() == NodeKind::Tuple ||
          p->kind() == NodeKind::Set) &&
         p->first_token() == *open;
}

}  // namespace

void run_profiler_activity(Context& ctx) {
  if (!ctx.target.host && !ctx.accelerator()) return;
  const std::string& t = ctx.target.name;
  const semantic::Model& m = ctx.m;
  for (const semantic::Reference& ref : m.references()) {
    if (ref.qualified != kCuda || ctx.handled.contains(ref.first)) continue;
    ctx.handled.insert(ref.first);
    const std::uint32_t begin = m.tokens()[ref.first].begin;
    const std::uint32_t end = m.tokens()[ref.last].end;
    auto open = m.enclosing_open(ref.first);
    const syntax::Node* node = ctx.expression_at(ref.first, ref.last);
    std::vector<std::pair<TokenIndex, TokenIndex>> elems;
    if (display_element(node, open)) elems = elements(m, *open);
    std::size_t at = elems.size();
    for (std::size_t i = 0; i < elems.size(); ++i) {
      if (elems[i].first == ref.first && elems[i].second == ref.last) at = i;
    }
    if (at == elems.size()) {
      tp600(ctx, report(Operation::Unsupported, std::string(kCuda),
                        "ProfilerActivity.CUDA outside a list of activities: " + t +
                            " has no single device activity; list the activities by hand",
                        begin, end));
      continue;
    }
    // The display's other elements, from the tree (`(ProfilerActivity.CPU)` in parentheses too).
    bool lists_cpu = false;
    for (const syntax::Node* e : node->parent()->children(syntax::Role::Elt)) {
      const semantic::Reference* r = m.reference_at(e->first_token());
      if (e != node && r && r->first == e->first_token() && r->last == e->last_token() &&
          r->qualified == kCpu)
        lists_cpu = true;
    }
    // ProfilerActivity.CPU spelled as the user spells ProfilerActivity.CUDA.
    const std::string cpu =
        std::string(m.text().substr(begin, m.tokens()[ref.last].begin - begin)) + "CPU";
    if (ctx.accelerator()) {
      const std::string all = ctx.render("torch.profiler.supported_activities()");
      const std::string text = lists_cpu ? "*(" + all + " - {" + cpu + "})" : "*" + all;
      tp600(ctx,
            ctx.rewrite(
                std::string(kCuda),
                "change ProfilerActivity.CUDA to " + text +
                    " (the build's device activities; none besides CPU without an accelerator)",
                begin, end, text));
      ctx.require_torch(kAcceleratorMinTorch);
      continue;
    }
    if (!lists_cpu) {
      tp600(ctx, ctx.rewrite(
                     std::string(kCuda),
                     "change ProfilerActivity.CUDA to ProfilerActivity.CPU (the CPU is the device)",
                     begin, end, cpu));
      continue;
    }
    // Delete the element with one of its commas.
    std::uint32_t b = begin, e = end;
    if (at + 1 < elems.size()) {
      e = m.tokens()[elems[at + 1].first].begin;
    } else {
      b = m.tokens()[elems[at - 1].second].end;
    }
    Draft f;
    f.op = Operation::Delete;
    f.api = std::string(kCuda);
    f.message = "delete ProfilerActivity.CUDA (ProfilerActivity.CPU, listed too, covers the CPU)";
    f.begin = begin;
    f.end = end;
    fix::Fix fx;
    fx.edits.push_back(fix::Edit{b, e, ""});
    f.fix = std::move(fx);
    f.changes_file = true;
    tp600(ctx, std::move(f));
  }
}

}  // namespace torchport::rules
