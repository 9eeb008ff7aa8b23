// Rule family TP800: arguments rewritten by the ArgsModifyRule entries of a --rules file.
//
// What it does:
//   Applies Ascend's legacy custom rule {"func_name", "arg_idx" | "arg_keyword", "arg_new",
//   "white_list"} (catalogue::ArgRule): in every call of func_name, the positional argument
//   arg_idx (counting positional arguments only) or the keyword argument arg_keyword (its value)
//   is replaced by arg_new, inserted verbatim, or deleted with its comma when arg_new is "".
//   Every `replace_device_int` in arg_new stands for the old argument's text (parenthesized
//   unless it is a name, literal, call, attribute or subscript). A dotted func_name matches
//   calls whose callee resolves to it through imports and aliases (`import torch as t;
//   t.zeros(...)` is torch.zeros); a dotless one matches calls whose called name, or the last
//   component of its qualified name, is func_name, methods included (`to` matches `x.to(...)`).
//   An argument whose source text contains a match of a white_list regex (ECMAScript syntax,
//   searched like Python's re.search, ignoring case as Ascend's tool does) is left alone. When
//   several rules pick one argument, the first in the file wins. If arg_new names DEVICE_ID (or
//   torch) and the file does not bind it, `DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))` (or
//   `import torch`) is inserted.
// Why:
//   Projects migrated with Ascend's tool keep their custom rule files; torchport reads them
//   as they are, for the target they are given with.
// Example:
//   # --rules r.json: {"rules": {"ArgsModifyRule": [
//   #   {"func_name": "to", "arg_idx": 0, "arg_new": "f'npu:{DEVICE_ID}'", "white_list": ["cpu"]},
//   #   {"func_name": "torch.zeros", "arg_keyword": "pin_memory", "arg_new": ""}]}}
//   x = x.to(device)
//   y = y.to("cpu")
//   z = torch.zeros(2, pin_memory=True)
// Becomes (npu):
//   DEVICE_ID = int(os.environ.get("DEVICE_ID", "0"))  # inserted after the imports
//   x = x.to(f'npu:{DEVICE_ID}')
//   y = y.to("cpu")
//   z = torch.zeros(2)
// Safety:
//   Positions are those of the original source; when a `*args` comes before the position the
//   argument cannot be located, and the call is reported and left in place. Changes other
//   rules made inside a replaced or deleted argument are dropped with it; inside a kept
//   `replace_device_int` they are kept (and copied into every occurrence). An edit that
//   would change nothing is not made, but replace_device_int rules are not idempotent unless
//   their white_list excludes their own output.
#include <torchport/rules/context.h>

#include <algorithm>
#include <optional>
#include <regex>

