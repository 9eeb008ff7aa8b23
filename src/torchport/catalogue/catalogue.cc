#include <torchport/catalogue/catalogue.h>
#include <torchport/catalogue/embedded.h>
#include <torchport/syntax/parser.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace torchport::catalogue {

namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<Status, std::string_view>, 4> kStatusNames = {{
    {Status::Supported, "supported"},
    {Status::Partial, "partial"},
    {Status::Unsupported, "unsupported"},
    {Status::Unknown, "unknown"},
}};

constexpr std::array<std::pair<Kind, std::string_view>, 8> kKindNames = {{
    {Kind::Function, "function"},
    {Kind::Class, "class"},
    {Kind::Module, "module"},
    {Kind::Attribute, "attribute"},
    {Kind::Method, "method"},
    {Kind::String, "string"},
    {Kind::EnvVar, "env"},
    {Kind::Package, "package"},
}};

/// A located parse error: the document name and a JSON-pointer-like path to the field.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string str_field(const Json& obj, std::string_view key, const std::string& where,
                      bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) throw DataError(where + ": missing field \"" + std::string(key) + "\"");
    return {};
  }
  if (!it->is_string()) throw DataError(where + "." + std::string(key) + ": expected a string");
  return it->get<std::string>();
}

bool bool_field(const Json& obj, std::string_view key, const std::string& where, bool dflt) {
  auto it = obj.find(key);
  if (it == obj.end()) return dflt;
  if (!it->is_boolean())
    throw DataError(where + "." + std::string(key) + ": expected true or false");
  return it->get<bool>();
}

std::vector<std::string> str_list(const Json& obj, std::string_view key, const std::string& where) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end()) return out;
  if (!it->is_array()) throw DataError(where + "." + std::string(key) + ": expected a list");
  for (const Json& v : *it) {
    if (!v.is_string())
      throw DataError(where + "." + std::string(key) + ": expected a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

/// "2.10" sorts after "2.9".
/// strtol over a substring (no allocation for the short ones versions have).
long to_long(std::string_view s) {
  char buf[32];
  if (s.size() >= sizeof buf) return std::strtol(std::string(s).c_str(), nullptr, 10);
  s.copy(buf, s.size());
  buf[s.size()] = '\0';
  return std::strtol(buf, nullptr, 10);
}

/// The numeric parts version_less() compares ("2.10" -> {2, 10}; "" -> {0}).
std::vector<long> version_parts(std::string_view v) {
  std::vector<long> out;
  std::size_t i = 0;
  while (i <= v.size()) {
    std::size_t j = v.find('.', i);
    if (j == std::string_view::npos) j = v.size();
    out.push_back(to_long(v.substr(i, j - i)));
    i = j + 1;
  }
  return out;
}

bool version_less(std::string_view a, std::string_view b) {
  // Compares the '.'-separated numeric parts lexicographically, one part at a time.
  struct Parts {
    std::string_view v;
    std::size_t i = 0;
    bool done() const { return i > v.size(); }
    long next() {
      std::size_t j = v.find('.', i);
      if (j == std::string_view::npos) j = v.size();
      long x = to_long(v.substr(i, j - i));
      i = j + 1;
      return x;
    }
  };
  Parts pa{a}, pb{b};
  while (true) {
    if (pb.done()) return false;
    if (pa.done()) return true;
    long x = pa.next(), y = pb.next();
    if (x != y) return x < y;
  }
}

/// std::hash<std::string_view> for string-keyed maps looked up by string_view. Not noexcept on
/// purpose: libstdc++ then keeps each node's hash code, as it does for std::hash<std::string>,
/// instead of hashing the keys it walks past in a bucket.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct VersionList {
  std::vector<long> parts;  // version_parts() of the version
  /// Every API of the version's lists, with the list that has it (unsupported before partial
  /// before supported, when several do) and that list's tip: one lookup answers api_support().
  struct Listed {
    Status status = Status::Supported;
    std::string tip;  // "" for supported
  };
  StringMap<Listed> apis;
  void put(const std::string& api, Status status, std::string tip) {
    auto rank = [](Status st) { return st == Status::Unsupported ? 2 : st == Status::Partial; };
    auto [it, fresh] = apis.try_emplace(api, Listed{status, tip});
    if (!fresh && rank(status) > rank(it->second.status))
      it->second = Listed{status, std::move(tip)};
  }
};

struct SupportLists {
  std::string source;
  std::string judge_prefix;  // APIs with this prefix that no list names are "unknown"
  std::map<std::string, VersionList, std::less<>> versions;
};

/// One target's support lists. The embedded catalogue keeps each support document's text and
/// parses it on the first question about its target (once, thread-safe): a run for one target
/// never parses the other targets' lists (the largest documents of the catalogue). Shared by
/// the copies of a catalogue (with_rules): the lists never change once parsed.
struct LazySupport {
  std::string name;       // the document's name, for errors
  std::string_view text;  // the embedded document (static storage)
  std::once_flag once;
  SupportLists lists;
};

}  // namespace

std::string_view to_string(Status s) {
  for (const auto& [v, n] : kStatusNames)
    if (v == s) return n;
  return "unknown";
}

std::optional<Status> parse_status(std::string_view s) {
  for (const auto& [v, n] : kStatusNames)
    if (n == s) return v;
  return std::nullopt;
}

std::string_view to_string(Kind k) {
  for (const auto& [v, n] : kKindNames)
    if (v == k) return n;
  return "function";
}

std::optional<Kind> parse_kind(std::string_view s) {
  for (const auto& [v, n] : kKindNames)
    if (n == s) return v;
  return std::nullopt;
}

namespace {

/// find()'s first test, before the hash lookup: the rules ask the catalogue about every
/// qualified name of a file and each of its dotted prefixes, and almost none is a key. A bit
/// per (length, middle and last byte) mix; a clear bit means no key.
constexpr std::size_t kQuickBits = 1u << 12;
std::size_t quick_bit(std::string_view s) {
  if (s.empty()) return 0;
  const auto at = [&](std::size_t i) {
    return static_cast<std::size_t>(static_cast<unsigned char>(s[i]));
  };
  return (s.size() * 0x9E37u ^ at(s.size() - 1) * 0x1F3u ^ at(s.size() / 2) * 0x3Bu) &
         (kQuickBits - 1);
}

}  // namespace

