#include <torchport/fix/apply.h>

#include <algorithm>
#include <numeric>

namespace torchport::fix {

namespace {

bool overlaps(const Edit& a, const Edit& b) {
  if (a.begin == a.end && b.begin == b.end) return false;  // two insertions never conflict
  if (a.begin == a.end) return b.begin < a.begin && a.begin < b.end;
  if (b.begin == b.end) return a.begin < b.begin && b.begin < a.end;
  return a.begin < b.end && b.begin < a.end;
}

bool same(const Edit& a, const Edit& b) {
  return a.begin == b.begin && a.end == b.end && a.replacement == b.replacement;
}

std::uint32_t first_offset(const Fix& f) {
  std::uint32_t m = UINT32_MAX;
  for (const Edit& e : f.edits) m = std::min(m, e.begin);
  return m;
}

}  // namespace

std::size_t ApplyResult::applied() const {
  return static_cast<std::size_t>(
      std::count(outcomes.begin(), outcomes.end(), FixOutcome::Applied));
}

ApplyResult apply_fixes(std::string_view text, const std::vector<Fix>& fixes,
                        Applicability allowed) {
  ApplyResult out;
  out.outcomes.assign(fixes.size(), FixOutcome::Applied);
  std::vector<std::size_t> order(fixes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return first_offset(fixes[a]) < first_offset(fixes[b]);
  });

  std::vector<AppliedEdit> accepted;
  // The accepted edits by start offset, and the longest accepted range: an edit [b, e) can only
  // meet accepted edits that start in [b - longest, e], so each check looks at a few neighbours
  // instead of every accepted edit (which made a file with 100,000 fixes quadratic).
  // (begin, index in accepted), sorted by begin, equal begins in acceptance order. The fixes
  // come in order of their first edit, so an accepted edit almost always goes at the end: a
  // sorted vector, not a tree (a file with a fix on every line has hundreds of thousands).
  std::vector<std::pair<std::uint32_t, std::size_t>> by_begin;
  by_begin.reserve(fixes.size());
  std::uint32_t longest = 0;
  auto any_near = [&](const Edit& e, auto&& pred) {
    std::uint32_t from = e.begin > longest ? e.begin - longest : 0;
    auto it = std::lower_bound(by_begin.begin(), by_begin.end(), from,
                               [](const auto& p, std::uint32_t v) { return p.first < v; });
    for (; it != by_begin.end() && it->first <= e.end; ++it)
      if (pred(accepted[it->second])) return true;
    return false;
  };
  for (std::size_t i : order) {
    const Fix& f = fixes[i];
    if (static_cast<int>(f.applicability) > static_cast<int>(allowed)) {
      out.outcomes[i] = FixOutcome::NotApplicable;
      continue;
    }
    bool invalid = f.edits.empty();
    for (const Edit& e : f.edits)
      if (e.begin > e.end || e.end > text.size()) invalid = true;
    if (invalid) {
      out.outcomes[i] = FixOutcome::Invalid;
      continue;
    }
    // Edits of one fix must not overlap each other either.
    bool conflict = false;
    for (std::size_t a = 0; a < f.edits.size() && !conflict; ++a)
      for (std::size_t b = a + 1; b < f.edits.size() && !conflict; ++b)
        conflict = overlaps(f.edits[a], f.edits[b]);
    if (conflict) {
      out.outcomes[i] = FixOutcome::Invalid;
      continue;
    }
    bool all_duplicate = true;
    for (const Edit& e : f.edits) {
      bool dup = any_near(e, [&](const AppliedEdit& a) { return same(a.edit, e); });
      all_duplicate = all_duplicate && dup;
      if (!dup && any_near(e, [&](const AppliedEdit& a) { return overlaps(a.edit, e); }))
        conflict = true;
    }
    if (all_duplicate) {
      out.outcomes[i] = FixOutcome::Duplicate;
      continue;
    }
    if (conflict) {
      out.outcomes[i] = FixOutcome::Overlap;
      continue;
    }
    for (const Edit& e : f.edits) {
      bool dup = any_near(e, [&](const AppliedEdit& a) { return same(a.edit, e); });
      if (dup) continue;
      auto at = std::upper_bound(by_begin.begin(), by_begin.end(), e.begin,
                                 [](std::uint32_t v, const auto& p) { return v < p.first; });
      by_begin.insert(at, {e.begin, accepted.size()});
      longest = std::max(longest, e.end - e.begin);
      accepted.push_back({e, i});
    }
  }