namespace torchport::rules {

namespace {

/// TP800 (custom-args): arguments rewritten by ArgsModifyRule entries of a --rules file. Its one
/// producer: every TP800 finding is made here.
void tp800(Context& ctx, Draft d) { ctx.add("TP800", std::move(d)); }

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

constexpr std::string_view kPlaceholder = "replace_device_int";

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

/// `word` occurs in `text` as a whole name that is not an attribute (`x.word`).
bool mentions(std::string_view text, std::string_view word) {
  for (std::size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
    const bool start = p == 0 || !(ident_char(text[p - 1]) || text[p - 1] == '.');
    const bool stop = p + word.size() == text.size() || !ident_char(text[p + word.size()]);
    if (start && stop) return true;
  }
  return false;
}

std::string replace_all(std::string_view text, std::string_view what, std::string_view with) {
  std::string out;
  for (std::size_t p = text.find(what); p != std::string_view::npos; p = text.find(what)) {
    out += text.substr(0, p);
    out += with;
    text.remove_prefix(p + what.size());
  }
  out += text;
  return out;
}

bool callee_matches(const semantic::Model& m, TokenIndex lpar, std::string_view func) {
  const std::string_view last = callee_last_name(m, lpar);
  if (last.empty()) return false;
  // `def to(...)` and `class C(...)` are not calls.
  if (auto pp = m.prev(*m.prev(lpar));
      pp && (m.kind(*pp) == TokenKind::KwDef || m.kind(*pp) == TokenKind::KwClass)) {
    return false;
  }
  const semantic::Reference* r = callee_of(m, lpar);
  const std::string_view q = r ? std::string_view(r->qualified) : std::string_view();
  if (func.find('.') != std::string_view::npos) return q == func;
  if (last == func) return true;
  return !q.empty() && q.substr(q.rfind('.') + 1) == func;
}

/// The argument's own operators would bind differently inside arg_new: `a or b`, `-x`, ...
bool needs_parens(const semantic::Model& m, TokenIndex lpar, TokenIndex first, TokenIndex last) {
  for (std::optional<TokenIndex> t = first; t && *t <= last; t = m.next(*t)) {
    auto en = m.enclosing_open(*t);
    if (!en || *en != lpar) continue;  // inside the argument's own brackets
    switch (m.kind(*t)) {
      case TokenKind::Name:
      case TokenKind::Number:
      case TokenKind::String:
      case TokenKind::FStringStart:
      case TokenKind::FStringMiddle:
      case TokenKind::FStringEnd:
      case TokenKind::TStringStart:
      case TokenKind::TStringMiddle:
      case TokenKind::TStringEnd:
      case TokenKind::Dot:
      case TokenKind::LPar:
      case TokenKind::RPar:
      case TokenKind::LSqb:
      case TokenKind::RSqb:
      case TokenKind::LBrace:
      case TokenKind::RBrace:
      case TokenKind::KwNone:
      case TokenKind::KwTrue:
      case TokenKind::KwFalse:
      case TokenKind::Ellipsis:
        continue;
      default:
        return true;
    }
  }
  return false;
}

bool overlaps(const fix::Edit& a, const fix::Edit& b) {
  if (a.begin == a.end && b.begin == b.end) return false;
  if (a.begin == a.end) return b.begin < a.begin && a.begin < b.end;
  if (b.begin == b.end) return a.begin < b.begin && b.begin < a.end;
  return a.begin < b.end && b.begin < a.end;
}

/// Strictly inside [b, e): an insertion at either end belongs to the surrounding code.
bool inside(std::uint32_t begin, std::uint32_t end, std::uint32_t b, std::uint32_t e) {
  if (begin == end) return b < begin && begin < e;
  return b <= begin && end <= e;
}

/// The safe edits other rules made inside [b, e), without overlaps (as the fix layer would
/// apply them), sorted by position.
std::vector<fix::Edit> inner_edits(const Context& ctx, std::uint32_t b, std::uint32_t e) {
  std::vector<fix::Edit> all;
  for (const Finding& f : ctx.result.findings) {
    if (!f.fix || f.fix->applicability != fix::Applicability::Safe) continue;
    if (std::all_of(f.fix->edits.begin(), f.fix->edits.end(),
                    [&](const fix::Edit& x) { return inside(x.begin, x.end, b, e); })) {
      all.insert(all.end(), f.fix->edits.begin(), f.fix->edits.end());
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const fix::Edit& x, const fix::Edit& y) { return x.begin < y.begin; });
  std::vector<fix::Edit> out;
  for (fix::Edit& x : all) {
    if (std::none_of(out.begin(), out.end(), [&](const fix::Edit& y) {
          return overlaps(x, y) || (x.begin == y.begin && x.end == y.end);
        })) {
      out.push_back(std::move(x));
    }
  }
  return out;
}

std::string apply(std::string_view text, std::uint32_t b, std::uint32_t e,
                  const std::vector<fix::Edit>& edits) {
  std::string out;
  std::uint32_t pos = b;
  for (const fix::Edit& x : edits) {
    out.append(text.substr(pos, x.begin - pos));
    out += x.replacement;
    pos = x.end;
  }
  out.append(text.substr(pos, e - pos));
  return out;
}

struct Action {
  std::size_t arg;  ///< index into the call's arguments
  const catalogue::ArgRule* rule;
};

class Rewriter {
 public:
  Rewriter(Context& ctx, std::vector<const catalogue::ArgRule*> rules)
      : ctx_(ctx), m_(ctx.m), rules_(std::move(rules)), compiled_(rules_.size()) {}

