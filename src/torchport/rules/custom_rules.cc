// Rule family TP801-TP804: the other rule kinds of Ascend's rule tables (--rules FILE).
//
// What it does:
//   Runs the rules of an Ascend rule table (builtin_rules.json and its legacy custom-rule
//   files) that are not catalogue entries (dotted FuncNameModifyRule / ReplaceAttributeRule
//   names and ModuleNameModifyRule become entries, TP100) or ArgsModifyRule (TP800):
//   TP801 FuncNameModifyRule with a dotless old_name: every call whose called name is old_name
//     (`x.cuda(...)`, `cuda(...)`) calls new_name instead;
//   TP802 ReplaceStringRule: in string literals (and the text of f-strings, for strict: false),
//     a value equal to str_old (strict) or every occurrence of str_old (not strict) becomes
//     str_new; the rules apply in file order;
//   TP803 ReplaceAttributeRule with a dotless old_name: every attribute `.old_name` is read as
//     `.new_name`;
//   TP804 InsertGlobalRule: its statements go after the imports of every file with an import
//     whose name contains import_key_word (any import when it is ""), each unless the file
//     already contains it.
// Why:
//   Projects migrated with Ascend's tool keep its rule tables; torchport runs them on the
//   syntax tree, for the target they are given with.
// Example:
//   # --rules r.json: {"rules": {"ReplaceAttributeRule": [{"old_name": "CUDA", "new_name": "NPU"}],
//   #   "ReplaceStringRule": [{"str_old": "nccl", "str_new": "hccl", "strict": true}]}}
//   acts = [ProfilerActivity.CUDA]
//   backend = "nccl"
// Becomes (npu):
//   acts = [ProfilerActivity.NPU]
//   backend = "hccl"
// Safety:
//   A name or string another rule rewrote already keeps that rewrite (the built-in rules know
//   the context; the table does not). Names being assigned (`self.cuda = ...`), definitions
//   (`def cuda(self)`) and import statements are never renamed; byte strings are left alone.
#include <torchport/rules/context.h>

#include <algorithm>