  // Sort by position; insertions at one offset come before a replacement starting there, in
  // their declared order (Edit::order), then in the order in which they were accepted.
  std::stable_sort(accepted.begin(), accepted.end(),
                   [](const AppliedEdit& a, const AppliedEdit& b) {
                     if (a.edit.begin != b.edit.begin) return a.edit.begin < b.edit.begin;
                     bool ai = a.edit.begin == a.edit.end, bi = b.edit.begin == b.edit.end;
                     if (ai != bi) return ai;
                     return ai && a.edit.order < b.edit.order;
                   });

  std::size_t size = text.size();
  for (const AppliedEdit& a : accepted) size += a.edit.replacement.size();
  out.text.reserve(size);
  std::uint32_t pos = 0;
  for (const AppliedEdit& a : accepted) {
    out.text.append(text.substr(pos, a.edit.begin - pos));
    out.text.append(a.edit.replacement);
    pos = a.edit.end;
  }
  out.text.append(text.substr(pos));
  out.edits = std::move(accepted);
  return out;
}

/// A byte offset of the first pass's output mapped back to the original text: an offset inside
/// a replacement maps to the replaced range's begin (or, with `high`, its end).
std::uint32_t to_original(std::uint32_t o, const std::vector<fix::AppliedEdit>& edits, bool high) {
  std::int64_t delta = 0;
  for (const fix::AppliedEdit& a : edits) {
    const std::int64_t nb = a.edit.begin + delta;
    const std::int64_t ne = nb + static_cast<std::int64_t>(a.edit.replacement.size());
    if (o < nb) break;
    if (o < ne || (o == ne && o == nb && !high)) return high ? a.edit.end : a.edit.begin;
    delta += static_cast<std::int64_t>(a.edit.replacement.size()) -
             (static_cast<std::int64_t>(a.edit.end) - a.edit.begin);
  }
  return static_cast<std::uint32_t>(o - delta);
}

/// Where an original offset (not inside an edit) lands in the edited text.
std::uint32_t to_edited(std::uint32_t o, const std::vector<fix::AppliedEdit>& edits) {
  std::int64_t delta = 0;
  for (const fix::AppliedEdit& a : edits) {
    if (a.edit.begin >= o) break;
    delta += static_cast<std::int64_t>(a.edit.replacement.size()) -
             (static_cast<std::int64_t>(a.edit.end) - a.edit.begin);
  }
  return static_cast<std::uint32_t>(o + delta);
}

/// The edits of two passes as one list on the original text (for the diff): the regions either
/// pass touched, each replaced by what the final text has there.
std::vector<fix::AppliedEdit> compose(const std::vector<fix::AppliedEdit>& first,
                                      const std::vector<fix::AppliedEdit>& second,
                                      std::string_view final_text) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> regions;
  for (const fix::AppliedEdit& a : first) regions.emplace_back(a.edit.begin, a.edit.end);
  for (const fix::AppliedEdit& a : second)
    regions.emplace_back(to_original(a.edit.begin, first), to_original(a.edit.end, first, true));
  std::sort(regions.begin(), regions.end());
  std::vector<std::pair<std::uint32_t, std::uint32_t>> merged;
  for (auto r : regions) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  std::vector<fix::AppliedEdit> out;
  for (auto [b, e] : merged) {
    std::uint32_t fb = to_edited(to_edited(b, first), second);
    std::uint32_t fe = to_edited(to_edited(e, first), second);
    out.push_back({{b, e, std::string(final_text.substr(fb, fe - fb))}, 0});
  }
  return out;
}

}  // namespace torchport::fix