struct Catalogue::Impl {
  std::vector<Entry> entries;
  StringMap<std::size_t> by_api;
  std::bitset<kQuickBits> quick;  // quick_bit() of every key of by_api
  std::vector<Target> targets;
  std::map<std::string, SupportLists, std::less<>> support;  // by target: read at start
  /// by target (the file's name): the embedded support documents, each read into its own
  /// lists on the first question about the target (support_lists())
  std::map<std::string, std::shared_ptr<LazySupport>, std::less<>> lazy_support;
  std::vector<ArgRule> arg_rules;
  CustomRules custom_rules;
  std::map<std::string, AdviceTable, std::less<>> advice;                 // by target
  std::map<std::string, std::vector<Companion>, std::less<>> companions;  // by distribution
  std::string cuda_amp_dtype;  // targets.json "cuda": the source's facts
  std::vector<VersionChange> version_changes;
};

Catalogue::Catalogue() : impl_(std::make_unique<Impl>()) {}
Catalogue::~Catalogue() = default;
Catalogue::Catalogue(Catalogue&&) noexcept = default;
Catalogue& Catalogue::operator=(Catalogue&&) noexcept = default;

namespace {

Mapping parse_mapping(const Json& m, const std::string& where) {
  if (!m.is_object()) throw DataError(where + ": expected an object");
  Mapping out;
  out.replacement = str_field(m, "replacement", where, false);
  std::string status = str_field(m, "status", where, true);
  auto st = parse_status(status);
  if (!st)
    throw DataError(where + ".status: unknown status \"" + status +
                    "\" (expected supported, partial, unsupported or unknown)");
  out.status = *st;
  out.min_torch = str_field(m, "min_torch", where, false);
  out.note = str_field(m, "note", where, false);
  out.source = str_field(m, "source", where, true);
  out.without_device = str_field(m, "without_device", where, false);
  out.changes = str_field(m, "changes", where, false);
  out.refused_keywords = str_list(m, "refused_keywords", where);
  out.returns = str_field(m, "returns", where, false);
  out.if_none = str_field(m, "if_none", where, false);
  if (!out.if_none.empty() && out.returns != "None")
    throw DataError(where + ".if_none: needs \"returns\": \"None\"");
  out.as_divisor = str_field(m, "as_divisor", where, false);
  out.as_divisor_note = str_field(m, "as_divisor_note", where, !out.as_divisor.empty());
  out.read_by = str_field(m, "read_by", where, false);
  if (auto mw = m.find("moves_with"); mw != m.end()) {
    if (!mw->is_object()) throw DataError(where + ".moves_with: expected an object");
    for (const auto& [api, repl] : mw->items()) {
      if (!repl.is_string()) throw DataError(where + ".moves_with." + api + ": expected a string");
      out.moves_with.emplace_back(api, repl.get<std::string>());
    }
  }
  if (out.status != Status::Unsupported && out.replacement.empty() && out.note.empty())
    throw DataError(where + ": a " + status + " mapping needs a replacement or a note");
  return out;
}

std::string expand(const std::string& text, const Target& t, const std::string& where) {
  const std::array<std::pair<std::string_view, const std::string*>, 5> fields = {{
      {"{device}", &t.device},
      {"{module}", &t.module},
      {"{backend}", &t.backend},
      {"{visible_devices}", &t.visible_devices},
      {"{amp_device}", &t.amp_device},
  }};
  std::string out = text;
  for (const auto& [key, value] : fields) {
    for (std::size_t pos = out.find(key); pos != std::string::npos; pos = out.find(key, pos)) {
      if (value->empty())
        throw DataError(where + ": " + std::string(key) + " is empty for target " + t.name +
                        ": give it an explicit mapping");
      out.replace(pos, key.size(), *value);
      pos += value->size();
    }
  }
  return out;
}

void add_entry(Catalogue::Impl& impl, Entry entry, const std::string& where, bool replace) {
  if (auto it = impl.by_api.find(entry.api); it != impl.by_api.end()) {
    if (!replace) throw DataError(where + ": duplicate entry");
    impl.entries[it->second] = std::move(entry);
    return;
  }
  impl.by_api.emplace(entry.api, impl.entries.size());
  impl.quick.set(quick_bit(entry.api));
  impl.entries.push_back(std::move(entry));
}

void parse_entries(Catalogue::Impl& impl, const std::string& name, const Json& doc,
                   const std::set<std::string>& target_names, bool replace) {
  auto it = doc.find("entries");
  if (it == doc.end() || !it->is_array()) throw DataError(name + ": missing list \"entries\"");
  std::size_t i = 0;
  for (const Json& e : *it) {
    std::string where = name + ": entries[" + std::to_string(i++) + "]";
    if (!e.is_object()) throw DataError(where + ": expected an object");
    Entry entry;
    entry.api = str_field(e, "api", where, true);
    where += " (" + entry.api + ")";
    std::string kind = str_field(e, "kind", where, true);
    auto k = parse_kind(kind);
    if (!k) throw DataError(where + ".kind: unknown kind \"" + kind + "\"");
    entry.kind = *k;
    entry.family = str_field(e, "family", where, true);
    entry.summary = str_field(e, "summary", where, false);
    auto t = e.find("targets");
    if (t == e.end() || !t->is_object()) throw DataError(where + ": missing object \"targets\"");
    const Json* fallback = nullptr;
    for (const auto& [tname, m] : t->items()) {
      if (tname == "*") {
        fallback = &m;
        continue;
      }
      if (!target_names.count(tname))
        throw DataError(where + ".targets: unknown target \"" + tname + "\"");
      entry.targets.emplace(tname, parse_mapping(m, where + ".targets." + tname));
    }
    // "*" gives the mapping of every target not named, with {device}, {module}, {backend},
    // {visible_devices}, {amp_device} taken from the target.
    if (fallback) {
      for (const Target& target : impl.targets) {
        if (entry.targets.count(target.name)) continue;
        std::string w = where + ".targets.* for " + target.name;
        Mapping m = parse_mapping(*fallback, w);
        for (std::string* field : {&m.replacement, &m.note}) *field = expand(*field, target, w);
        entry.targets.emplace(target.name, std::move(m));
      }
    }
    add_entry(impl, std::move(entry), where, replace);
  }
}

void parse_version_changes(Catalogue::Impl& impl, const std::string& name, const Json& list) {
  if (!list.is_array()) throw DataError(name + ": version_changes: expected a list");
  std::size_t i = 0;
  for (const Json& c : list) {
    const std::string where = name + ": version_changes[" + std::to_string(i++) + "]";
    if (!c.is_object()) throw DataError(where + ": expected an object");
    VersionChange v;
    v.id = str_field(c, "id", where, true);
    v.api = str_field(c, "api", where, true);
    v.since = str_field(c, "since", where, true);
    v.keyword = str_field(c, "keyword", where, true);
    v.old_value = str_field(c, "old_value", where, true);
    v.new_value = str_field(c, "new_value", where, true);
    v.summary = str_field(c, "summary", where, true);
    v.fix_when = str_field(c, "fix_when", where, true);
    if (v.fix_when != "always" && v.fix_when != "never" && v.fix_when != "saves_objects")
      throw DataError(where + ".fix_when: expected always, never or saves_objects");
    v.fix_note = str_field(c, "fix_note", where, false);
    v.fix_reason = str_field(c, "fix_reason", where, v.fix_when != "never");
    v.report_when = str_field(c, "report_when", where, v.fix_when != "always");
    v.keyword_since = str_field(c, "keyword_since", where, false);
    v.source = str_field(c, "source", where, true);
    impl.version_changes.push_back(std::move(v));
  }
}

void parse_entries(Catalogue::Impl& impl, const std::string& name, const std::string& text,
                   const std::set<std::string>& target_names) {
  Json doc = Json::parse(text);
  if (auto vc = doc.find("version_changes"); vc != doc.end())
    parse_version_changes(impl, name, *vc);
  parse_entries(impl, name, doc, target_names, false);
}

bool dotted_name(std::string_view s) {
  if (s.empty()) return false;
  bool start = true;
  for (char c : s) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                       static_cast<unsigned char>(c) >= 0x80;
    const bool digit = c >= '0' && c <= '9';
    if (c == '.') {
      if (start) return false;
      start = true;
    } else if (alpha || (digit && !start)) {
      start = false;
    } else {
      return false;
    }
  }
  return !start;
}

