// The API knowledge base: for each CUDA-specific API, what it becomes on every target.
//
// The data lives in data/catalogue/*.json and data/targets.json (generated or curated, each
// fact with its source) and is embedded into the executable at build time, so the installed
// `torchport` needs no data files. The rewriter, `explain`, the reports and docs/api-mapping.md
// all read this one catalogue.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace torchport::catalogue {

enum class Status : std::uint8_t {
  Supported,    ///< the replacement does the same thing on the target
  Partial,      ///< a replacement exists with limits (see the note)
  Unsupported,  ///< no equivalent on the target: left in place and reported
  Unknown,      ///< the vendor lists do not say: rewritten if a replacement is given, reported
};
std::string_view to_string(Status s);
std::optional<Status> parse_status(std::string_view s);

/// A default of torch that changed in a version (data/catalogue/torch_versions.json): a call
/// of `api` without `keyword` meant `keyword=old_value` before `since`, `new_value` from it.
struct VersionChange {
  std::string id;
  std::string api;
  std::string since;
  std::string keyword;
  std::string old_value;
  std::string new_value;
  std::string summary;
  std::string fix_when;  ///< "always", "never" or "saves_objects"
  std::string fix_note;
  /// Why the old value is written, in the fix's message ("the file also saves whole objects
  /// with torch.save"); required unless fix_when is "never".
  std::string fix_reason;
  /// When to pass the old value, in a report without a fix ("the file holds more than tensors
  /// ... and is trusted"); required unless fix_when is "always".
  std::string report_when;
  /// The first torch that takes the keyword: where the torch the output runs on is not known,
  /// an "always" row is still applied, since the old value is the default of every torch from
  /// this one up to `since` ("" = only judged against a known torch).
  std::string keyword_since;
  std::string source;
};

/// What one API becomes on one target.
struct Mapping {
  std::string replacement;  ///< e.g. "torch_npu.npu.synchronize"; empty when there is none
  Status status = Status::Unknown;
  std::string min_torch;  ///< minimum torch version the replacement needs ("" = any supported)
  std::string note;       ///< limits, reasons, caveats (one sentence)
  std::string source;  ///< where the fact comes from (upstream file, torch introspection, doc URL)
  /// What a call evaluates to where there is no device to act on (the cpu target, and the
  /// accelerator target on a CPU-only machine): "0" for a memory query, "None" for a reset,
  /// "{}" for memory_stats. "" = not emulated: the call needs the device.
  std::string without_device;
  /// Non-empty when the replacement changes behaviour ("changes behaviour: a value replaced by
  /// a constant", "... a seed call widened ..."): its fix is unsafe and labelled so.
  std::string changes;
  /// Keywords the CUDA API accepts that the replacement does not (the installed torch's
  /// signatures, tools/gen_catalogue.py): a call passing one is reported, never rewritten into a
  /// TypeError (`torch.cuda.Stream(device=d)` -> `torch.cpu.Stream(device=d)`).
  std::vector<std::string> refused_keywords;
  /// What the vendor's replacement returns where the CUDA API returns something else ("None":
  /// torch_npu.npu.get_device_capability() without TORCH_NPU_DEVICE_CAPABILITY); "" = the same.
  /// Checked against the vendor's source by tools/check_vendor_npu.py; a rule adapts the code
  /// or reports it.
  std::string returns;
  /// With returns "None": the value the code gets instead, as a Python expression ("(0, 0)"): a
  /// call used as a value becomes `(replacement(...) or if_none)`, labelled.
  std::string if_none;
  /// What a call becomes where its value divides (the right operand of %, // or /, their
  /// augmented assignments, divmod's divisor), as a Python expression: a count that cannot be 0
  /// there ("1" for device_count on cpu, where the call is otherwise 0); "" = as elsewhere.
  /// as_divisor_note says why, for the report row.
  std::string as_divisor;
  std::string as_divisor_note;
  /// Names the vendor moves together with this one ({CUDA API, replacement}, sorted by API):
  /// torch_npu's profiler works only as a unit (ProfilerActivity.NPU with torch_npu's profile).
  std::vector<std::pair<std::string, std::string>> moves_with;
  /// Set when the replacement is read by something outside the vendor's package (CANN's HCCL for
  /// HCCL_SOCKET_IFNAME), so the vendor check cannot confirm it; "" = checked.
  std::string read_by;
};

/// The kinds of things the catalogue describes.
enum class Kind : std::uint8_t {
  Function,  ///< a callable reached by its qualified name: torch.cuda.synchronize
  Class,     ///< a class reached by its qualified name: torch.cuda.Event, torch.cuda.amp.GradScaler
  Module,    ///< a module: torch.cuda, torch.cuda.amp, torch.cuda.nvtx
  Attribute,  ///< a value: torch.backends.cudnn.benchmark, ProfilerActivity.CUDA
  Method,     ///< a method on any object: ".cuda", ".is_cuda"
  String,     ///< a string value in a device/backend context: "cuda", "nccl"
  EnvVar,     ///< an environment variable: CUDA_VISIBLE_DEVICES
  Package,    ///< a CUDA-only third-party package: flash_attn, apex, amp_C
};
std::string_view to_string(Kind k);
std::optional<Kind> parse_kind(std::string_view s);

