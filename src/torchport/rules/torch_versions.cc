// Rule family TP960: behaviour of torch that changed between the source's torch and the
// torch the output runs on.
//
// What it does:
//   For each row of data/catalogue/torch_versions.json ("version_changes") whose `since` is
//   not newer than the torch the output runs on (--torch-version, else the newest of the
//   target's min_torch and the torch the other rewrites of the file need; none: not judged),
//   every call of the row's API that does not pass the
//   row's keyword is reported with the row's summary. Where the row's fix_when allows it, the
//   old default is written explicitly (`keyword=old_value`, an unsafe fix labelled with the
//   row's fix_note): "always", or "saves_objects" when
//   the same file also calls torch.save on something that is not a state_dict (a whole module,
//   a variable), so it reads back the objects it writes. A row whose old value is the default
//   of every torch that takes the keyword (keyword_since) is applied also where the output may
//   run on `since` without the minimum saying so (no torch known, or an older minimum).
// Why:
//   Vendor stacks pin newer torch versions than the projects were written for. The rows:
//   torch.load defaults to weights_only=True from torch 2.6, so a project that saves whole
//   modules with torch.save(model, f) can no longer load them; torch.stft requires
//   return_complex for a real input from torch 2.0 and raises without it (the audio front ends
//   of 2020-era vocoders, hifi-gan's mel_spectrogram), so it gets return_complex=False, the old
//   default. The fix's message says why (the row's fix_reason), a report when to pass the old
//   value (report_when).
// Example:
//   torch.save(model, "m.pt"); model = torch.load("m.pt")        # --torch-version 2.6
// Becomes:
//   torch.save(model, "m.pt"); model = torch.load("m.pt", weights_only=False)
// Safety:
//   The source is assumed to predate `since` (its torch version is not known); a call that
//   already passes the keyword, or passes **kwargs / *args, is left alone (the latter
//   reported). The explicit old value keeps the source's behaviour and is labelled in the
//   reports with the row's fix_note; a call the rule cannot fix is only reported.
#include <torchport/rules/context.h>

namespace torchport::rules {

namespace {

/// TP960 (torch-version-change): behaviour that changed between the source's torch and --torch-
/// version (data/torch_versions.json). Its one producer: every TP960 finding is made here.
void tp960(Context& ctx, Draft d) { ctx.add("TP960", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

// The file calls torch.save(obj, ...) with an obj that is not `x.state_dict()` or a dict display.
bool saves_objects(const semantic::Model& m) {
  for (const semantic::Reference& ref : m.references()) {
    if (ref.qualified != "torch.save") continue;
    auto lp = m.next(ref.last);
    if (!lp || m.kind(*lp) != TokenKind::LPar || !m.match(*lp)) continue;
    auto args = call_args(m, *lp);
    if (args.empty() || !args[0].keyword.empty()) continue;
    const Arg& a = args[0];
    if (m.kind(a.first) == TokenKind::LBrace) continue;  // {"model": ..., ...}
    if (m.kind(a.last) == TokenKind::RPar) {
      auto open = m.match(a.last);  // the call that ends the argument
      if (open) {
        auto p = m.prev(*open);
        if (p && (m.token_text(*p) == "state_dict" || m.token_text(*p) == "dict")) continue;
      }
    }
    return true;
  }
  return false;
}

}  // namespace

void run_torch_versions(Context& ctx) {
  // The torch the output runs on: --torch-version, else the newest of the target's minimum and
  // the floor the rules before this one already require of the output (torch.accelerator's
  // 2.6, torch.OutOfMemoryError's 2.5).
  std::string runs_on = ctx.opts.torch_version;
  if (runs_on.empty()) {
    runs_on = ctx.target.min_torch;
    const std::string& floor = ctx.result.min_torch_version;
    if (!floor.empty() && (runs_on.empty() || compare_versions(floor, runs_on) > 0))
      runs_on = floor;
  }
  const semantic::Model& m = ctx.m;
  int saves = -1;  // computed on first need
  for (const catalogue::VersionChange& vc : ctx.cat.version_changes()) {
    // Where the output may run on `since` or newer without running on it for sure (no torch
    // known, or an older minimum), a row whose old value is the default of every torch that
    // takes the keyword (return_complex=False) is applied all the same: harmless before
    // `since`, needed from it.
    const bool judged = !runs_on.empty() && compare_versions(runs_on, vc.since) >= 0;
    const bool harmless = vc.fix_when == "always" && !vc.keyword_since.empty() &&
                          (runs_on.empty() || compare_versions(runs_on, vc.keyword_since) >= 0);
    if (!judged && !harmless) continue;
    for (const semantic::Reference& ref : m.references()) {
      if (ref.qualified != vc.api || ref.store) continue;
      auto lp = m.next(ref.last);
      if (!lp || m.kind(*lp) != TokenKind::LPar) continue;
      auto rp = m.match(*lp);
      if (!rp) continue;
      auto args = call_args(m, *lp);
      bool given = false, unknown = false;
      for (const Arg& a : args) {
        if (a.keyword == vc.keyword) given = true;
        const TokenKind k = m.kind(a.first);
        if (k == TokenKind::Star || k == TokenKind::DoubleStar) unknown = true;
      }
      if (given) continue;
      const std::uint32_t b = m.tokens()[ref.first].begin;
      // The callee only: a finding over the whole call would hide what other rules report
      // inside its arguments (cuda_leftover skips ranges already reported).
      const std::uint32_t e = m.tokens()[ref.last].end;
      const std::string head =
          judged
              ? "torch " + runs_on + ": " + vc.summary
              : "torch >= " + vc.since + ", which the output may run on (the old value is the " +
                    "default of torch " + vc.keyword_since + " to " + vc.since + "): " + vc.summary;
      if (unknown) {
        tp960(ctx,
              report(Operation::Unknown, vc.api,
                     head + "; " + vc.keyword + "= may come from *args/**kwargs: check it", b, e));
        continue;
      }
      bool fix = vc.fix_when == "always";
      if (vc.fix_when == "saves_objects") {
        if (saves < 0) saves = saves_objects(m) ? 1 : 0;
        fix = saves == 1;
      }
      if (!fix) {
        tp960(ctx,
              report(Operation::Unknown, vc.api,
                     head + "; pass " + vc.keyword + "=" + vc.old_value + " if " + vc.report_when +
                         " (" + vc.source.substr(0, vc.source.find(' ')) + ")",
                     b, e));
        continue;
      }
      const std::uint32_t at =
          args.empty() ? m.tokens()[*rp].begin : m.tokens()[args.back().last].end;
      tp960(ctx,
            ctx.rewrite(
                   vc.api,
                   "pass " + vc.keyword + "=" + vc.old_value + " (" + vc.fix_reason + "): " + head,
                   at, at, std::string(args.empty() ? "" : ", ") + vc.keyword + "=" + vc.old_value)
                // It keeps the source's behaviour, which is also what makes it unsafe
                // (weights_only=False unpickles arbitrary objects): --no-unsafe-fixes leaves it
                // out.
                .labelled("torch " + vc.since + ": " + vc.keyword + "=" + vc.old_value +
                              " keeps torch < " + vc.since + "'s behaviour" +
                              (vc.fix_note.empty() ? "" : "; " + vc.fix_note),
                          fix::Applicability::Unsafe));
    }
  }
}

}  // namespace torchport::rules