/// One ArgsModifyRule: {"func_name", "arg_idx" | "arg_keyword", "arg_new", "white_list"}.
ArgRule parse_arg_rule(const Json& r, const std::string& w, std::string source,
                       const std::string& target) {
  ArgRule out;
  out.func_name = str_field(r, "func_name", w, true);
  if (!dotted_name(out.func_name))
    throw DataError(w + ".func_name: \"" + out.func_name +
                    "\" is not a name (\"to\") or a dotted name (\"torch.zeros\")");
  auto idx = r.find("arg_idx");
  const bool has_keyword = r.contains("arg_keyword");
  if (idx != r.end() && has_keyword)
    throw DataError(w + ": give \"arg_idx\" or \"arg_keyword\", not both");
  if (idx == r.end() && !has_keyword)
    throw DataError(w + ": missing field \"arg_idx\" or \"arg_keyword\"");
  if (idx != r.end()) {
    if (!idx->is_number_integer() || idx->get<std::int64_t>() < 0 ||
        idx->get<std::int64_t>() > 1000000)
      throw DataError(w + ".arg_idx: expected a non-negative integer, got " + idx->dump());
    out.arg_idx = static_cast<std::uint32_t>(idx->get<std::int64_t>());
  } else {
    out.arg_keyword = str_field(r, "arg_keyword", w, true);
    if (!dotted_name(out.arg_keyword) || out.arg_keyword.find('.') != std::string::npos)
      throw DataError(w + ".arg_keyword: \"" + out.arg_keyword + "\" is not a Python name");
  }
  out.arg_new = str_field(r, "arg_new", w, true);
  if (!out.arg_new.empty()) {
    // It must be one argument: an expression that parses on its own.
    syntax::Tree t = syntax::parse("arg_new", "_(" + out.arg_new + ")\n");
    std::vector<const syntax::Node*> calls = t.find_all(syntax::NodeKind::Call);
    bool one = t.ok() && !calls.empty() && calls[0]->args().size() == 1 &&
               calls[0]->keywords().empty() &&
               (*calls[0]->args().begin())->kind() != syntax::NodeKind::Starred;
    if (!one)
      throw DataError(
          w + ".arg_new: \"" + out.arg_new + "\" is not one Python expression" +
          (t.ok() || t.diagnostics().empty() ? std::string() : ": " + t.diagnostics()[0].message));
  }
  out.white_list = str_list(r, "white_list", w);
  for (std::size_t i = 0; i < out.white_list.size(); ++i) {
    try {
      std::regex re(out.white_list[i]);
    } catch (const std::regex_error& e) {
      throw DataError(w + ".white_list[" + std::to_string(i) + "]: \"" + out.white_list[i] +
                      "\" is not a valid regular expression (" + e.what() + ")");
    }
  }
  out.target = target;
  out.source = std::move(source);
  return out;
}

/// Ascend's legacy custom-rule file: {"rules": {"FuncNameModifyRule": [...], ...}}. The name
/// rules become catalogue entries for `target` that take precedence over the built-in ones;
/// ArgsModifyRule entries become ArgRules (applied by rules/custom_args.cc).
/// Ascend's feature switches that are on: "normal" and "2.1.0" always (its tool adds 2.1.0
/// whatever -v says), "specify_device" with -s. "distributed" (Ascend's `distributed -m FILE`
/// mode, single-GPU to multi-NPU) has no torchport equivalent and is never on.
bool switched_on(const Json& r, const std::string& w, bool specify_device) {
  auto fs = r.find("feature_switch");
  if (fs == r.end()) return true;
  if (!fs->is_array()) throw DataError(w + ".feature_switch: expected a list of strings");
  for (const Json& x : *fs) {
    if (!x.is_string()) throw DataError(w + ".feature_switch: expected a list of strings");
    const std::string v = x.get<std::string>();
    if (v == "normal" || v == "2.1.0" || (v == "specify_device" && specify_device)) return true;
  }
  return false;
}