  void call(TokenIndex lpar) {
    std::vector<Arg> args;
    std::vector<Action> actions;
    std::vector<bool> claimed;
    for (std::size_t r = 0; r < rules_.size(); ++r) {
      const catalogue::ArgRule& rule = *rules_[r];
      if (!callee_matches(m_, lpar, rule.func_name)) continue;
      if (claimed.empty()) {
        args = call_args(m_, lpar);
        claimed.assign(args.size(), false);
      }
      std::optional<std::size_t> k = locate(rule, args);
      if (!k || claimed[*k] || white_listed(r, args[*k])) continue;
      claimed[*k] = true;
      actions.push_back({*k, &rule});
    }
    if (actions.empty()) return;
    std::vector<bool> deleted(args.size(), false);
    for (const Action& a : actions) deleted[a.arg] = a.rule->arg_new.empty();
    for (const Action& a : actions) {
      if (deleted[a.arg]) {
        remove(lpar, args, deleted, a);
      } else {
        replace(lpar, args[a.arg], a);
      }
    }
  }

 private:
  std::uint32_t begin_of(TokenIndex t) const { return m_.tokens()[t].begin; }
  std::uint32_t end_of(TokenIndex t) const { return m_.tokens()[t].end; }
  TokenIndex value_first(const Arg& a) const {
    return a.keyword.empty() ? a.first : *m_.next(*m_.next(a.first));
  }
  std::string_view source(std::uint32_t b, std::uint32_t e) const {
    return m_.text().substr(b, e - b);
  }

  std::string what(const catalogue::ArgRule& rule) const {
    return rule.arg_idx ? "the arg at position " + std::to_string(*rule.arg_idx)
                        : "the keyword arg " + rule.arg_keyword;
  }

  std::optional<std::size_t> locate(const catalogue::ArgRule& rule, const std::vector<Arg>& args) {
    if (!rule.arg_idx) {
      for (std::size_t i = 0; i < args.size(); ++i)
        if (args[i].keyword == rule.arg_keyword) return i;
      return std::nullopt;
    }
    std::uint32_t pos = 0;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const Arg& a = args[i];
      if (!a.keyword.empty() || m_.kind(a.first) == TokenKind::DoubleStar) continue;
      if (m_.kind(a.first) == TokenKind::Star) {
        tp800(ctx_,
              report(Operation::Unsupported, rule.func_name,
                     "cannot tell which argument is at position " + std::to_string(*rule.arg_idx) +
                         " of function " + rule.func_name + " (a *args comes first): left in place",
                     begin_of(a.first), end_of(a.last)));
        return std::nullopt;
      }
      if (pos++ == *rule.arg_idx) return i;
    }
    return std::nullopt;
  }

  bool white_listed(std::size_t r, const Arg& a) {
    const catalogue::ArgRule& rule = *rules_[r];
    if (rule.white_list.empty()) return false;
    if (!compiled_[r]) {
      compiled_[r].emplace();
      for (const std::string& p : rule.white_list) {
        try {
          compiled_[r]->emplace_back(p, std::regex::ECMAScript | std::regex::icase);
        } catch (const std::regex_error&) {
          // Checked when the rule file was read; a pattern that fails here matches nothing.
        }
      }
    }
    const std::string text(source(begin_of(value_first(a)), end_of(a.last)));
    return std::any_of(compiled_[r]->begin(), compiled_[r]->end(),
                       [&](const std::regex& re) { return std::regex_search(text, re); });
  }

  /// The TP800 finding; `drops`: the code it replaces, whose findings of other rules go with it
  /// (Finding::drops); `opens_arguments`: Finding::opens_arguments.
  void emit(const Action& a, const Arg& arg, Operation op, std::string message,
            std::vector<fix::Edit> edits, std::string_view new_text, TokenIndex lpar,
            std::optional<std::pair<std::uint32_t, std::uint32_t>> drops = {},
            std::optional<std::pair<std::uint32_t, std::uint32_t>> opens_arguments = {}) {
    Draft f;
    f.op = op;
    f.api = a.rule->func_name;
    f.message = std::move(message);
    f.begin = begin_of(arg.first);
    f.end = end_of(arg.last);
    fix::Fix fx;
    fx.edits = std::move(edits);
    f.fix = std::move(fx);
    f.drops = drops;
    f.opens_arguments = opens_arguments;
    f.changes_file = true;
    tp800(ctx_, std::move(f));
    const std::uint32_t scope = m_.lines()[m_.line_of(lpar).value_or(0)].scope;
    if (mentions(new_text, "DEVICE_ID") && !m_.lookup("DEVICE_ID", scope))
      ctx_.used_device_id = true;
    if (mentions(new_text, "torch") && !m_.lookup("torch", scope)) ctx_.need_torch_import = true;
  }

