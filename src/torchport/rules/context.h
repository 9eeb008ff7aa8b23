// Shared state of one check() run: the file's semantic model, the target, the catalogue and
// the findings collected so far. Internal to the rules layer.
#pragma once

#include <torchport/catalogue/catalogue.h>
#include <torchport/flow/device_values.h>
#include <torchport/rules/engine.h>
#include <torchport/semantic/model.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace torchport::rules {

/// Whether `text` contains `word` (text.find(word) != npos), for a word with a byte that is
/// rare in Python source, word[rare] ('g' of "add_argument": 1.1 % of the torch tree's bytes,
/// 'a' 4.0 %). Sixteen windows at a time (SSE2), a window is compared only where its word[rare]
/// and its first byte (its last, for rare == 0) both match: a byte pair far rarer than either
/// byte, with no library call per occurrence of the rare byte (memchr's, one a few dozen bytes
/// for 'c' or '_'). The last windows, and a one-byte word, go to memchr for word[rare].
bool contains(std::string_view text, std::string_view word, std::size_t rare);

/// The names the accelerator target's inserted device variable gets, used only where the script
/// has no device of its own in reach: "device", or this one when the script binds "device".
inline constexpr std::string_view kDeviceVar = "device";
inline constexpr std::string_view kDeviceVarTaken = "accel_device";
/// The class inserted where torch.cuda.Event has no device to run on (cpu; accelerator on a
/// CPU-only machine). Its name appears in the catalogue's replacements.
inline constexpr std::string_view kHostEvent = "_TpHostEvent";
/// torch version that introduced torch.accelerator (the accelerator target's idiom).
inline constexpr std::string_view kAcceleratorMinTorch = "2.6";

/// One site's finding, complete but for its code: operation, API, range, message, the fix with
/// its applicability and label, and the range the fix drops. A rule builds it (report(),
/// display(), Context::rewrite(), or field by field for a fix of several edits) and hands it to
/// its code's producer, `tpNNN(...)`: the one function that makes findings of that code, next to
/// the code's doc comment in its family's file (tests/python/test_rule_codes.py checks it).
struct Draft {
  Operation op = Operation::Modify;
  std::string api;
  std::string message;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;
  std::optional<fix::Fix> fix;
  std::string changes;                                           ///< Finding::changes
  std::optional<std::pair<std::uint32_t, std::uint32_t>> drops;  ///< Finding::drops
  std::vector<Take> takes;                                       ///< Finding::takes
  std::optional<std::pair<std::uint32_t, std::uint32_t>>
      opens_arguments;  ///< Finding::opens_arguments
  /// The fix changes the file: TP900 then inserts what the output needs (Context::changed).
  bool changes_file = false;

  /// Labels the fix: `what` it changes ("changes behaviour: ...", "numerics: ..."), `a` its
  /// applicability (Unsafe for a change of behaviour).
  Draft labelled(std::string what, fix::Applicability a) &&;
  /// The byte range of code the fix removes: the findings made before it inside that range go
  /// with it (Finding::drops).
  Draft dropping(std::uint32_t b, std::uint32_t e) &&;
  /// The code [b, e] the fix takes over (Finding::takes): the findings made before it there go
  /// with it; with `into` (edit, byte), that code, their edits applied, goes into the fix's edit.
  Draft taking(std::uint32_t b, std::uint32_t e,
               std::optional<std::pair<std::size_t, std::size_t>> into = std::nullopt) &&;
};

/// A finding with no fix: a report row (Unsupported, Unknown, or a change left to the user).
Draft report(Operation op, std::string api, std::string message, std::uint32_t begin,
             std::uint32_t end);
/// A finding whose fix is display-only: the edit a person would make, shown in the reports and
/// never applied (what cannot be rewritten mechanically: its meaning is not clear from the
/// code). The file does not count as changed.
Draft display(Operation op, std::string api, std::string message, std::uint32_t begin,
              std::uint32_t end, fix::Edit edit);