std::string parse_statement(const std::string& text, const std::string& w) {
  syntax::Tree t = syntax::parse("insert_content", text + "\n");
  if (!t.ok())
    throw DataError(w + ": \"" + text + "\" is not Python statements" +
                    (t.diagnostics().empty() ? std::string() : ": " + t.diagnostics()[0].message));
  return text;
}

void parse_ascend_rules(Catalogue::Impl& impl, const std::string& name, const Json& rules,
                        const std::string& target, bool specify_device) {
  if (!rules.is_object()) throw DataError(name + ": rules: expected an object");
  static constexpr std::string_view kKinds[] = {
      "InsertMainFileRule",   "InsertGlobalRule",  "ArgsModifyRule",      "FuncNameModifyRule",
      "ModuleNameModifyRule", "ReplaceStringRule", "ReplaceAttributeRule"};
  for (const auto& [kind, list] : rules.items()) {
    std::string where = name + ": rules." + kind;
    if (std::find(std::begin(kKinds), std::end(kKinds), kind) == std::end(kKinds))
      throw DataError(where +
                      ": is not a rule kind torchport can run (expected InsertMainFileRule, "
                      "InsertGlobalRule, ArgsModifyRule, FuncNameModifyRule, "
                      "ModuleNameModifyRule, ReplaceStringRule or ReplaceAttributeRule)");
    if (!list.is_array()) throw DataError(where + ": expected a list");
    std::size_t i = 0;
    for (const Json& r : list) {
      const std::string idx = "[" + std::to_string(i++) + "]";
      std::string w = where + idx;
      const std::string source = "custom rules " + name + " (" + kind + idx + ")";
      if (!r.is_object()) throw DataError(w + ": expected an object");
      if (!switched_on(r, w, specify_device)) continue;
      if (kind == "ArgsModifyRule") {
        impl.arg_rules.push_back(parse_arg_rule(r, w, source, target));
        continue;
      }
      if (kind == "InsertMainFileRule")
        throw DataError(
            w +
            ": InsertMainFileRule cannot be expressed: it inserts into the main file of "
            "Ascend's `distributed -m FILE` mode, and torchport has no main file (rules whose "
            "feature_switch is only \"distributed\" are skipped)");
      if (kind == "InsertGlobalRule") {
        InsertRule ir;
        ir.import_key_word = str_field(r, "import_key_word", w, false);
        auto c = r.find("insert_content");
        if (c == r.end() || !c->is_array() || c->empty())
          throw DataError(w + ": missing list \"insert_content\"");
        std::size_t k = 0;
        for (const Json& x : *c) {
          const std::string wk = w + ".insert_content[" + std::to_string(k++) + "]";
          if (!x.is_string()) throw DataError(wk + ": expected a string");
          ir.content.push_back(parse_statement(x.get<std::string>(), wk));
        }
        ir.target = target;
        ir.source = source;
        impl.custom_rules.inserts.push_back(std::move(ir));
        continue;
      }
      if (kind == "ReplaceStringRule") {
        StringRule sr;
        sr.str_old = str_field(r, "str_old", w, true);
        sr.str_new = str_field(r, "str_new", w, true);
        if (sr.str_old.empty()) throw DataError(w + ".str_old: empty");
        for (const std::string* f : {&sr.str_old, &sr.str_new})
          if (f->find_first_of("\"'\\\n\r{}") != std::string::npos)
            throw DataError(w + ": \"" + *f +
                            "\" cannot be expressed: quotes, backslashes, braces and line "
                            "breaks would change the string literal's syntax");
        auto st = r.find("strict");
        if (st != r.end()) {
          if (!st->is_boolean()) throw DataError(w + ".strict: expected true or false");
          sr.strict = st->get<bool>();
        }
        sr.target = target;
        sr.source = source;
        impl.custom_rules.strings.push_back(std::move(sr));
        continue;
      }
      std::string old_name = str_field(r, "old_name", w, true);
      std::string new_name = str_field(r, "new_name", w, true);
      if (!dotted_name(old_name))
        throw DataError(w + ".old_name: \"" + old_name + "\" is not a name or a dotted name");
      if (!dotted_name(new_name))
        throw DataError(w + ".new_name: \"" + new_name + "\" is not a name or a dotted name");
      const bool dotless = old_name.find('.') == std::string::npos;
      if (dotless && kind != "ModuleNameModifyRule") {
        // A called name or an attribute on any object, whatever it resolves to.
        if (new_name.find('.') != std::string::npos)
          throw DataError(w + ": " + kind + " cannot be expressed: \"" + old_name +
                          "\" matches a name on any object, which cannot become the dotted \"" +
                          new_name + "\"");
        auto& list2 =
            kind == "FuncNameModifyRule" ? impl.custom_rules.calls : impl.custom_rules.attributes;
        list2.push_back({old_name, new_name, target, source});
        continue;
      }
      Entry e;
      e.family = "custom";
      Mapping m;
      m.status = Status::Supported;
      m.source = source;
      if (kind == "FuncNameModifyRule" || kind == "ReplaceAttributeRule") {
        e.kind = kind == "FuncNameModifyRule" ? Kind::Function : Kind::Attribute;
        e.api = old_name;
        m.replacement = new_name;
      } else {
        std::string parent = str_field(r, "parent_module", w, false);
        e.kind = Kind::Module;
        e.api = parent.empty() ? old_name : parent + "." + old_name;
        m.replacement = parent.empty() ? new_name : parent + "." + new_name;
      }
      e.summary = "custom rule: " + e.api + " -> " + m.replacement;
      e.targets.emplace(target, std::move(m));
      add_entry(impl, std::move(e), w, true);
    }
  }
}

