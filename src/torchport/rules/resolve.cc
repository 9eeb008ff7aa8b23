#include <torchport/rules/context.h>
#include <torchport/rules/resolve.h>

#include <algorithm>
#include <string>

namespace torchport::rules {

namespace {

using Range = std::pair<std::uint32_t, std::uint32_t>;

/// Finding::drops: a finding goes when its range lies inside the dropped range and so do its
/// fix's edits; an empty range (an insertion) only strictly inside: at an edge it is about the
/// code around it.
bool dropped_by(const Finding& f, Range r) {
  auto inside = [&](std::uint32_t b, std::uint32_t e) {
    return b == e ? r.first < b && b < r.second : r.first <= b && e <= r.second;
  };
  return inside(f.begin, f.end) &&
         (!f.fix || std::all_of(f.fix->edits.begin(), f.fix->edits.end(),
                                [&](const fix::Edit& x) { return inside(x.begin, x.end); }));
}

/// Finding::takes: the findings `before` (not `gone`) whose range lies in [t.begin, t.end] go;
/// returns the taken code with their edits inside it applied.
std::string take(std::string_view text, const std::vector<Finding>& findings, std::size_t before,
                 std::vector<bool>& gone, const Take& t) {
  std::vector<fix::Edit> edits;
  for (std::size_t i = 0; i < before; ++i) {
    const Finding& f = findings[i];
    if (gone[i] || f.begin < t.begin || f.end > t.end) continue;
    gone[i] = true;
    if (!f.fix) continue;
    for (const fix::Edit& ed : f.fix->edits)
      if (ed.begin >= t.begin && ed.end <= t.end) edits.push_back(ed);
  }
  std::sort(edits.begin(), edits.end(),
            [](const fix::Edit& x, const fix::Edit& y) { return x.begin > y.begin; });
  std::string out(text.substr(t.begin, t.end - t.begin));
  for (const fix::Edit& ed : edits)
    out.replace(ed.begin - t.begin, ed.end - ed.begin, ed.replacement);
  return out;
}

/// Finding::opens_arguments: the insertions of the findings `before` in [r.first, r.second]
/// that start with a comma lose it (and the spaces after it).
void open_arguments(std::vector<Finding>& findings, std::size_t before,
                    const std::vector<bool>& gone, Range r) {
  for (std::size_t i = 0; i < before; ++i) {
    if (gone[i] || !findings[i].fix) continue;
    for (fix::Edit& x : findings[i].fix->edits) {
      if (x.begin != x.end || x.begin < r.first || x.begin > r.second) continue;
      if (!x.replacement.starts_with(",")) continue;
      x.replacement.erase(0, x.replacement.find_first_not_of(", "));
    }
  }
}

}  // namespace

void resolve_family(std::string_view text, std::vector<Finding>& findings, std::size_t first_new) {
  // Most families declare nothing on most files: nothing to resolve, nothing to allocate.
  if (std::none_of(findings.begin() + static_cast<std::ptrdiff_t>(first_new), findings.end(),
                   [](const Finding& f) {
                     return !f.takes.empty() || f.opens_arguments.has_value() ||
                            f.drops.has_value();
                   }))
    return;
  std::vector<bool> gone(findings.size(), false);
  // Takes and opened argument lists first, in the order the findings were made: each acts on
  // what its rule saw when it made the finding. Then the drops, on what is left.
  for (std::size_t j = first_new; j < findings.size(); ++j) {
    Finding& f = findings[j];
    for (const Take& t : f.takes) {
      std::string code = take(text, findings, j, gone, t);
      if (t.into && f.fix && t.into->first < f.fix->edits.size()) {
        std::string& r = f.fix->edits[t.into->first].replacement;
        r.insert(std::min(t.into->second, r.size()), code);
      }
    }
    if (f.opens_arguments) open_arguments(findings, j, gone, *f.opens_arguments);
  }
  for (std::size_t j = first_new; j < findings.size(); ++j) {
    if (!findings[j].drops || gone[j]) continue;
    for (std::size_t i = 0; i < j; ++i)
      if (!gone[i] && dropped_by(findings[i], *findings[j].drops)) gone[i] = true;
  }
  if (std::find(gone.begin(), gone.end(), true) == gone.end()) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (gone[i]) continue;
    if (kept != i) findings[kept] = std::move(findings[i]);
    ++kept;
  }
  findings.erase(findings.begin() + static_cast<std::ptrdiff_t>(kept), findings.end());
}

void settle_incidental(Context& ctx) {
  std::vector<Finding>& found = ctx.result.findings;
  auto about_torch_version = [](const Finding& f) {
    return subject_of(f) == Subject::TorchVersion;
  };
  if (std::any_of(found.begin(), found.end(), incidental) &&
      std::all_of(found.begin(), found.end(),
                  [&](const Finding& f) { return incidental(f) || about_torch_version(f); })) {
    std::erase_if(found, incidental);
    ctx.result.min_torch_version.clear();
    ctx.changed = std::any_of(found.begin(), found.end(), [](const Finding& f) {
      return f.fix && f.fix->applicability != fix::Applicability::DisplayOnly;
    });
    ctx.used_device_var = false;
    ctx.device_var_uses.clear();
  }
}

}  // namespace torchport::rules
