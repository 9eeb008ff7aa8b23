#include <emmintrin.h>
#include <torchport/rules/context.h>
#include <torchport/rules/engine.h>
#include <torchport/rules/resolve.h>
#include <torchport/syntax/tree.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace torchport::rules {

namespace {

/// The two bytes' matches in the 16 windows from `s`: bit k for window s + k.
inline unsigned block_mask(const char* a, const char* b, std::size_t s, __m128i r, __m128i o) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + s));
  const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + s));
  return static_cast<unsigned>(
      _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(x, r), _mm_cmpeq_epi8(y, o))));
}

/// The first block of 16 windows from window `s` on (s, s + 16, ...) where some window has
/// both bytes, `mask` saying which; or the first block that does not fit. Four blocks a step
/// while they fit, and no call in the loop, so that the two patterns stay in registers.
std::size_t next_block(const char* a, const char* b, std::size_t s, std::size_t windows, __m128i r,
                       __m128i o, unsigned& mask) {
  for (; s + 64 <= windows; s += 64) {
    auto both = [&](std::size_t k) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + s + k));
      const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + s + k));
      return _mm_and_si128(_mm_cmpeq_epi8(x, r), _mm_cmpeq_epi8(y, o));
    };
    const __m128i any =
        _mm_or_si128(_mm_or_si128(both(0), both(16)), _mm_or_si128(both(32), both(48)));
    if (_mm_movemask_epi8(any) != 0) break;
  }
  for (; s + 16 <= windows; s += 16) {
    mask = block_mask(a, b, s, r, o);
    if (mask != 0) return s;
  }
  return s;
}

}  // namespace

bool contains(std::string_view text, std::string_view word, std::size_t rare) {
  if (rare >= word.size()) return text.find(word) != std::string_view::npos;  // no such byte
  if (text.size() < word.size()) return false;
  const std::size_t w = word.size();
  const char* const begin = text.data();
  const std::size_t windows = text.size() - w + 1;  // a window starts at [0, windows)
  std::size_t s = 0;
  if (w >= 2) {
    // A block of 16 windows reads bytes [s + rare, s + rare + 16) and [s + other, ...): the
    // last of them is at most (windows - 1) + (w - 1) = text.size() - 1.
    const std::size_t other = rare == 0 ? w - 1 : 0;
    const __m128i r = _mm_set1_epi8(word[rare]);
    const __m128i o = _mm_set1_epi8(word[other]);
    for (;;) {
      unsigned mask = 0;
      s = next_block(begin + rare, begin + other, s, windows, r, o, mask);
      if (s + 16 > windows) break;
      for (; mask != 0; mask &= mask - 1) {
        if (std::memcmp(begin + s + static_cast<unsigned>(__builtin_ctz(mask)), word.data(), w) ==
            0)
          return true;
      }
      s += 16;
    }
  }
  // word[rare] of the windows left: from begin + s + rare, to this end (excluded).
  const char* const end = begin + windows + rare;
  for (const char* p = begin + s + rare; p < end; ++p) {
    p = static_cast<const char*>(std::memchr(p, word[rare], static_cast<std::size_t>(end - p)));
    if (!p) return false;
    if (std::memcmp(p - rare, word.data(), w) == 0) return true;
  }
  return false;
}

using semantic::TokenIndex;
using syntax::TokenKind;