struct Entry {
  std::string api;  ///< the key: "torch.cuda.synchronize", ".cuda", "nccl", "CUDA_VISIBLE_DEVICES"
  Kind kind = Kind::Function;
  std::string
      family;  ///< device, memory, stream, rng, amp, graphs, nvtx, backends, distributed, ...
  std::string summary;                                  ///< what the CUDA API does (one line)
  std::map<std::string, Mapping, std::less<>> targets;  ///< by target name
};

/// What happens to an operator the device has no kernel for.
struct Fallback {
  std::string default_behaviour;  ///< "cpu" (runs on the host), "error" (raises), "" (not known)
  std::string env;                ///< "PYTORCH_ENABLE_MPS_FALLBACK=1": the setting that changes it
  std::string env_effect;         ///< what that setting does
  std::string note;
};

/// One migration target (guide §2), read from data/targets.json. The Python half reads the same
/// file (python/torchport/targets.py); rules ask these fields, never a target's name.
struct Target {
  std::string name;         ///< npu, mlu, musa, xpu, mps, hpu, cpu, accelerator
  std::string vendor;       ///< "Huawei Ascend", ...
  std::string title;        ///< "Huawei Ascend NPU"
  std::string package;      ///< the vendor's Python package ("torch_npu"); "" = in-tree
  std::string device;       ///< the device-string prefix: "npu"; "" for accelerator (runtime)
  std::string module;       ///< the device module: "torch.npu" ...
  std::string import_stmt;  ///< statement to insert after the torch import ("" = in-tree)
  std::string install;      ///< what the user installs
  /// The requirement `migrate` adds to requirements*.txt / pyproject.toml where the output
  /// imports `package` (a PEP 508 string: the distribution name, and a version specifier only
  /// where a source pairs one with a torch version); "" = none known (in-tree, or no source).
  std::string requirement;
  std::string backend;          ///< collective backend; "" = none on the device
  std::string visible_devices;  ///< the CUDA_VISIBLE_DEVICES equivalent; "" = none
  /// The environment variable the vendor documents for the device index of a process
  /// (--specify-device, Ascend's DEVICE_ID); "" = none documented: -s is refused.
  std::string device_id_env;
  std::string amp_device;                   ///< device_type for torch.amp.autocast: "npu", ...
  std::string min_torch;                    ///< oldest torch the target works with
  std::vector<std::string> torch_versions;  ///< --torch-version values with per-version lists
  std::vector<std::string> no_dtypes;       ///< dtypes the device lacks ("float64", ...)
  std::string amp_dtype;                    ///< autocast's default dtype: "float16", "bfloat16"
  bool device_index = true;  ///< false: one device only, "cuda:N" collapses to the device
  bool host = false;         ///< the device is the host CPU (no device memory, events, streams)
  std::string profiler_activity;  ///< torch.profiler.ProfilerActivity member; "" = none
  /// migrate --distributed: the vendor-style launcher that starts one process per device with
  /// RANK_ID / DEVICE_ID (Ascend's run_distributed_npu.sh); "" = none.
  std::string rank_loop_launcher;
  Fallback fallback;
  std::string notes;
  std::vector<std::string> sources;
  /// Per fact (a field name of targets.json): where it comes from. A source starting with
  /// "unverified:" names no upstream file, vendor document or torch introspection.
  std::vector<std::pair<std::string, std::string>> facts;

  /// True for the device-agnostic target: the device is chosen at run time.
  bool runtime_device() const { return device.empty(); }
  /// The facts whose source is marked unverified, sorted by name.
  std::vector<std::string> unverified() const;
};

/// One argument rewrite of Ascend's legacy custom-rule file (`ArgsModifyRule`, `--rules FILE`):
/// in calls of `func_name`, the positional argument `arg_idx` or the keyword argument
/// `arg_keyword` becomes `arg_new`. Applied by rules/custom_args.cc.
struct ArgRule {
  /// "torch.zeros": calls whose callee resolves to that qualified name (imports, aliases);
  /// "to" (no dot): calls whose called name is `to`, methods included (`x.to(...)`).
  std::string func_name;
  std::optional<std::uint32_t> arg_idx;  ///< the n-th positional argument (0-based), or else
  std::string arg_keyword;               ///< the keyword argument's name
  /// The argument's new source text (its value, for a keyword argument), inserted verbatim;
  /// "" deletes the argument. Every `replace_device_int` becomes the old argument's text.
  std::string arg_new;
  /// Regexes (ECMAScript): an argument whose text contains a match is left alone.
  std::vector<std::string> white_list;
  std::string target;  ///< the target the rule file was loaded for
  std::string source;  ///< "custom rules r.json (ArgsModifyRule[0])"
};