void parse_targets(Catalogue::Impl& impl, const std::string& name, const std::string& text) {
  Json doc = Json::parse(text);
  auto it = doc.find("targets");
  if (it == doc.end() || !it->is_array()) throw DataError(name + ": missing list \"targets\"");
  if (auto c = doc.find("cuda"); c != doc.end()) {
    if (!c->is_object()) throw DataError(name + ": cuda: expected an object");
    impl.cuda_amp_dtype = str_field(*c, "amp_dtype", name + ": cuda", false);
  }
  std::size_t i = 0;
  for (const Json& t : *it) {
    std::string where = name + ": targets[" + std::to_string(i++) + "]";
    if (!t.is_object()) throw DataError(where + ": expected an object");
    Target out;
    out.name = str_field(t, "name", where, true);
    out.vendor = str_field(t, "vendor", where, true);
    out.title = str_field(t, "title", where, false);
    out.package = str_field(t, "package", where, false);
    out.device = str_field(t, "device", where, false);
    out.module = str_field(t, "module", where, true);
    out.import_stmt = str_field(t, "import", where, false);
    out.install = str_field(t, "install", where, true);
    out.requirement = str_field(t, "requirement", where, false);
    out.backend = str_field(t, "backend", where, false);
    out.visible_devices = str_field(t, "visible_devices", where, false);
    out.device_id_env = str_field(t, "device_id_env", where, false);
    out.amp_device = str_field(t, "amp_device", where, false);
    out.min_torch = str_field(t, "min_torch", where, false);
    out.torch_versions = str_list(t, "torch_versions", where);
    out.no_dtypes = str_list(t, "no_dtypes", where);
    out.amp_dtype = str_field(t, "amp_dtype", where, false);
    out.device_index = bool_field(t, "device_index", where, true);
    out.host = bool_field(t, "host", where, false);
    out.profiler_activity = str_field(t, "profiler_activity", where, false);
    out.rank_loop_launcher = str_field(t, "rank_loop_launcher", where, false);
    if (auto fb = t.find("fallback"); fb != t.end()) {
      if (!fb->is_object()) throw DataError(where + ".fallback: expected an object");
      out.fallback.default_behaviour = str_field(*fb, "default", where + ".fallback", false);
      out.fallback.env = str_field(*fb, "env", where + ".fallback", false);
      out.fallback.env_effect = str_field(*fb, "env_effect", where + ".fallback", false);
      out.fallback.note = str_field(*fb, "note", where + ".fallback", false);
    }
    out.notes = str_field(t, "notes", where, false);
    out.sources = str_list(t, "sources", where);
    if (out.sources.empty()) throw DataError(where + ": missing field \"sources\"");
    if (auto f = t.find("facts"); f != t.end()) {
      if (!f->is_object()) throw DataError(where + ".facts: expected an object");
      for (const auto& [fact, src] : f->items()) {
        if (!src.is_string() || src.get<std::string>().empty())
          throw DataError(where + ".facts." + fact + ": expected a source (a non-empty string)");
        if (!t.contains(fact))
          throw DataError(where + ".facts." + fact + ": names no field of the target");
        out.facts.emplace_back(fact, src.get<std::string>());
      }
    }
    impl.targets.push_back(std::move(out));
  }
}

/// A support document's lists (all but its "target") into `lists`.
void parse_support_lists(SupportLists& lists, const std::string& name, const Json& doc) {
  lists.source = str_field(doc, "source", name, true);
  lists.judge_prefix = str_field(doc, "judge_prefix", name, false);
  auto v = doc.find("versions");
  if (v == doc.end() || !v->is_object()) throw DataError(name + ": missing object \"versions\"");
  for (const auto& [ver, body] : v->items()) {
    std::string where = name + ": versions." + ver;
    VersionList& vl = lists.versions[ver];
    vl.parts = version_parts(ver);
    for (const std::string& api : str_list(body, "supported", where))
      vl.put(api, Status::Supported, "");
    for (const char* key : {"partial", "unsupported"}) {
      auto m = body.find(key);
      if (m == body.end()) continue;
      if (!m->is_object()) throw DataError(where + "." + key + ": expected an object");
      const Status status =
          std::string_view(key) == "partial" ? Status::Partial : Status::Unsupported;
      for (const auto& [api, tip] : m->items()) {
        if (!tip.is_string())
          throw DataError(where + "." + key + "." + api + ": expected a string");
        vl.put(api, status, tip.get<std::string>());
      }
    }
  }
}

void parse_support(Catalogue::Impl& impl, const std::string& name, const std::string& text) {
  const Json doc = Json::parse(text);
  const std::string target = str_field(doc, "target", name, true);
  parse_support_lists(impl.support[target], name, doc);
}

/// An embedded support document, parsed on first use; its "target" is its file's name.
/// Reads an embedded support document straight into its lists with nlohmann's SAX interface:
/// no document tree is built for the catalogue's largest files (the lists run to thousands of
/// names a version). Reads what parse_support_lists() reads; anything else in the document is
/// skipped. A document of another shape is an error (the embedded data is checked by the
/// tests, which also compare these lists with parse_support_lists' from data/).
class SupportReader : public nlohmann::json_sax<Json> {
 public:
  SupportReader(SupportLists& lists, const std::string& name) : lists_(lists), name_(name) {}
  std::string target;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool string(string_t& s) override {
    if (skip_ > 0) return true;
    switch (at_) {
      case At::RootField:
        if (key_ == "target") target = s;
        if (key_ == "source") lists_.source = s;
        if (key_ == "judge_prefix") lists_.judge_prefix = s;
        at_ = At::Root;
        return true;
      case At::Supported:
        version_->put(s, Status::Supported, "");
        return true;
      case At::TipField:
        version_->put(key_, tips_, s);
        at_ = At::Tips;
        return true;
      default:
        return wrong("a string");
    }
  }
  bool start_object(std::size_t) override {
    if (skip_ > 0 || (at_ == At::RootField && key_ != "versions") || at_ == At::ListField) {
      ++skip_;
      return true;
    }
    switch (at_) {
      case At::Start:
        at_ = At::Root;
        return true;
      case At::RootField:
        at_ = At::Versions;
        return true;
      case At::VersionField:
        version_ = &lists_.versions[key_];
        version_->parts = version_parts(key_);
        at_ = At::Version;
        return true;
      case At::TipsField:
        at_ = At::Tips;
        return true;
      default:
        return wrong("an object");
    }
  }
  bool key(string_t& k) override {
    if (skip_ > 0) return true;
    key_ = k;
    switch (at_) {
      case At::Root:
        at_ = At::RootField;
        return true;
      case At::Versions:
        at_ = At::VersionField;
        return true;
      case At::Version:
        at_ = k == "supported"                       ? At::SupportedField
              : k == "partial" || k == "unsupported" ? At::TipsField
                                                     : At::ListField;
        tips_ = k == "partial" ? Status::Partial : Status::Unsupported;
        return true;
      case At::Tips:
        at_ = At::TipField;
        return true;
      default:
        return wrong("a key");
    }
  }
  bool end_object() override {
    if (skip_ > 0) return done_skipping();
    at_ = at_ == At::Tips ? At::Version : at_ == At::Version ? At::Versions : At::Root;
    return true;
  }
  bool start_array(std::size_t) override {
    if (skip_ > 0 || at_ == At::RootField || at_ == At::ListField) {
      ++skip_;
      return true;
    }
    if (at_ != At::SupportedField) return wrong("a list");
    at_ = At::Supported;
    return true;
  }
  bool end_array() override {
    if (skip_ > 0) return done_skipping();
    at_ = At::Version;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw DataError(name_ + ": " + e.what());
  }