namespace torchport::rules {

namespace {

/// TP801 (custom-func-name): calls renamed by FuncNameModifyRule entries (dotless old_name) of a
/// --rules file. Its one producer: every TP801 finding is made here.
void tp801(Context& ctx, Draft d) { ctx.add("TP801", std::move(d)); }

/// TP802 (custom-string): string literals rewritten by ReplaceStringRule entries of a --rules file.
/// Its one producer: every TP802 finding is made here.
void tp802(Context& ctx, Draft d) { ctx.add("TP802", std::move(d)); }

/// TP803 (custom-attribute): attributes renamed by ReplaceAttributeRule entries (dotless old_name)
/// of a --rules file. Its one producer: every TP803 finding is made here.
void tp803(Context& ctx, Draft d) { ctx.add("TP803", std::move(d)); }

/// TP804 (custom-insert): statements inserted by InsertGlobalRule entries of a --rules file. Its
/// one producer: every TP804 finding is made here.
void tp804(Context& ctx, Draft d) {
  // Its statements go after the imports and definitions torchport inserts at the same place
  // (TP900): they may use them.
  if (d.fix)
    for (fix::Edit& e : d.fix->edits) e.order = 1;
  ctx.add("TP804", std::move(d));
}

}  // namespace

using semantic::TokenIndex;
using syntax::TokenKind;

namespace {

/// Some edit of an earlier finding touches [b, e).
bool taken(const Context& ctx, std::uint32_t b, std::uint32_t e) {
  for (const Finding& f : ctx.result.findings) {
    if (!f.fix) continue;
    for (const fix::Edit& x : f.fix->edits) {
      if (x.begin == x.end ? (b < x.begin && x.begin < e) : (x.begin < e && b < x.end)) return true;
    }
  }
  return false;
}

std::string replace_all(std::string v, std::string_view what, std::string_view with) {
  for (std::size_t p = v.find(what); p != std::string::npos; p = v.find(what, p + with.size()))
    v.replace(p, what.size(), with);
  return v;
}

/// `block` occurs in `text` as whole lines.
bool has_lines(std::string_view text, std::string_view block) {
  auto eol = [](char c) { return c == '\n' || c == '\r'; };
  for (std::size_t p = text.find(block); p != std::string_view::npos; p = text.find(block, p + 1)) {
    const std::size_t e = p + block.size();
    if ((p == 0 || eol(text[p - 1])) && (e == text.size() || eol(text[e]))) return true;
  }
  return false;
}

template <class R>
std::vector<const R*> for_target(const std::vector<R>& all, const std::string& target) {
  std::vector<const R*> out;
  for (const R& r : all)
    if (r.target == target) out.push_back(&r);
  return out;
}

void calls(Context& ctx, const std::vector<const catalogue::NameRule*>& rules) {
  const semantic::Model& m = ctx.m;
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  for (TokenIndex i = 0; i < n; ++i) {
    if (m.kind(i) != TokenKind::LPar) continue;
    auto name = m.prev(i);
    if (!name || m.kind(*name) != TokenKind::Name || m.is_store(*name)) continue;
    if (auto before = m.prev(*name);
        before && (m.kind(*before) == TokenKind::KwDef || m.kind(*before) == TokenKind::KwClass))
      continue;
    const std::string_view text = m.token_text(*name);
    for (const catalogue::NameRule* r : rules) {
      if (text != r->old_name) continue;
      const syntax::Token& tok = m.tokens()[*name];
      if (!taken(ctx, tok.begin, tok.end))
        tp801(ctx, ctx.rewrite(r->old_name,
                               "change function " + r->old_name + " to " + r->new_name + " (" +
                                   r->source + ")",
                               tok.begin, tok.end, r->new_name));
      break;
    }
  }
}

void attributes(Context& ctx, const std::vector<const catalogue::NameRule*>& rules) {
  const semantic::Model& m = ctx.m;
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  for (TokenIndex i = 0; i < n; ++i) {
    if (m.kind(i) != TokenKind::Name || m.is_store(i)) continue;
    auto dot = m.prev(i);
    // An attribute of a value, read from the tree: not a name in `import x.y` or `from x.y import
    // z`, even where an import and a statement share the line (`import os; t.y`).
    if (!dot || m.kind(*dot) != TokenKind::Dot || !ctx.attribute_named_at(i)) continue;
    const std::string_view text = m.token_text(i);
    for (const catalogue::NameRule* r : rules) {
      if (text != r->old_name) continue;
      const syntax::Token& tok = m.tokens()[i];
      if (!taken(ctx, tok.begin, tok.end))
        tp803(ctx, ctx.rewrite("." + r->old_name,
                               "replace attribute \"" + r->old_name + "\" with \"" + r->new_name +
                                   "\" (" + r->source + ")",
                               tok.begin, tok.end, r->new_name));
      break;
    }
  }
}

void strings(Context& ctx, const std::vector<const catalogue::StringRule*>& rules) {
  const semantic::Model& m = ctx.m;
  const auto n = static_cast<TokenIndex>(m.tokens().size());
  for (TokenIndex i = 0; i < n; ++i) {
    const TokenKind k = m.kind(i);
    std::string_view value;
    std::uint32_t begin = 0;
    if (k == TokenKind::String) {
      const std::string_view raw = m.token_text(i);
      const std::size_t q = raw.find_first_of("\"'");
      if (q == std::string_view::npos || raw.substr(0, q).find_first_of("bB") != raw.npos)
        continue;  // a byte string
      auto sv = semantic::string_value(m.text(), m.tokens()[i]);
      if (!sv) continue;
      value = sv->value;
      begin = sv->value_begin;
    } else if (k == TokenKind::FStringMiddle) {
      value = m.token_text(i);
      begin = m.tokens()[i].begin;
    } else {
      continue;
    }
    std::string v(value);
    std::string applied;
    for (const catalogue::StringRule* r : rules) {
      std::string next = v;
      if (r->strict) {
        if (k == TokenKind::String && v == r->str_old) next = r->str_new;
      } else {
        next = replace_all(v, r->str_old, r->str_new);
      }
      if (next == v) continue;
      applied += (applied.empty() ? "" : "; ") +
                 ("\"" + r->str_old + "\" with \"" + r->str_new + "\" (" + r->source + ")");
      v = std::move(next);
    }
    const auto end = begin + static_cast<std::uint32_t>(value.size());
    if (v == value || taken(ctx, begin, end)) continue;
    tp802(ctx, ctx.rewrite("\"" + std::string(value) + "\"", "replace string " + applied, begin,
                           end, v));
  }
}

void inserts(Context& ctx, const std::vector<const catalogue::InsertRule*>& rules) {
  const semantic::Model& m = ctx.m;
  const std::string nl(m.newline());
  const std::uint32_t at = std::max(m.import_block_end(), ctx.opts.top_of_module);
  std::string body, api, sources;
  for (const catalogue::InsertRule* r : rules) {
    const bool applies =
        std::any_of(m.imports().begin(), m.imports().end(), [&](const semantic::Import& im) {
          return im.module.find(r->import_key_word) != std::string::npos ||
                 im.name.find(r->import_key_word) != std::string::npos;
        });
    if (!applies) continue;
    for (const std::string& c : r->content) {
      const std::string text = replace_all(c, "\n", nl);
      if (has_lines(m.text(), text) || has_lines(body, text))
        continue;  // there already (a file migrated before)
      body += text + nl;
      api += (api.empty() ? "" : "; ") + c.substr(0, c.find('\n'));
      ctx.custom_inserted += text + nl;
    }
    if (!api.empty() && sources.find(r->source) == std::string::npos)
      sources += (sources.empty() ? "" : ", ") + r->source;
  }
  if (body.empty()) return;
  const std::string_view text = m.text();
  if (at > 0 && at == text.size() && text.back() != '\n' && text.back() != '\r') body = nl + body;
  tp804(ctx, ctx.rewrite(api, "insert " + api + " (" + sources + ")", at, at, body));
}

}  // namespace

void run_custom_rules(Context& ctx) {
  const catalogue::CustomRules& cr = ctx.cat.custom_rules();
  const std::string& t = ctx.target.name;
  if (auto r = for_target(cr.calls, t); !r.empty()) calls(ctx, r);
  if (auto r = for_target(cr.attributes, t); !r.empty()) attributes(ctx, r);
  if (auto r = for_target(cr.strings, t); !r.empty()) strings(ctx, r);
  if (auto r = for_target(cr.inserts, t); !r.empty()) inserts(ctx, r);
}

}  // namespace torchport::rules