/// The finding of `code` made from a draft: called by the code's producer only.
Finding finding(std::string_view code, Draft d);

class Context {
 public:
  Context(const syntax::Tree& tree, const semantic::Model& model, const catalogue::Catalogue& cat,
          const catalogue::Target& target, const Options& opts);

  const syntax::Tree& tree;  ///< Need::NeedTree
  const semantic::Model& m;
  const catalogue::Catalogue& cat;
  const catalogue::Target& target;
  const Options& opts;
  FileResult result;

  /// The device-agnostic target (its device is chosen at run time: data/targets.json "device": "").
  bool accelerator() const { return target.runtime_device(); }

  /// The local name of the torch module; records that `import torch` must be inserted when the
  /// file does not bind it at module level.
  std::string torch_name();
  /// Renders a qualified replacement ("torch.npu.synchronize") for this file: the torch alias,
  /// and the accelerator placeholders {device}, {device_type}, {module}. `at` is the byte
  /// offset of the site: there the script's own `device` is used when it is in reach.
  std::string render(std::string_view replacement, std::optional<std::uint32_t> at = {});
  /// A quoted device-type literal ("npu") or, for accelerator, `device.type` (the script's own
  /// device when it is in reach at byte offset `at`, else the inserted variable).
  std::string device_type_expr(std::optional<std::uint32_t> at = {});
  /// A device value: "npu" or, for accelerator, `device`.
  std::string device_expr(std::optional<std::uint32_t> at = {});
  /// The name of the inserted device variable for this file (accelerator).
  std::string_view helper_name() const;

  /// False (and an Unsupported finding is recorded by the caller) when `min_torch` is newer
  /// than the requested --torch-version.
  bool version_ok(std::string_view min_torch) const;
  void require_torch(std::string_view min_torch);

  /// A rewrite of bytes [begin, end) to `replacement` (an Insert when begin == end, else a
  /// Modify), padded so that it never fuses with the text around it.
  Draft rewrite(std::string api, std::string message, std::uint32_t begin, std::uint32_t end,
                std::string replacement) const;
  /// Records the finding of `code` made from `d` (Draft::changes_file sets `changed`): called by
  /// the code's producer only.
  void add(std::string_view code, Draft d);
  /// Records the finding `producer` makes of `d`: for a code whose producer serves files with no
  /// Context too (tp410, which also makes the launchers' findings).
  void add(Draft d, Finding (*producer)(Draft));

  /// Token ranges already rewritten by an earlier rule (by the first token index).
  std::set<semantic::TokenIndex> handled;

  bool need_torch_import = false;
  /// TP900 inserts the target's import (target.import_stmt) into this file.
  bool target_import_inserted = false;
  bool used_device_var = false;
  /// Where the rules wrote the inserted device variable: byte offsets in the original, nullopt
  /// for a use with no position (which needs the module-level variable).
  std::vector<std::optional<std::uint32_t>> device_var_uses;
  /// The inserted device variable, written at `at` (its use is recorded for TP900).
  std::string helper_device(std::optional<std::uint32_t> at);
  bool used_device_id = false;  ///< --specify-device: DEVICE_ID must be defined
  /// The name of the device-index variable: the target's device_id_env, else DEVICE_ID (the
  /// name Ascend's rule tables use in arg_new, for --rules files on any target).
  std::string device_id_var() const {
    return target.device_id_env.empty() ? "DEVICE_ID" : target.device_id_env;
  }
  bool used_host_event = false;  ///< the host event class must be defined
  /// The name of the inserted host event class: "HostEvent", or kHostEvent where the file already
  /// uses that name. The catalogue's replacements spell it kHostEvent.
  std::string_view host_event_name() const;
  /// `text` with every kHostEvent spelled host_event_name().
  std::string spell_host_event(std::string text) const;
  std::string custom_inserted;  ///< the statements TP804 inserted (Ascend's InsertGlobalRule)
  bool changed = false;