/// The other rule kinds of Ascend's rule tables (builtin_rules.json), run by the custom_rules
/// family (TP801-TP804). Dotted FuncNameModifyRule / ReplaceAttributeRule names and every
/// ModuleNameModifyRule become catalogue entries instead (TP100).
struct NameRule {
  std::string old_name;  ///< a dotless name: the called name (`x.cuda()`) or attribute (`.CUDA`)
  std::string new_name;  ///< a dotless name
  std::string target;
  std::string source;  ///< "custom rules r.json (FuncNameModifyRule[0])"
};
struct StringRule {  ///< ReplaceStringRule
  std::string str_old, str_new;
  bool strict = true;  ///< the whole value equals str_old; else every occurrence in it
  std::string target;
  std::string source;
};
struct InsertRule {                  ///< InsertGlobalRule: statements inserted after the imports
  std::vector<std::string> content;  ///< statements (each parses on its own)
  std::string import_key_word;       ///< only files with an import whose name contains it
  std::string target;
  std::string source;
};
struct CustomRules {
  std::vector<NameRule> calls;       ///< dotless FuncNameModifyRule
  std::vector<NameRule> attributes;  ///< dotless ReplaceAttributeRule
  std::vector<StringRule> strings;
  std::vector<InsertRule> inserts;
};

/// Support of a general torch API on a target for one torch version (Ascend's supported_op /
/// op_list, Cambricon's torch_api.yaml). Used for unsupported_api.csv / unknown_api.csv.
struct ApiSupport {
  Status status = Status::Unknown;
  std::string tip;  ///< the vendor's note, "-" when it gives none
  std::string source;
};

/// Catalogue::api_support() for one target and torch version, the version's list chosen once:
/// for the many questions of one file (TP950 asks about every torch call). Made by
/// Catalogue::support_query(); valid while the catalogue is.
class SupportQuery {
 public:
  /// What api_support(api, target, torch_version) answers.
  std::optional<ApiSupport> find(std::string_view api) const;

  struct Chosen;  ///< opaque (defined in catalogue.cc)

 private:
  friend class Catalogue;
  std::shared_ptr<const Chosen> chosen_;  ///< nullptr: the target has no list (not judged)
};

/// One parameter check of Ascend's performance advice (api_parameters_performance_dict): a call
/// of `api` whose argument `parameter` (keyword, or positional at one of the 1-based
/// `positions`) is absent or a literal other than `expected` (or equal to `unexpected`).
struct AdviceParameter {
  std::string api;  ///< qualified ("torch.utils.data.DataLoader") or a method name ("to")
  std::string parameter;
  std::vector<std::uint32_t> positions;  ///< 1-based positions in the signature
  std::string expected;                  ///< "" = none
  std::string unexpected;                ///< "" = none
  std::string default_value;
  std::string tip;
};

/// One release of a torch companion package (torchvision, torchaudio, torchtext) and the torch
/// release its wheels are built against (data/catalogue/companions/torch.json, generated by
/// tools/gen_torch_companions.py from the wheels' METADATA).
struct Companion {
  std::string version;  ///< "0.28.0"
  std::string torch;    ///< "2.13.0"
};

/// A vendor's precision, performance and fused-API advice for one target
/// (data/catalogue/advice/<target>.json, generated by tools/gen_advice.py).
struct AdviceTable {
  std::string source_advice;    ///< where precision/performance came from
  std::string source_affinity;  ///< where the affinity lists came from
  std::map<std::string, std::string, std::less<>> precision;    ///< api -> tip
  std::map<std::string, std::string, std::less<>> performance;  ///< api -> tip
  std::vector<AdviceParameter> parameters;
  struct Suggest {
    std::string name;
    std::vector<std::string> dependency;  ///< qualified APIs whose use triggers it
    std::string tip;
  };
  std::vector<Suggest> suggest;
  std::vector<std::pair<std::string, std::string>> project;        ///< setting -> tip
  std::map<std::string, std::string, std::less<>> affinity_calls;  ///< api -> fused api
  struct AffinityFunction {
    std::vector<std::string> parameters;
    std::string affinity;
  };
  std::map<std::string, AffinityFunction, std::less<>> affinity_functions;  ///< def name
  struct AffinityClass {
    std::string parent;
    std::string affinity;
  };
  std::map<std::string, AffinityClass, std::less<>> affinity_classes;  ///< class name