  void replace(TokenIndex lpar, const Arg& arg, const Action& a) {
    const catalogue::ArgRule& rule = *a.rule;
    const TokenIndex vfirst = value_first(arg);
    const std::uint32_t b = begin_of(vfirst), e = end_of(arg.last);
    const std::string_view old = source(b, e);
    const std::string message = "change " + what(rule) + " of function " + rule.func_name + " to ";
    if (rule.arg_new == kPlaceholder) return;
    const std::size_t at = rule.arg_new.find(kPlaceholder);
    if (at == std::string::npos) {
      if (rule.arg_new == old) return;
      emit(a, arg, Operation::Modify, message + rule.arg_new, {fix::Edit{b, e, rule.arg_new}},
           rule.arg_new, lpar, std::pair{b, e});
      return;
    }
    // The old text stays where it is, with the other rules' edits inside it; arg_new is
    // inserted around it, and its further placeholders get a copy of the edited text.
    std::vector<fix::Edit> inner = inner_edits(ctx_, b, e);
    const bool parens = needs_parens(m_, lpar, vfirst, arg.last);
    const std::string edited = apply(m_.text(), b, e, inner);
    const std::string copy = parens ? "(" + edited + ")" : edited;
    const std::string prefix = rule.arg_new.substr(0, at) + (parens ? "(" : "");
    const std::string suffix =
        (parens ? ")" : "") +
        replace_all(std::string_view(rule.arg_new).substr(at + kPlaceholder.size()), kPlaceholder,
                    copy);
    if (prefix.empty() && suffix.empty()) return;
    std::vector<fix::Edit> edits;
    if (!prefix.empty()) edits.push_back(fix::Edit{b, b, prefix});
    edits.insert(edits.end(), inner.begin(), inner.end());
    if (!suffix.empty()) edits.push_back(fix::Edit{e, e, suffix});
    const std::string result = prefix + edited + suffix;
    emit(a, arg, Operation::Modify, message + result, std::move(edits), result, lpar);
  }

  void remove(TokenIndex lpar, const std::vector<Arg>& args, const std::vector<bool>& deleted,
              const Action& a) {
    const std::size_t k = a.arg, n = args.size();
    bool kept_after = false, kept_before = false;
    for (std::size_t j = 0; j < n; ++j) {
      if (deleted[j]) continue;
      (j > k ? kept_after : kept_before) = true;
    }
    // The argument goes with its following comma, or, when every later argument goes too,
    // with its preceding one; when all go, the call is left with empty parentheses.
    std::uint32_t b = 0, e = 0;
    std::optional<std::pair<std::uint32_t, std::uint32_t>> opens;
    if (kept_after || (!kept_before && k + 1 < n)) {
      b = begin_of(args[k].first);
      e = begin_of(args[k + 1].first);
    } else if (kept_before) {
      b = end_of(args[k - 1].last);
      e = end_of(args[k].last);
    } else {
      b = begin_of(args[k].first);
      e = begin_of(*m_.match(lpar));
      // An argument another rule appends (TP300's `, map_location=...`) becomes the first
      // (Finding::opens_arguments).
      opens = std::pair{end_of(args[k].last), e};
    }
    emit(a, args[k], Operation::Delete,
         "delete " + what(*a.rule) + " of function " + a.rule->func_name, {fix::Edit{b, e, ""}}, "",
         lpar, std::pair{b, e}, opens);
  }

  Context& ctx_;
  const semantic::Model& m_;
  std::vector<const catalogue::ArgRule*> rules_;
  std::vector<std::optional<std::vector<std::regex>>> compiled_;
};

}  // namespace

void run_custom_args(Context& ctx) {
  std::vector<const catalogue::ArgRule*> rules;
  for (const catalogue::ArgRule& r : ctx.cat.arg_rules())
    if (r.target == ctx.target.name) rules.push_back(&r);
  if (rules.empty()) return;
  Rewriter rw(ctx, std::move(rules));
  // Innermost calls first, so that an outer rule sees the edits made inside its argument.
  const semantic::Model& m = ctx.m;
  for (auto i = static_cast<TokenIndex>(m.tokens().size()); i-- > 0;) {
    if (m.kind(i) == TokenKind::LPar && m.match(i) && !callee_last_name(m, i).empty()) rw.call(i);
  }
}

}  // namespace torchport::rules