  /// The script's own device at byte offset `at`: "device" (or "device.type" when `type`), or
  /// "" when none is in reach there (or, with `unindexed`, when it may carry an index: torch.load
  /// cannot restore to "cpu:0").
  std::string script_device(std::uint32_t at, bool type, bool unindexed = false) const;

  /// True when tokens [first, last] are a call that is a whole expression statement (read from
  /// the syntax tree: `torch.cuda.empty_cache()` on its own, after `if x:` or `;`, but not an
  /// annotation, a lambda's body or an argument).
  bool statement_call(semantic::TokenIndex first, semantic::TokenIndex last) const;

  /// The Attribute node whose attribute name is token `name` (`x.is_cuda` for `is_cuda`), or
  /// nullptr.
  const syntax::Node* attribute_named_at(semantic::TokenIndex name) const;

  /// The qualified name of the reference whose tokens span exactly the bytes `r` (of equal
  /// spans, the last reference), or nullptr. The table is built on first use, once per file,
  /// for every family that asks by range.
  const std::string* qualified_spanning(syntax::ByteRange r) const;

  /// The device-value layer of this file (flow/device_values.h), built on first use. Needs the
  /// tree (Need::NeedTree).
  const flow::DeviceValues& values() const;
  /// The expression node that spans tokens [first, last] exactly, or nullptr (a bridge for the
  /// rules that still find their sites by tokens).
  const syntax::Node* expression_at(semantic::TokenIndex first, semantic::TokenIndex last) const;
  /// `value` (a Python expression) as it must be written in place of the expression spanning
  /// tokens [first, last]: in parentheses where the place binds tighter than the value would
  /// (`torch.cuda.max_memory_allocated().bit_length()` -> `(0).bit_length()`, since `0.bit_length`
  /// is not Python; `-f()` with a conditional value), else as it is.
  std::string operand(std::string value, semantic::TokenIndex first,
                      semantic::TokenIndex last) const;

 private:
  struct DeviceBinding {
    std::uint32_t line = 0;  ///< the first line `device = ...` of the scope
    bool object = false;     ///< its value is a torch.device (else a device string)
    bool indexed = false;    ///< a string with an index ("cuda:0"): no device type
  };
  /// scope -> its first `device = ...` line; filled on first use.
  mutable std::optional<std::map<std::uint32_t, DeviceBinding>> device_bindings_;
  mutable std::optional<std::string> helper_name_;
  mutable std::optional<std::string> host_event_name_;
  /// (first, last) tokens of the calls that are expression statements; filled on first use.
  mutable std::optional<std::set<std::pair<semantic::TokenIndex, semantic::TokenIndex>>>
      statement_calls_;
  /// attribute-name token -> its Attribute node; filled on first use.
  mutable std::optional<std::unordered_map<semantic::TokenIndex, const syntax::Node*>> attributes_;
  mutable std::unique_ptr<flow::DeviceValues> values_;
  struct Qualified {
    std::uint32_t begin, end;
    const std::string* name;
  };
  /// the qualified references by byte range, stably sorted; filled on first use.
  mutable std::optional<std::vector<Qualified>> qualified_;
  /// qualified_spanning()'s last answer (the index after the entry it found): where the next
  /// question, usually about a later range, starts its search.
  mutable std::size_t qualified_hint_ = 0;
};

/// The catalogue's target `name`, or `fallback` filled as a device string with no facts (a
/// target the catalogue does not have: the driver refuses one, the library does not).
const catalogue::Target& target_or_fallback(const catalogue::Catalogue& cat,
                                            const std::string& name, catalogue::Target& fallback);

/// True for an incidental change: one made only next to other CUDA changes, so that a file that
/// uses nothing CUDA-specific comes out byte-identical (resolve.h: settle_incidental drops a
/// file's incidental changes when they are its only ones). Declared per (code, operation, api) in
/// engine.cc's kIncidental: TP300's map_location inserted into torch.load.
bool incidental(const Finding& f);