 private:
  // Where the reader is: a *Field state has read the key whose value comes next.
  enum class At {
    Start,
    Root,
    RootField,
    Versions,
    VersionField,
    Version,
    SupportedField,
    Supported,
    TipsField,
    Tips,
    TipField,
    ListField
  };
  bool value() {  // a scalar: kept nowhere
    if (skip_ > 0) return true;
    if (at_ == At::RootField)
      at_ = At::Root;
    else if (at_ == At::ListField)
      at_ = At::Version;
    else
      return wrong("this value");
    return true;
  }
  bool done_skipping() {
    if (--skip_ == 0) at_ = at_ == At::ListField ? At::Version : At::Root;
    return true;
  }
  bool wrong(const char* what) {
    throw DataError(name_ + ": unexpected " + what + " near \"" + key_ + "\"");
  }

  SupportLists& lists_;
  const std::string& name_;
  At at_ = At::Start;
  std::string key_;
  Status tips_ = Status::Unsupported;
  VersionList* version_ = nullptr;
  int skip_ = 0;  // depth inside a value that is skipped
};

void parse_lazy_support(LazySupport& lazy, std::string_view target) {
  try {
    SupportReader reader(lazy.lists, lazy.name);
    Json::sax_parse(lazy.text, &reader);
    if (reader.target != target)
      throw DataError(lazy.name + ": target: not the file's name (" + std::string(target) + ")");
  } catch (const std::exception& e) {
    // The embedded data is checked by the tests; a failure here is a build defect.
    std::fprintf(stderr, "torchport: internal error: embedded catalogue: %s\n", e.what());
    std::abort();
  }
}

void parse_companions(Catalogue::Impl& impl, const std::string& name, const std::string& text) {
  const Json doc = Json::parse(text);
  auto it = doc.find("companions");
  if (it == doc.end() || !it->is_object()) throw DataError(name + ": expected \"companions\"");
  for (const auto& [dist, rows] : it->items()) {
    if (!rows.is_array()) throw DataError(name + ": companions." + dist + ": expected a list");
    std::vector<Companion>& out = impl.companions[dist];
    for (const Json& r : rows) {
      const std::string where = name + ": companions." + dist;
      out.push_back(
          Companion{str_field(r, "version", where, true), str_field(r, "torch", where, true)});
    }
  }
}

void parse_advice(Catalogue::Impl& impl, const std::string& name, const std::string& text) {
  Json doc = Json::parse(text);
  std::string target = str_field(doc, "target", name, true);
  AdviceTable& t = impl.advice[target];
  auto obj = [&](std::string_view key) -> const Json& {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_object())
      throw DataError(name + ": missing object \"" + std::string(key) + "\"");
    return *it;
  };
  t.source_advice = str_field(obj("source"), "precision_performance", name + ": source", true);
  t.source_affinity = str_field(obj("source"), "affinity", name + ": source", true);
  auto strings = [&](std::string_view key, auto& dst) {
    for (const auto& [k, v] : obj(key).items()) {
      if (!v.is_string())
        throw DataError(name + ": " + std::string(key) + "." + k + ": expected a string");
      dst.emplace_back(k, v.template get<std::string>());
    }
  };
  std::vector<std::pair<std::string, std::string>> tmp;
  strings("precision", tmp);
  t.precision.insert(tmp.begin(), tmp.end());
  tmp.clear();
  strings("performance", tmp);
  t.performance.insert(tmp.begin(), tmp.end());
  tmp.clear();
  strings("affinity_calls", tmp);
  t.affinity_calls.insert(tmp.begin(), tmp.end());
  strings("project", t.project);
  auto params = doc.find("parameters");
  if (params == doc.end() || !params->is_array())
    throw DataError(name + ": missing array \"parameters\"");
  for (std::size_t i = 0; i < params->size(); ++i) {
    const Json& p = (*params)[i];
    std::string where = name + ": parameters[" + std::to_string(i) + "]";
    AdviceParameter ap;
    ap.api = str_field(p, "api", where, true);
    ap.parameter = str_field(p, "parameter", where, true);
    ap.expected = str_field(p, "expected", where, false);
    ap.unexpected = str_field(p, "unexpected", where, false);
    ap.default_value = str_field(p, "default", where, false);
    ap.tip = str_field(p, "tip", where, true);
    auto pos = p.find("positions");
    if (pos == p.end() || !pos->is_array())
      throw DataError(where + ": missing array \"positions\"");
    for (const Json& n : *pos) {
      if (!n.is_number_unsigned()) throw DataError(where + ".positions: expected numbers");
      ap.positions.push_back(n.get<std::uint32_t>());
    }
    t.parameters.push_back(std::move(ap));
  }
  auto suggest = doc.find("suggest");
  if (suggest == doc.end() || !suggest->is_array())
    throw DataError(name + ": missing array \"suggest\"");
  for (std::size_t i = 0; i < suggest->size(); ++i) {
    std::string where = name + ": suggest[" + std::to_string(i) + "]";
    const Json& s = (*suggest)[i];
    t.suggest.push_back({str_field(s, "name", where, true), str_list(s, "dependency", where),
                         str_field(s, "tip", where, true)});
  }
  for (const auto& [k, v] : obj("affinity_functions").items())
    t.affinity_functions[k] = {str_list(v, "parameters", name + ": affinity_functions." + k),
                               str_field(v, "affinity", name + ": affinity_functions." + k, true)};
  for (const auto& [k, v] : obj("affinity_classes").items())
    t.affinity_classes[k] = {str_field(v, "parent", name + ": affinity_classes." + k, true),
                             str_field(v, "affinity", name + ": affinity_classes." + k, true)};
  t.index();
}

}  // namespace