  /// What a call must be named for any advice above to apply to it (rules/advice.cc asks this
  /// before the tables, for every call of a file): `call_names` holds the qualified names (the
  /// keys of precision, performance and affinity_calls, the suggest dependencies, the dotted
  /// parameter apis), `method_names` the undotted parameter apis. Filled by index(), which the
  /// catalogue calls when it reads the table; `indexed` says it has run.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Names = std::unordered_set<std::string, NameHash, std::equal_to<>>;
  Names call_names, method_names;
  bool indexed = false;
  void index();
};

class Catalogue {
 public:
  Catalogue();
  ~Catalogue();
  Catalogue(Catalogue&&) noexcept;
  Catalogue& operator=(Catalogue&&) noexcept;

  /// The catalogue embedded in the executable (parsed once, thread-safe). When the environment
  /// variable TORCHPORT_DATA_DIR names a directory, the catalogue is read from its targets.json
  /// and catalogue/**/*.json instead (a test-only or user-supplied knowledge base; the Python
  /// half reads the same variable). A broken data directory is a clear error, then exit 2.
  static const Catalogue& builtin();

  /// Parses the catalogue from JSON documents (entries file(s), targets file, support lists).
  /// On error returns nullopt and sets `error` to "<name>: <what is wrong>".
  struct Documents {
    std::vector<std::pair<std::string, std::string>> entries;  ///< (name, JSON text)
    std::pair<std::string, std::string> targets;
    std::vector<std::pair<std::string, std::string>> support;
    std::vector<std::pair<std::string, std::string>> advice;  ///< catalogue/advice/*.json
    /// catalogue/companions/*.json
    std::vector<std::pair<std::string, std::string>> companions;
  };
  static std::optional<Catalogue> parse(const Documents& docs, std::string* error);
  /// The documents of a data directory laid out as data/ is; nullopt and `error` on failure.
  static std::optional<Documents> read_dir(const std::string& dir, std::string* error);

  /// A copy of this catalogue with a custom rule file on top (`--rules FILE`): either
  /// torchport's own format (an "entries" list, as in data/catalogue/*.json, "*" allowed) or
  /// Ascend's {"rules": {"<kind>": [...]}} (its legacy custom rules and its rule tables
  /// builtin_rules.json, builtin_rules_pytorch_npu.json), whose rules apply to `target`.
  /// Ascend's rules with a "feature_switch" list are used only when it names a switch that is
  /// on: "normal" and "2.1.0" always (as in Ascend's tool), "specify_device" with
  /// `specify_device`. Custom entries replace built-in ones with the same api; ArgsModifyRule
  /// entries are appended to arg_rules(), the other kinds to custom_rules().
  /// On error returns nullopt and sets `error` to "<name>: <field>: <what is wrong>".
  std::optional<Catalogue> with_rules(const std::string& name, const std::string& text,
                                      const std::string& target, std::string* error) const;
  std::optional<Catalogue> with_rules(const std::string& name, const std::string& text,
                                      const std::string& target, bool specify_device,
                                      std::string* error) const;

  const std::vector<Entry>& entries() const;
  const Entry* find(std::string_view api) const;
  /// The mapping of `api` for `target`, or nullptr when the catalogue has none.
  const Mapping* lookup(std::string_view api, std::string_view target) const;

  /// The ArgsModifyRule entries of the custom rule files, sorted by name.
  const std::vector<ArgRule>& arg_rules() const;
  /// The other Ascend rule kinds of the custom rule files, in file order.
  const CustomRules& custom_rules() const;

  const std::vector<Target>& targets() const;
  const Target* target(std::string_view name) const;
  /// Behaviour of torch that changed between versions (rule TP960).
  const std::vector<VersionChange>& version_changes() const;
  /// CUDA's autocast default dtype (targets.json "cuda"): "float16"; "" when not given.
  const std::string& cuda_amp_dtype() const;

  /// Support of a general torch API (e.g. "torch.sparse.mm") on `target` for `torch_version`
  /// ("" = the newest list). nullopt when no list exists for the target (it is not judged).
  std::optional<ApiSupport> api_support(std::string_view api, std::string_view target,
                                        std::string_view torch_version) const;
  /// api_support() for many APIs: the list of `target` for `torch_version`, chosen once.
  SupportQuery support_query(std::string_view target, std::string_view torch_version) const;
  /// The torch versions that have a support list for `target` (sorted, oldest first).
  std::vector<std::string> support_versions(std::string_view target) const;
  /// !support_versions(target).empty(), without building the list (the rules ask it per file).
  bool has_support_lists(std::string_view target) const;
  /// The vendor's advice for `target`, or nullptr when no vendor publishes any.
  const AdviceTable* advice(std::string_view target) const;
  /// The releases of a torch companion distribution ("torchvision"), oldest first; nullptr for
  /// a distribution the table does not know.
  const std::vector<Companion>* companions(std::string_view dist) const;

  struct Impl;  ///< opaque (defined in catalogue.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchport::catalogue