/// Compares "X.Y[.Z]" versions: <0, 0, >0.
int compare_versions(std::string_view a, std::string_view b);

/// The callee Reference of the call whose `(` is token `lpar`, if the callee is a dotted name.
const semantic::Reference* callee_of(const semantic::Model& m, semantic::TokenIndex lpar);
/// The last name of a callee chain ("to" for `x.y.to(`), also for calls on call results.
std::string_view callee_last_name(const semantic::Model& m, semantic::TokenIndex lpar);

/// Top-level arguments of the call whose `(` is `lpar`: token index ranges [first, last].
struct Arg {
  semantic::TokenIndex first, last;
  std::string_view keyword;  ///< "" for positional
};
std::vector<Arg> call_args(const semantic::Model& m, semantic::TokenIndex lpar);

// Rule families (each file documents its family; engine.cc's family table says what each
// needs and which families it runs after).
void run_imports(Context& ctx);         // TP001-TP002 imports.cc
void run_amp(Context& ctx);             // TP200-TP201 amp.cc
void run_cuda_api(Context& ctx);        // TP100 cuda_api.cc
void run_device(Context& ctx);          // TP300-TP302 device.cc
void run_distributed(Context& ctx);     // TP400-TP402 distributed.cc
void run_env(Context& ctx);             // TP500 env.cc
void run_dtypes(Context& ctx);          // TP210 dtypes.cc
void run_torch_versions(Context& ctx);  // TP960 torch_versions.cc
void run_setup_requires(Context& ctx);  // TP902 setup_requires.cc
/// TP902 for one requirement string of a Python file (setup.py), judged as a requirements.txt
/// line is (other_files.cc); `at` is the byte offset of its value.
void scan_requirement_string(Context& ctx, std::string_view value, std::uint32_t at);
void run_custom_args(Context& ctx);        // TP800 custom_args.cc
void run_profiler_activity(Context& ctx);  // TP600 profiler_activity.cc
void run_cuda_leftover(Context& ctx);      // TP700 cuda_leftover.cc
void run_specify_device(Context& ctx);     // TP303 specify_device.cc
void run_custom_rules(Context& ctx);       // TP801-TP804 custom_rules.cc
void run_ddp(Context& ctx);                // TP410-TP417 ddp.cc (--distributed only)
void run_idiom(Context& ctx);              // TP310 idiom.cc, on the output (output_pass.cc)
/// The first token of a use of torch.distributed / DDP (an import or a reference), if any.
std::optional<semantic::TokenIndex> uses_torch_distributed(const semantic::Model& m);
void run_device_value(Context& ctx);  // TP304 device_value.cc
void run_sdpa_kernel(Context& ctx);   // TP110 sdpa_kernel.cc
void run_oom_text(Context& ctx);      // TP120 oom_text.cc
void run_nvidia_smi(Context& ctx);    // TP130 nvidia_smi.cc
// tools/new_rule.py: declarations
void run_insertions(Context& ctx);       // TP900 insertions.cc
void run_custom_op_calls(Context& ctx);  // TP903 custom_op_calls.cc
void run_vendor_lists(Context& ctx);     // TP950 vendor_lists.cc
// The producers of the codes that more than one file of rules/ makes (each code's own is in its
// family's file, next to its doc).
/// TP900 (insertions.cc).
void tp900(Context& ctx, Draft d);
/// TP410 (ddp.cc): the entry script's set-up, and the launchers (project_rules.cc).
Finding tp410(Draft d);
/// TP902 (other_files.cc): requirements and launchers, and those the output needs
/// (project_rules.cc).
Finding tp902(Draft d);
/// The vendor's advice (advice.cc): not a rule family, it changes nothing and emits no code.
void run_advice(Context& ctx, const catalogue::AdviceTable& table);

}  // namespace torchport::rules