std::optional<Catalogue> Catalogue::parse(const Documents& docs, std::string* error) {
  Catalogue cat;
  Impl& impl = *cat.impl_;
  std::string current;
  try {
    current = docs.targets.first;
    parse_targets(impl, docs.targets.first, docs.targets.second);
    std::set<std::string> names;
    for (const Target& t : impl.targets) names.insert(t.name);
    for (const auto& [name, text] : docs.entries) {
      current = name;
      parse_entries(impl, name, text, names);
    }
    for (const auto& [name, text] : docs.support) {
      current = name;
      parse_support(impl, name, text);
    }
    for (const auto& [name, text] : docs.advice) {
      current = name;
      parse_advice(impl, name, text);
    }
    for (const auto& [name, text] : docs.companions) {
      current = name;
      parse_companions(impl, name, text);
    }
  } catch (const DataError& e) {
    if (error) *error = e.what();
    return std::nullopt;
  } catch (const Json::exception& e) {
    if (error) *error = current + ": " + e.what();
    return std::nullopt;
  }
  return cat;
}

void AdviceTable::index() {
  call_names.clear();
  method_names.clear();
  for (const auto* table : {&precision, &performance, &affinity_calls})
    for (const auto& [api, _] : *table) call_names.insert(api);
  for (const Suggest& s : suggest) call_names.insert(s.dependency.begin(), s.dependency.end());
  for (const AdviceParameter& p : parameters)
    (p.api.find('.') != std::string::npos ? call_names : method_names).insert(p.api);
  indexed = true;
}

std::vector<std::string> Target::unverified() const {
  std::vector<std::string> out;
  for (const auto& [fact, source] : facts)
    if (source.starts_with("unverified:")) out.push_back(fact);
  return out;
}

std::optional<Catalogue::Documents> Catalogue::read_dir(const std::string& dir,
                                                        std::string* error) {
  namespace fs = std::filesystem;
  auto slurp = [&](const fs::path& p, std::string& out) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      if (error) *error = p.string() + ": cannot read";
      return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
  };
  Documents docs;
  const fs::path root(dir);
  docs.targets.first = (root / "targets.json").string();
  if (!slurp(root / "targets.json", docs.targets.second)) return std::nullopt;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(root / "catalogue", ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    std::pair<std::string, std::string> doc{p.string(), ""};
    if (!slurp(p, doc.second)) return std::nullopt;
    if (p.parent_path().filename() == "support")
      docs.support.push_back(std::move(doc));
    else if (p.parent_path().filename() == "advice")
      docs.advice.push_back(std::move(doc));
    else if (p.parent_path().filename() == "companions")
      docs.companions.push_back(std::move(doc));
    else
      docs.entries.push_back(std::move(doc));
  }
  return docs;
}

const Catalogue& Catalogue::builtin() {
  static const Catalogue cat = [] {
    if (const char* dir = std::getenv("TORCHPORT_DATA_DIR"); dir && *dir) {
      std::string error;
      std::optional<Documents> docs = read_dir(dir, &error);
      std::optional<Catalogue> parsed;
      if (docs) parsed = parse(*docs, &error);
      if (!parsed) {
        std::fprintf(stderr, "torchport: error: TORCHPORT_DATA_DIR=%s: %s\n", dir, error.c_str());
        std::exit(2);
      }
      return std::move(*parsed);
    }
    Documents docs;
    std::vector<const embedded::Blob*> support;  // parsed on first use (LazySupport)
    constexpr std::string_view kSupport = "catalogue/support/";
    for (const embedded::Blob* b = embedded::begin(); b != embedded::end(); ++b) {
      if (b->name.starts_with(kSupport)) {
        support.push_back(b);
        continue;
      }
      std::pair<std::string, std::string> doc{std::string(b->name), std::string(b->data)};
      if (b->name == "targets.json")
        docs.targets = std::move(doc);
      else if (b->name.starts_with("catalogue/advice/"))
        docs.advice.push_back(std::move(doc));
      else if (b->name.starts_with("catalogue/companions/"))
        docs.companions.push_back(std::move(doc));
      else if (b->name.starts_with("catalogue/"))
        docs.entries.push_back(std::move(doc));
    }
    std::string error;
    std::optional<Catalogue> parsed = parse(docs, &error);
    if (!parsed) {
      // The embedded data is checked by the tests; a failure here is a build defect.
      std::fprintf(stderr, "torchport: internal error: embedded catalogue: %s\n", error.c_str());
      std::abort();
    }
    for (const embedded::Blob* b : support) {
      auto lazy = std::make_shared<LazySupport>();
      lazy->name = std::string(b->name);
      lazy->text = b->data;
      std::string_view target = b->name.substr(kSupport.size());
      target = target.substr(0, target.rfind(".json"));
      parsed->impl_->lazy_support.emplace(std::string(target), std::move(lazy));
    }
    return std::move(*parsed);
  }();
  return cat;
}

std::optional<Catalogue> Catalogue::with_rules(const std::string& name, const std::string& text,
                                               const std::string& target,
                                               std::string* error) const {
  return with_rules(name, text, target, false, error);
}

std::optional<Catalogue> Catalogue::with_rules(const std::string& name, const std::string& text,
                                               const std::string& target, bool specify_device,
                                               std::string* error) const {
  Catalogue out;
  try {
    Json doc = Json::parse(text);
    if (!doc.is_object()) throw DataError(name + ": expected a JSON object");
    // The built-in catalogue (its vendor lists included) is copied only for a file that is JSON:
    // a refused file costs its parse, not the copy (rules_file_fuzzer ran 5 inputs a second).
    *out.impl_ = *impl_;
    if (auto r = doc.find("rules"); r != doc.end()) {
      parse_ascend_rules(*out.impl_, name, *r, target, specify_device);
    } else if (doc.contains("entries")) {
      std::set<std::string> names;
      for (const Target& t : impl_->targets) names.insert(t.name);
      parse_entries(*out.impl_, name, doc, names, true);
    } else {
      throw DataError(name +
                      ": expected a top-level \"rules\" object (Ascend's custom-rule "
                      "format) or an \"entries\" list (torchport's catalogue format)");
    }
  } catch (const DataError& e) {
    if (error) *error = e.what();
    return std::nullopt;
  } catch (const Json::exception& e) {
    if (error) *error = name + ": " + e.what();
    return std::nullopt;
  }
  return out;
}