std::string_view to_string(Operation op) {
  switch (op) {
    case Operation::Insert:
      return "INSERT";
    case Operation::Modify:
      return "MODIFY";
    case Operation::Delete:
      return "DELETE";
    case Operation::Unsupported:
      return "UNSUPPORTED";
    case Operation::Unknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

std::string_view to_string(Advice::Kind k) {
  switch (k) {
    case Advice::Kind::Precision:
      return "precision";
    case Advice::Kind::Performance:
      return "performance";
    case Advice::Kind::Affinity:
      return "affinity";
  }
  return "performance";
}

namespace {

constexpr RuleInfo kRegistry[] = {
    {"TP001", "cuda-amp-import",
     "imports of torch.cuda.amp become imports of torch.amp; `import torch.cuda` becomes "
     "`import torch`",
     "imports"},
    {"TP002", "cuda-only-package", "CUDA-only third-party packages are flagged with an alternative",
     "imports"},
    {"TP100", "cuda-module-api",
     "torch.cuda.*, torch.backends.cudnn/cuda and other catalogued APIs", "cuda_api", Subject::Cuda,
     /*renames_in_place=*/true},
    {"TP110", "sdpa-kernel",
     "torch.backends.cuda.sdp_kernel(enable_...=) becomes "
     "torch.nn.attention.sdpa_kernel([backends])",
     "sdpa_kernel"},
    {"TP120", "oom-text",
     "a test of CUDA's out-of-memory text in an exception becomes "
     "isinstance(e, torch.OutOfMemoryError)",
     "oom_text"},
    {"TP130", "nvidia-smi",
     "nvidia-smi in a subprocess: a count of its GPU list becomes the target's device count",
     "nvidia_smi"},
    {"TP200", "cuda-amp", "torch.cuda.amp autocast/GradScaler become torch.amp with a device type",
     "amp"},
    {"TP201", "amp-default-dtype",
     "autocast relying on CUDA's float16 default gets dtype=torch.float16 where the target's "
     "default differs (a labelled numerics change)",
     "amp"},
    {"TP210", "float64-on-target",
     "float64 dtypes, .double(), *DoubleTensor and set_default_dtype(float64) on targets that lack "
     "float64",
     "dtypes", Subject::TargetLimit},
    {"TP300", "device-string", "\"cuda\", \"cuda:N\" and f\"cuda:{i}\" in device contexts",
     "device"},
    {"TP301", "cuda-method", ".cuda(...) on tensors and modules", "device"},
    {"TP302", "is-cuda", ".is_cuda on tensors", "device"},
    {"TP303", "specify-device",
     "--specify-device: device indices from the vendor's device-index variable", "specify_device"},
    {"TP304", "device-value",
     "integer device indices and device/backend literals whose value reaches a device position "
     "(the device-value layer)",
     "device_value"},
    {"TP310", "device-flags",
     "the command line's --cuda/--no-cuda flag, use_cuda and cuda_kwargs ported as one unit to "
     "the target's idiom (--accel, use_accel; old flags kept as deprecated aliases)",
     "idiom"},
    {"TP400", "nccl-backend",
     "nccl in init_process_group/new_group, Backend.NCCL, is_nccl_available", "distributed"},
    {"TP401", "data-parallel", "torch.nn.DataParallel is flagged with the DDP recommendation",
     "distributed"},
    {"TP402", "ddp-device-ids",
     "DDP device_ids=/output_device=, init_process_group device_id= on cpu and accelerator",
     "distributed"},
    {"TP403", "process-count",
     "mp.spawn counts from torch.cuda.device_count(): a CPU path or a guard, per target",
     "distributed"},
    {"TP410", "ddp-setup",
     "--distributed: process group from torchrun's environment, the rank's device, helpers", "ddp"},
    {"TP411", "ddp-wrap", "--distributed: the model variable wrapped in DistributedDataParallel",
     "ddp"},
    {"TP412", "data-parallel-to-ddp",
     "--distributed: torch.nn.DataParallel becomes DistributedDataParallel", "ddp"},
    {"TP413", "distributed-sampler",
     "--distributed: DistributedSampler for training DataLoaders, set_epoch in the epoch loop",
     "ddp"},
    {"TP414", "per-rank-batch", "--distributed: the global batch split between the ranks", "ddp"},
    {"TP415", "rank-zero-side-effect",
     "--distributed: print, logging, saving and file writes on rank 0 only", "ddp"},
    {"TP416", "destroy-process-group", "--distributed: destroy_process_group() at the end", "ddp"},
    {"TP417", "ddp-state-dict",
     "--distributed: state_dict()/load_state_dict() of the module inside DDP (no `module.`)",
     "ddp"},
    {"TP500", "cuda-env-var", "CUDA/NCCL environment variables used from Python", "env"},
    {"TP600", "profiler-activity", "ProfilerActivity.CUDA on cpu and accelerator",
     "profiler_activity"},
    {"TP700", "cuda-leftover",
     "CUDA device strings, NCCL names and integer devices no other rule rewrote are reported",
     "cuda_leftover"},
    {"TP800", "custom-args", "arguments rewritten by ArgsModifyRule entries of a --rules file",
     "custom_args"},
    {"TP801", "custom-func-name",
     "calls renamed by FuncNameModifyRule entries (dotless old_name) of a --rules file",
     "custom_rules"},
    {"TP802", "custom-string",
     "string literals rewritten by ReplaceStringRule entries of a --rules file", "custom_rules"},
    {"TP803", "custom-attribute",
     "attributes renamed by ReplaceAttributeRule entries (dotless old_name) of a --rules file",
     "custom_rules"},
    {"TP804", "custom-insert", "statements inserted by InsertGlobalRule entries of a --rules file",
     "custom_rules"},
    {"TP900", "target-import", "the target's import, `import torch` and the device variable",
     "insertions"},
    {"TP901", "custom-cuda-op", "custom CUDA operators in .cpp/.cu sources (cuda_op_list.csv)",
     "other_files"},
    {"TP902", "project-file", "CUDA-only requirements and CUDA settings in shell launchers",
     "other_files"},
    {"TP903", "custom-op-call", "calls of the project's own custom CUDA operators",
     "custom_op_calls"},
    {"TP950", "vendor-api-support",
     "torch APIs the vendor's per-version list marks unsupported, limited or unlisted",
     "vendor_lists"},
    {"TP960", "torch-version-change",
     "behaviour that changed between the source's torch and --torch-version (data/"
     "torch_versions.json)",
     "torch_versions", Subject::TorchVersion},
    // tools/new_rule.py: registry
};

// Incidental changes (context.h: incidental()): a change made only next to other CUDA changes.
struct IncidentalChange {
  Operation op;
  std::string_view code;
  std::string_view api;
};
constexpr IncidentalChange kIncidental[] = {
    // device.cc: torch.load without map_location gets one (the only TP300 insertion on it).
    {Operation::Insert, "TP300", "torch.load"},
};

// The families, in the order they are listed; check() runs them in a stable topological
// order of `after`, and the families that need the findings after all others.
constexpr FamilyInfo kFamilies[] = {
    {"imports", Input::PythonFile, NeedModel | NeedCatalogue, {}, run_imports},
    {"amp", Input::PythonFile, NeedModel | NeedCatalogue, {}, run_amp},
    {"profiler_activity", Input::PythonFile, NeedModel | NeedCatalogue, {}, run_profiler_activity},
    // ProfilerActivity.CUDA, the amp names and the float64 tensor types (dtypes) are claimed
    // (Context::handled) before the generic torch.cuda mappings.
    {"sdpa_kernel", Input::PythonFile, NeedTree | NeedModel, {}, run_sdpa_kernel},
    {"oom_text", Input::PythonFile, NeedTree | NeedModel, {}, run_oom_text},
    {"nvidia_smi", Input::PythonFile, NeedTree | NeedModel | NeedCatalogue, {}, run_nvidia_smi},
    {"cuda_api",
     Input::PythonFile,
     NeedModel | NeedCatalogue,
     {"amp", "profiler_activity", "dtypes", "sdpa_kernel"},
     run_cuda_api},
    // A dropped device index takes the findings inside it along (`.cuda(torch.cuda.x())`).
    {"device", Input::PythonFile, NeedTree | NeedModel | NeedCatalogue, {"cuda_api"}, run_device},
    // After device: a dropped device_id=/device_ids= takes the device rewrites inside it along.
    {"distributed",
     Input::PythonFile,
     NeedTree | NeedModel | NeedCatalogue,
     {"device"},
     run_distributed},
    {"env", Input::PythonFile, NeedModel | NeedCatalogue, {}, run_env},
    // TP902 in setup.py (a Python file); after env, whose findings its own used to follow.
    {"setup_requires", Input::PythonFile, NeedModel | NeedCatalogue, {"env"}, run_setup_requires},
    {"dtypes", Input::PythonFile, NeedModel | NeedCatalogue, {}, run_dtypes},
    // After the rewrites whose torch floor tells it which torch the output runs on.
    {"torch_versions",
     Input::PythonFile,
     NeedModel | NeedCatalogue,
     {"cuda_api", "device", "distributed", "oom_text"},
     run_torch_versions},
    {"custom_args",
     Input::PythonFile,
     NeedModel | NeedCatalogue | NeedFindings,
     {},
     run_custom_args},
    // After the built-in rules, whose rewrites win over the table's context-free ones.
    {"custom_rules",
     Input::PythonFile,
     NeedTree | NeedModel | NeedCatalogue | NeedFindings,
     {"custom_args"},
     run_custom_rules},
    // After the rules that rewrite a device or backend where it is used: it rewrites the values
    // that reach those places from elsewhere, and leaves what they took.
    {"device_value",
     Input::PythonFile,
     NeedTree | NeedModel | NeedCatalogue | NeedFindings,
     {"device", "distributed", "specify_device"},
     run_device_value},
    // Reports what is still CUDA-specific once every rewriting family has run.
    {"cuda_leftover",
     Input::PythonFile,
     NeedTree | NeedModel | NeedCatalogue | NeedFindings,
     {"custom_args", "custom_rules", "device_value"},
     run_cuda_leftover},
    // After device (TP300/TP301), whose rewrites inside a replaced index it drops.
    {"specify_device",
     Input::PythonFile,
     NeedModel | NeedCatalogue,
     {"device"},
     run_specify_device},
    // Runs on the output of all the others (check_output(), the driver's output pass).
    {"idiom", Input::PythonOutput, NeedTree | NeedModel | NeedCatalogue, {}, run_idiom},
    // tools/new_rule.py: families
    {"insertions",
     Input::PythonFile,
     NeedModel | NeedCatalogue | NeedFindings | NeedSettled,
     {"cuda_leftover"},
     run_insertions},
    {"custom_op_calls",
     Input::PythonFile,
     NeedTree | NeedProject | NeedFindings,
     {"insertions"},
     run_custom_op_calls},
    {"vendor_lists",
     Input::PythonFile,
     NeedTree | NeedModel | NeedCatalogue | NeedSupportLists | NeedFindings,
     {"custom_op_calls"},
     run_vendor_lists},
    // --distributed only: its set-up goes after the statements insertions adds.
    {"ddp",
     Input::PythonFile,
     NeedTree | NeedModel | NeedCatalogue | NeedFindings,
     {"insertions"},
     run_ddp},
    {"other_files", Input::OtherFile, NeedCatalogue, {}, nullptr},
};

// Kahn's algorithm over `after`, taking the first ready family in table order; families that
// need the findings wait until every family without that need has run.
std::vector<const FamilyInfo*> topological_order() {
  std::vector<const FamilyInfo*> out;
  std::vector<bool> done(std::size(kFamilies), false);
  auto index = [](std::string_view name) -> std::size_t {
    for (std::size_t i = 0; i < std::size(kFamilies); ++i)
      if (kFamilies[i].name == name) return i;
    return std::size(kFamilies);
  };
  while (out.size() < std::size(kFamilies)) {
    bool progressed = false;
    for (std::size_t i = 0; i < std::size(kFamilies); ++i) {
      if (done[i]) continue;
      const FamilyInfo& f = kFamilies[i];
      bool ready = true;
      for (std::string_view a : f.after)
        if (!a.empty() && (index(a) == std::size(kFamilies) || !done[index(a)])) ready = false;
      if (f.needs & NeedFindings)
        for (std::size_t j = 0; j < std::size(kFamilies); ++j)
          if (!done[j] && !(kFamilies[j].needs & NeedFindings)) ready = false;
      if (!ready) continue;
      done[i] = true;
      out.push_back(&f);
      progressed = true;
      break;
    }
    if (!progressed) {
      // A cycle or an unknown name in `after`: a defect of the table, caught by the tests.
      std::fprintf(stderr, "torchport: internal error: the rule families' `after` lists loop\n");
      std::abort();
    }
  }
  return out;
}

std::vector<int> version_parts(std::string_view v) {
  std::vector<int> out;
  while (!v.empty()) {
    int x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{}) break;
    out.push_back(x);
    v.remove_prefix(static_cast<std::size_t>(p - v.data()));
    if (!v.empty() && v.front() == '.')
      v.remove_prefix(1);
    else
      break;
  }
  return out;
}

}  // namespace

std::span<const RuleInfo> registry() { return kRegistry; }

std::span<const FamilyInfo* const> families() {
  static const std::vector<const FamilyInfo*> order = topological_order();
  return order;
}

bool incidental(const Finding& f) {
  return std::any_of(std::begin(kIncidental), std::end(kIncidental),
                     [&](const IncidentalChange& c) {
                       return f.code == c.code && f.op == c.op && f.api == c.api;
                     });
}

const RuleInfo* find_rule(std::string_view code) {
  // The registry is in code order (a test checks it).
  const auto* it =
      std::lower_bound(std::begin(kRegistry), std::end(kRegistry), code,
                       [](const RuleInfo& r, std::string_view c) { return r.code < c; });
  return it != std::end(kRegistry) && it->code == code ? it : nullptr;
}

Subject subject_of(const Finding& f) {
  const RuleInfo* r = find_rule(f.code);
  return r ? r->subject : Subject::Cuda;
}

bool renames_in_place(const Finding& f) {
  const RuleInfo* r = find_rule(f.code);
  return r && r->renames_in_place && f.op == Operation::Modify;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto pa = version_parts(a), pb = version_parts(b);
  for (std::size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    int x = i < pa.size() ? pa[i] : 0, y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

Context::Context(const syntax::Tree& syntax_tree, const semantic::Model& model,
                 const catalogue::Catalogue& catalogue, const catalogue::Target& tgt,
                 const Options& options)
    : tree(syntax_tree), m(model), cat(catalogue), target(tgt), opts(options) {}

const std::string* Context::qualified_spanning(syntax::ByteRange r) const {
  auto by_range = [](const Qualified& a, const Qualified& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  };
  if (!qualified_) {
    std::vector<Qualified>& q = qualified_.emplace();
    for (const semantic::Reference& ref : m.references())
      if (!ref.qualified.empty())
        q.push_back({tree.tokens()[ref.first].begin, tree.tokens()[ref.last].end, &ref.qualified});
    // References come in source order, so the list is sorted already but for rare cases.
    if (!std::is_sorted(q.begin(), q.end(), by_range))
      std::stable_sort(q.begin(), q.end(), by_range);
  }
  // The last of equal ranges, as a map assigned in reference order would keep: the first entry
  // after `r` (upper_bound), found from the previous answer. The families ask for every call's
  // callee in source order, so the answer is mostly at or a few entries after the hint: a
  // galloping search there, a binary search of the whole list when `r` lies before it. Either
  // gives upper_bound's entry (the list is sorted).
  const std::vector<Qualified>& q = *qualified_;
  const Qualified key{r.begin, r.end, nullptr};
  std::size_t lo = std::min(qualified_hint_, q.size());
  std::size_t hi = q.size();
  if (lo > 0 && by_range(key, q[lo - 1])) {
    hi = lo;  // r is before the hint: it is in [0, lo)
    lo = 0;
  } else {
    // q[lo - 1] <= key: gallop to the first q[lo + step - 1] > key.
    for (std::size_t step = 1; lo + step <= q.size(); step *= 2) {
      if (by_range(key, q[lo + step - 1])) {
        hi = lo + step - 1;
        break;
      }
      lo += step;
    }
  }
  const auto it = std::upper_bound(q.begin() + static_cast<std::ptrdiff_t>(lo),
                                   q.begin() + static_cast<std::ptrdiff_t>(hi), key, by_range);
  qualified_hint_ = static_cast<std::size_t>(it - q.begin());
  if (it == q.begin()) return nullptr;
  const Qualified& found = *(it - 1);
  return found.begin == r.begin && found.end == r.end ? found.name : nullptr;
}

const flow::DeviceValues& Context::values() const {
  if (!values_) values_ = std::make_unique<flow::DeviceValues>(tree, opts.module);
  return *values_;
}

const syntax::Node* Context::expression_at(TokenIndex first, TokenIndex last) const {
  const syntax::Node* found = nullptr;
  syntax::walk(tree.root(), [&](const syntax::Node& n) {
    if (found || n.first_token() > first || n.last_token() < last) return false;
    if (n.first_token() == first && n.last_token() == last && syntax::is_expression(n.kind()))
      found = &n;
    return true;
  });
  return found;
}

namespace {

/// True when `value` is a primary expression: names, numbers, strings and bracketed groups joined
/// by dots and brackets only (`torch.npu.device_count()`, `(0, 0)`, `{}`), so that no operator
/// of the place around it can take part of it.
bool primary(std::string_view value) {
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"')
      quote = c;
    else if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}')
      --depth;
    else if (depth == 0 && !(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
      return false;
  }
  return !value.empty() && depth == 0 && quote == 0;
}

/// True when an expression in the place of `n` is read as a part of a tighter construct: the
/// object of an attribute or subscript, the function of a call, an operand, a comprehension's
/// condition or iterable (which take no conditional expression).
bool tight_place(const syntax::Node& n) {
  using syntax::NodeKind;
  using syntax::Role;
  const syntax::Node* p = n.parent();
  if (!p) return false;
  switch (p->kind()) {
    case NodeKind::Attribute:
    case NodeKind::Subscript:
      return n.role() == Role::Value;
    case NodeKind::Call:
      return n.role() == Role::Func;
    case NodeKind::BinOp:
    case NodeKind::UnaryOp:
    case NodeKind::BoolOp:
    case NodeKind::Compare:
    case NodeKind::Await:
    case NodeKind::Starred:
    case NodeKind::IfExp:
      return true;
    case NodeKind::comprehension:
      return n.role() == Role::If || n.role() == Role::Iter;
    default:
      return false;
  }
}

}  // namespace

std::string Context::operand(std::string value, TokenIndex first, TokenIndex last) const {
  const syntax::Node* n = expression_at(first, last);
  // Written inside its own parentheses already, or not an expression: as it is.
  if (!n || n->has(syntax::kParenthesized)) return value;
  const syntax::Node* p = n->parent();
  // `f"{{}}"` is an escaped brace: a value that opens with one takes parentheses in an f-string.
  if (p &&
      (p->kind() == syntax::NodeKind::FormattedValue ||
       p->kind() == syntax::NodeKind::Interpolation) &&
      value.starts_with('{'))
    return "(" + value + ")";
  const bool wrap =
      primary(value)
          // `0.bit_length()` reads as the float `0.` and a name: a number takes parentheses.
          ? n->parent() && n->parent()->kind() == syntax::NodeKind::Attribute &&
                n->role() == syntax::Role::Value && !value.empty() &&
                std::isdigit(static_cast<unsigned char>(value.front()))
          : tight_place(*n);
  return wrap ? "(" + value + ")" : value;
}

std::string Context::torch_name() {
  if (auto alias = m.module_alias("torch")) return *alias;
  need_torch_import = true;
  return "torch";
}

bool Context::statement_call(semantic::TokenIndex first, semantic::TokenIndex last) const {
  if (!statement_calls_) {
    statement_calls_.emplace();
    for (const syntax::Node* s : tree.find_all(syntax::NodeKind::Expr)) {
      const syntax::Node* v = s->value();
      if (v && v->kind() == syntax::NodeKind::Call)
        statement_calls_->emplace(v->first_token(), v->last_token());
    }
  }
  return statement_calls_->contains({first, last});
}

const syntax::Node* Context::attribute_named_at(semantic::TokenIndex name) const {
  if (!attributes_) {
    attributes_.emplace();
    for (const syntax::Node* a : tree.find_all(syntax::NodeKind::Attribute))
      attributes_->emplace(a->token(), a);
  }
  auto it = attributes_->find(name);
  return it == attributes_->end() ? nullptr : it->second;
}

std::string Context::script_device(std::uint32_t at, bool type, bool unindexed) const {
  using syntax::TokenKind;
  const auto& lines = m.lines();
  if (!device_bindings_) {
    // The first `device = ...` line of each scope whose `device` holds a device value.
    std::map<std::uint32_t, DeviceBinding> found;
    for (std::uint32_t li = 0; li < lines.size(); ++li) {
      const semantic::Line& l = lines[li];
      if (l.tokens.size() < 3 || m.kind(l.tokens[0]) != TokenKind::Name ||
          m.token_text(l.tokens[0]) != "device" || m.kind(l.tokens[1]) != TokenKind::Equal ||
          !m.is_store(l.tokens[0]) || found.contains(l.scope)) {
        continue;
      }
      auto b = m.lookup("device", l.scope);
      if (!b || b->kind != semantic::Binding::Kind::Device) continue;
      DeviceBinding d;
      d.line = li;
      const semantic::Reference* r = m.reference_at(l.tokens[2]);
      d.object = r && r->first == l.tokens[2] &&
                 (r->qualified == "torch.device" || r->qualified.starts_with("torch.accelerator."));
      for (std::size_t k = 2; k < l.tokens.size(); ++k) {
        const TokenIndex t = l.tokens[k];
        if (m.kind(t) == TokenKind::FStringMiddle &&
            m.token_text(t).find(':') != std::string_view::npos) {
          d.indexed = true;  // f"cuda:{rank}"
        }
        if (const semantic::Reference* dr = m.reference_at(t);
            dr && dr->first == t && dr->qualified == "torch.device") {
          auto lp = m.next(dr->last);
          if (lp && m.kind(*lp) == TokenKind::LPar && call_args(m, *lp).size() > 1)
            d.indexed = true;  // torch.device("cuda", rank)
        }
        if (m.kind(t) != TokenKind::String) continue;
        auto sv = semantic::string_value(m.text(), m.tokens()[t]);
        if (sv && sv->value.find(':') != std::string_view::npos) d.indexed = true;
      }
      found.emplace(l.scope, d);
    }
    device_bindings_ = std::move(found);
  }
  if (device_bindings_->empty() || lines.empty()) return "";
  // The logical line of the site.
  auto it = std::upper_bound(lines.begin(), lines.end(), at,
                             [](std::uint32_t off, const auto& l) { return off < l.begin; });
  if (it == lines.begin()) return "";
  const auto li = static_cast<std::uint32_t>(std::distance(lines.begin(), it) - 1);
  const semantic::Line& site = lines[li];
  if (at >= site.end) return "";
  const DeviceBinding* d = nullptr;
  if (auto own = device_bindings_->find(site.scope); own != device_bindings_->end()) {
    if (own->second.line < li) d = &own->second;  // bound before the site
  } else if (site.scope != 0) {
    // A function that does not bind `device` itself reads the module's (it runs later).
    auto mod = device_bindings_->find(0);
    auto b = m.lookup("device", site.scope);
    if (mod != device_bindings_->end() && b && b->kind == semantic::Binding::Kind::Device) {
      d = &mod->second;
    }
  }
  if (!d) return "";
  if (unindexed && d->indexed) return "";
  // An expression that reads `device` itself tests or derives from the script's value
  // (`'cuda' if 'cuda' in device else 'cpu'`): naming it again would make the test circular.
  // The expression is the site's argument inside its innermost bracket, or the whole line.
  {
    const auto& toks = site.tokens;
    auto pos = std::lower_bound(toks.begin(), toks.end(), at, [&](TokenIndex t, std::uint32_t off) {
      return m.tokens()[t].begin < off;
    });
    // Only a string being replaced: an insertion at a token (`f(` + `device.type, ` +
    // `enabled=device.type == "cuda")`) reads nothing of its own.
    if (pos != toks.end() && m.tokens()[*pos].begin == at &&
        (m.kind(*pos) == TokenKind::String || m.kind(*pos) == TokenKind::FStringStart)) {
      const auto open = m.enclosing_open(*pos);
      auto same_level = [&](TokenIndex t) { return m.enclosing_open(t) == open; };
      auto lo = pos, hi = pos;
      while (lo != toks.begin()) {
        const TokenIndex p = *(lo - 1);
        if (open && p == *open) break;
        if (m.kind(p) == TokenKind::Comma && same_level(p)) break;
        --lo;
      }
      while (hi + 1 != toks.end()) {
        const TokenIndex n = *(hi + 1);
        if (open && m.match(*open) && n == *m.match(*open)) break;
        if (m.kind(n) == TokenKind::Comma && same_level(n)) break;
        ++hi;
      }
      for (auto k = lo; k <= hi; ++k) {
        const semantic::Reference* r = m.reference_at(*k);
        if (r && r->first == *k && !r->store && m.token_text(*k) == "device") return "";
      }
    }
  }
  if (!type) return "device";
  if (d->object) return "device.type";
  return d->indexed ? "" : "device";  // a device string such as "cuda" is its own type
}

std::string_view Context::helper_name() const {
  if (!helper_name_) {
    // "device" unless the script binds that name anywhere (a parameter, a local, an import).
    bool taken = m.lookup(kDeviceVar, 0).has_value();
    for (const semantic::TokenIndex i : m.identifier_tokens()) {
      if (taken) break;
      if (m.token_text(i) != kDeviceVar || !m.is_store(i)) continue;
      auto p = m.prev(i);
      if (!p || m.kind(*p) != syntax::TokenKind::Dot) taken = true;
    }
    helper_name_ = std::string(taken ? kDeviceVarTaken : kDeviceVar);
  }
  return *helper_name_;
}

std::string_view Context::host_event_name() const {
  if (!host_event_name_) {
    const auto names = m.identifier_tokens();
    const bool taken = std::any_of(names.begin(), names.end(), [&](semantic::TokenIndex i) {
      return m.token_text(i) == "HostEvent";
    });
    host_event_name_ = std::string(taken ? kHostEvent : "HostEvent");
  }
  return *host_event_name_;
}

std::string Context::spell_host_event(std::string text) const {
  const std::string_view to = host_event_name();
  for (std::size_t at = text.find(kHostEvent); at != std::string::npos;
       at = text.find(kHostEvent, at + to.size()))
    text.replace(at, kHostEvent.size(), to);
  return text;
}

std::string Context::helper_device(std::optional<std::uint32_t> at) {
  used_device_var = true;
  device_var_uses.push_back(at);
  return std::string(helper_name());
}

std::string Context::device_expr(std::optional<std::uint32_t> at) {
  if (accelerator()) {
    if (at) {
      std::string own = script_device(*at, false);
      if (!own.empty()) return own;
    }
    return helper_device(at);
  }
  return "\"" + target.device + "\"";
}

std::string Context::device_type_expr(std::optional<std::uint32_t> at) {
  if (accelerator()) {
    if (at) {
      std::string own = script_device(*at, true);
      if (!own.empty()) return own;
    }
    return helper_device(at) + ".type";
  }
  return "\"" + (target.amp_device.empty() ? target.device : target.amp_device) + "\"";
}

std::string Context::render(std::string_view replacement, std::optional<std::uint32_t> at) {
  std::string out;
  std::string_view r = replacement;
  // Placeholders (accelerator): {device}, {device_type}, {module}.
  while (!r.empty()) {
    auto open = r.find('{');
    if (open == std::string_view::npos) {
      out += r;
      break;
    }
    out += r.substr(0, open);
    auto close = r.find('}', open);
    if (close == std::string_view::npos) {
      out += r.substr(open);
      break;
    }
    std::string_view key = r.substr(open + 1, close - open - 1);
    if (key == "device") {
      out += "device";  // renamed below
    } else if (key == "device_type") {
      out += device_type_expr(at);
    } else if (key == "module") {
      // The module of the current accelerator, torch.cpu when there is none.
      out += "torch.get_device_module()";
    } else {
      out += r.substr(open, close - open + 1);
    }
    r.remove_prefix(close + 1);
  }
  // The catalogue writes the accelerator's device as `device`: the script's own where it is in
  // reach, else the inserted variable.
  if (accelerator()) {
    std::string renamed;
    for (std::size_t i = 0; i < out.size();) {
      const bool start = i == 0 || !(std::isalnum(static_cast<unsigned char>(out[i - 1])) ||
                                     out[i - 1] == '_' || out[i - 1] == '.');
      const bool word =
          out.compare(i, 6, "device") == 0 &&
          (i + 6 == out.size() || !(std::isalnum(static_cast<unsigned char>(out[i + 6])) ||
                                    out[i + 6] == '_' || out[i + 6] == '('));
      if (start && word) {
        renamed += device_expr(at);
        i += 6;
        continue;
      }
      renamed += out[i++];
    }
    out = std::move(renamed);
  }
  // The torch alias: every `torch.` at the start of a dotted name.
  std::string fixed;
  for (std::size_t i = 0; i < out.size();) {
    bool at_name_start = i == 0 || !(std::isalnum(static_cast<unsigned char>(out[i - 1])) ||
                                     out[i - 1] == '_' || out[i - 1] == '.');
    if (at_name_start && out.compare(i, 6, "torch.") == 0) {
      fixed += torch_name();
      i += 5;
      continue;
    }
    if (at_name_start && out.compare(i, 5, "torch") == 0 &&
        (i + 5 == out.size() ||
         !(std::isalnum(static_cast<unsigned char>(out[i + 5])) || out[i + 5] == '_'))) {
      fixed += torch_name();
      i += 5;
      continue;
    }
    fixed += out[i++];
  }
  return fixed;
}

bool Context::version_ok(std::string_view min_torch) const {
  if (min_torch.empty() || opts.torch_version.empty()) return true;
  return compare_versions(opts.torch_version, min_torch) >= 0;
}

void Context::require_torch(std::string_view min_torch) {
  if (min_torch.empty()) return;
  if (result.min_torch_version.empty() ||
      compare_versions(min_torch, result.min_torch_version) > 0) {
    result.min_torch_version = std::string(min_torch);
  }
}

Draft Context::rewrite(std::string api, std::string message, std::uint32_t begin, std::uint32_t end,
                       std::string replacement) const {
  // A replacement never fuses with the text around it: `torch.cuda.is_available( )else` on cpu
  // is `False else`, not `Falseelse` (found by the migrate fuzzer).
  auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
  };
  const std::string_view text = m.text();
  if (begin != end && !replacement.empty()) {
    if (end < text.size() && word(text[end]) && word(replacement.back())) replacement += ' ';
    if (begin > 0 && word(text[begin - 1]) && word(replacement.front()))
      replacement.insert(replacement.begin(), ' ');
  }
  Draft d = report(begin == end ? Operation::Insert : Operation::Modify, std::move(api),
                   std::move(message), begin, end);
  d.fix = fix::Fix{{fix::Edit{begin, end, std::move(replacement)}}, fix::Applicability::Safe};
  d.changes_file = true;
  return d;
}

void Context::add(std::string_view code, Draft d) {
  if (d.changes_file) changed = true;
  result.findings.push_back(finding(code, std::move(d)));
}

void Context::add(Draft d, Finding (*producer)(Draft)) {
  if (d.changes_file) changed = true;
  result.findings.push_back(producer(std::move(d)));
}

Draft Draft::labelled(std::string what, fix::Applicability a) && {
  changes = std::move(what);
  if (fix) fix->applicability = a;
  return std::move(*this);
}

Draft Draft::dropping(std::uint32_t b, std::uint32_t e) && {
  drops = std::pair{b, e};
  return std::move(*this);
}

Draft Draft::taking(std::uint32_t b, std::uint32_t e,
                    std::optional<std::pair<std::size_t, std::size_t>> into) && {
  takes.push_back(Take{b, e, into});
  return std::move(*this);
}

Draft report(Operation op, std::string api, std::string message, std::uint32_t begin,
             std::uint32_t end) {
  Draft d;
  d.op = op;
  d.api = std::move(api);
  d.message = std::move(message);
  d.begin = begin;
  d.end = end;
  return d;
}

Draft display(Operation op, std::string api, std::string message, std::uint32_t begin,
              std::uint32_t end, fix::Edit edit) {
  Draft d = report(op, std::move(api), std::move(message), begin, end);
  d.fix = fix::Fix{{std::move(edit)}, fix::Applicability::DisplayOnly};
  return d;
}

Finding finding(std::string_view code, Draft d) {
  Finding f;
  f.code = std::string(code);
  f.op = d.op;
  f.api = std::move(d.api);
  f.message = std::move(d.message);
  f.begin = d.begin;
  f.end = d.end;
  f.fix = std::move(d.fix);
  f.changes = std::move(d.changes);
  f.drops = d.drops;
  f.takes = std::move(d.takes);
  f.opens_arguments = d.opens_arguments;
  return f;
}

const semantic::Reference* callee_of(const semantic::Model& m, TokenIndex lpar) {
  auto p = m.prev(lpar);
  if (!p || m.kind(*p) != TokenKind::Name) return nullptr;
  const semantic::Reference* r = m.reference_at(*p);
  if (r && r->last == *p) return r;
  return nullptr;
}

std::string_view callee_last_name(const semantic::Model& m, TokenIndex lpar) {
  auto p = m.prev(lpar);
  if (!p || m.kind(*p) != TokenKind::Name) return {};
  return m.token_text(*p);
}

std::vector<Arg> call_args(const semantic::Model& m, TokenIndex lpar) {
  std::vector<Arg> out;
  auto close = m.match(lpar);
  if (!close) return out;
  std::optional<TokenIndex> first;
  TokenIndex last = lpar;
  for (auto i = m.next(lpar); i && *i < *close; i = m.next(*i)) {
    auto en = m.enclosing_open(*i);
    bool top = en && *en == lpar;
    if (top && m.kind(*i) == TokenKind::Comma) {
      if (first) out.push_back(Arg{*first, last, {}});
      first.reset();
      continue;
    }
    if (!first) first = *i;
    last = *i;
  }
  if (first) out.push_back(Arg{*first, last, {}});
  for (Arg& a : out) {
    auto n = m.next(a.first);
    if (m.kind(a.first) == TokenKind::Name && n && *n <= a.last && m.kind(*n) == TokenKind::Equal) {
      a.keyword = m.token_text(a.first);
    }
  }
  return out;
}

FileResult check(const syntax::Tree& tree, const catalogue::Catalogue& cat, const Options& opts) {
  semantic::Model model(tree);
  return check(tree, model, cat, opts);
}

const catalogue::Target& target_or_fallback(const catalogue::Catalogue& cat,
                                            const std::string& name, catalogue::Target& fallback) {
  if (const catalogue::Target* target = cat.target(name)) return *target;
  fallback.name = name;
  fallback.device = name;
  return fallback;
}

FileResult check(const syntax::Tree& tree, const semantic::Model& model,
                 const catalogue::Catalogue& cat, const Options& opts) {
  catalogue::Target fallback;
  Context ctx(tree, model, cat, target_or_fallback(cat, opts.target, fallback), opts);
  if (!tree.ok()) return std::move(ctx.result);
  if (ctx.accelerator() && !ctx.version_ok(kAcceleratorMinTorch)) {
    // torch.accelerator does not exist before 2.6: nothing device-agnostic can be written.
    tp900(ctx, report(Operation::Unsupported, "torch.accelerator",
                      "--target accelerator needs torch >= " + std::string(kAcceleratorMinTorch) +
                          " (torch.accelerator); --torch-version is " + opts.torch_version +
                          ": nothing was rewritten",
                      0, 0));
    return std::move(ctx.result);
  }
  bool settled = false;
  for (const FamilyInfo* f : families()) {
    if (f->input != Input::PythonFile || !f->run) continue;
    if ((f->needs & NeedProject) && !opts.custom_ops) continue;  // no project: not judged
    if ((f->needs & NeedSupportLists) && !cat.has_support_lists(opts.target)) continue;
    if ((f->needs & NeedSettled) && !std::exchange(settled, true)) settle_incidental(ctx);
    const std::size_t before = ctx.result.findings.size();
    f->run(ctx);
    // The one place where a finding's declarations act on the findings of other rules.
    resolve_family(model.text(), ctx.result.findings, before);
  }
  if (const catalogue::AdviceTable* advice = cat.advice(opts.target)) run_advice(ctx, *advice);
  // Stable order by offset; at one offset, in the declared order of their first edits
  // (fix::Edit::order), as the fix applier applies them. The findings are large (a file with a
  // finding on every line has hundreds of thousands): their indices are sorted, then each
  // finding is moved once.
  std::vector<Finding>& fs = ctx.result.findings;
  auto before = [](const Finding& a, const Finding& b) {
    auto order = [](const Finding& f) {
      return f.fix && !f.fix->edits.empty() ? f.fix->edits.front().order : std::int8_t{0};
    };
    return a.begin != b.begin ? a.begin < b.begin : order(a) < order(b);
  };
  if (!std::is_sorted(fs.begin(), fs.end(), before)) {
    std::vector<std::uint32_t> order(fs.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return before(fs[a], fs[b]); });
    // In place, cycle by cycle: position k takes the finding at order[k].
    constexpr std::uint32_t kDone = UINT32_MAX;
    for (std::uint32_t start = 0; start < order.size(); ++start) {
      if (order[start] == kDone || order[start] == start) continue;
      Finding held = std::move(fs[start]);
      std::uint32_t k = start;
      while (order[k] != start) {
        const std::uint32_t from = order[k];
        fs[k] = std::move(fs[from]);
        order[k] = kDone;
        k = from;
      }
      fs[k] = std::move(held);
      order[k] = kDone;
    }
  }
  return std::move(ctx.result);
}

}  // namespace torchport::rules