const std::vector<Entry>& Catalogue::entries() const { return impl_->entries; }

const Entry* Catalogue::find(std::string_view api) const {
  if (!impl_->quick.test(quick_bit(api))) return nullptr;
  auto it = impl_->by_api.find(api);
  return it == impl_->by_api.end() ? nullptr : &impl_->entries[it->second];
}

const Mapping* Catalogue::lookup(std::string_view api, std::string_view target) const {
  const Entry* e = find(api);
  if (!e) return nullptr;
  auto it = e->targets.find(target);
  return it == e->targets.end() ? nullptr : &it->second;
}

const std::vector<ArgRule>& Catalogue::arg_rules() const { return impl_->arg_rules; }

const CustomRules& Catalogue::custom_rules() const { return impl_->custom_rules; }

const std::vector<Target>& Catalogue::targets() const { return impl_->targets; }

const std::string& Catalogue::cuda_amp_dtype() const { return impl_->cuda_amp_dtype; }

const std::vector<VersionChange>& Catalogue::version_changes() const {
  return impl_->version_changes;
}

const Target* Catalogue::target(std::string_view name) const {
  for (const Target& t : impl_->targets)
    if (t.name == name) return &t;
  return nullptr;
}

const std::vector<Companion>* Catalogue::companions(std::string_view dist) const {
  auto it = impl_->companions.find(dist);
  return it == impl_->companions.end() ? nullptr : &it->second;
}

const AdviceTable* Catalogue::advice(std::string_view target) const {
  auto it = impl_->advice.find(target);
  return it == impl_->advice.end() ? nullptr : &it->second;
}

namespace {

/// The support lists of `target`, nullptr when it has none.
const SupportLists* support_lists(const Catalogue::Impl& impl, std::string_view target) {
  if (auto it = impl.support.find(target); it != impl.support.end()) return &it->second;
  auto it = impl.lazy_support.find(target);
  if (it == impl.lazy_support.end()) return nullptr;
  LazySupport& lazy = *it->second;
  std::call_once(lazy.once, [&] { parse_lazy_support(lazy, target); });
  return &lazy.lists;
}

}  // namespace

std::vector<std::string> Catalogue::support_versions(std::string_view target) const {
  std::vector<std::string> out;
  const SupportLists* lists = support_lists(*impl_, target);
  if (!lists) return out;
  for (const auto& [v, _] : lists->versions) out.push_back(v);
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return version_less(a, b); });
  return out;
}

bool Catalogue::has_support_lists(std::string_view target) const {
  const SupportLists* lists = support_lists(*impl_, target);
  return lists && !lists->versions.empty();
}

namespace {

using Version = std::pair<const std::string, VersionList>;

/// The version list api_support() reads for `torch_version` ("" = the newest): the exact
/// version, else the newest list not newer than it, else the oldest list, as
/// support_versions() sorted oldest first would give (later of equal versions), unsorted.
const Version& chosen_version(const SupportLists& lists, std::string_view torch_version) {
  const Version* newest = nullptr;   // the last of the greatest
  const Version* oldest = nullptr;   // the first of the least
  const Version* fitting = nullptr;  // the last of the greatest not newer than torch_version
  // (version_less compares as version_parts' lists do)
  for (const Version& entry : lists.versions) {
    const std::vector<long>& v = entry.second.parts;
    if (!newest || !(v < newest->second.parts)) newest = &entry;
    if (!oldest || v < oldest->second.parts) oldest = &entry;
    if (!torch_version.empty() && !version_less(torch_version, entry.first) &&
        (!fitting || !(v < fitting->second.parts)))
      fitting = &entry;
  }
  return *(torch_version.empty() ? newest : fitting ? fitting : oldest);
}

/// The status and tip of `api` in the chosen list `vl` (Unknown for an unlisted API under the
/// judged prefix), or nullopt: the source is the caller's to fill.
std::optional<ApiSupport> listed(const SupportLists& lists, const VersionList& vl,
                                 std::string_view api) {
  ApiSupport out;
  if (auto it = vl.apis.find(api); it != vl.apis.end()) {
    out.status = it->second.status;
    out.tip = it->second.tip;
  } else if (!lists.judge_prefix.empty() && api.starts_with(lists.judge_prefix)) {
    out.status = Status::Unknown;
  } else {
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<ApiSupport> Catalogue::api_support(std::string_view api, std::string_view target,
                                                 std::string_view torch_version) const {
  const SupportLists* found = support_lists(*impl_, target);
  if (!found || found->versions.empty()) return std::nullopt;
  const Version& chosen = chosen_version(*found, torch_version);
  // (no allocation until there is an answer)
  std::optional<ApiSupport> out = listed(*found, chosen.second, api);
  if (out) out->source = found->source + " (torch " + chosen.first + ")";
  return out;
}

struct SupportQuery::Chosen {
  const SupportLists& lists;
  const VersionList& list;  // the chosen version's
  std::string source;       // as api_support() writes it
};

SupportQuery Catalogue::support_query(std::string_view target,
                                      std::string_view torch_version) const {
  SupportQuery query;
  const SupportLists* found = support_lists(*impl_, target);
  if (!found || found->versions.empty()) return query;
  const Version& chosen = chosen_version(*found, torch_version);
  query.chosen_ = std::make_shared<const SupportQuery::Chosen>(
      SupportQuery::Chosen{*found, chosen.second, found->source + " (torch " + chosen.first + ")"});
  return query;
}

std::optional<ApiSupport> SupportQuery::find(std::string_view api) const {
  if (!chosen_) return std::nullopt;
  std::optional<ApiSupport> out = listed(chosen_->lists, chosen_->list, api);
  if (out) out->source = chosen_->source;
  return out;
}

}  // namespace torchport::catalogue
