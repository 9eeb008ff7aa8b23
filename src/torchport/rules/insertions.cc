// Rule family TP900: statements the rewritten file needs.
//
// What it does:
//   Inserts, once per file and only when the file was changed:
//   - the target's import (`import torch_npu`, `import torch_mlu`, `import torch_musa`) right
//     after the first module-level torch import, unless the file already imports it;
//   - `import torch` when a replacement names torch and the file does not bind it;
//   - for --target accelerator, where a rewrite needs a device and the script has none in reach,
//     a device variable named `device` (`accel_device` when the script binds `device`
//     elsewhere), in the narrowest scope that covers every use: first in the function's body
//     (after its docstring) when one function uses it, else after the imports:
//       device = torch.accelerator.current_accelerator() if torch.accelerator.is_available()
//       else torch.device("cpu")
//   - for --specify-device, DEVICE_ID read from the environment and made the current device
//     (Ascend's -s; the target's device_id_env);
//   - where torch.cuda.Event has no device to run on (cpu; accelerator on a CPU-only machine),
//     the small class HostEvent (_TpHostEvent where the file uses that name), which times on
//     the host.
// Why:
//   torch.npu / torch.mlu / torch.musa only exist after the vendor package is imported; the
//   accelerator target keeps the output readable with one variable instead of a wrapper around
//   every call.
// Example:
//   import torch
//   x = torch.ones(1).cuda()
// Becomes (npu):
//   import torch
//   import torch_npu
//   x = torch.ones(1).npu()
// Safety:
//   Inserted lines use the file's line endings. Nothing is inserted into an unchanged file.
#include <torchport/rules/context.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace torchport::rules {

/// TP900 (target-import): the target's import, `import torch` and the device variable. Its one
/// producer: every TP900 finding is made here.
void tp900(Context& ctx, Draft d) { ctx.add("TP900", std::move(d)); }
namespace {

using syntax::TokenKind;

/// The outermost function around the code at byte offset `at`, or 0 (module level).
std::uint32_t function_around(const semantic::Model& m, std::uint32_t at) {
  const std::vector<semantic::Line>& lines = m.lines();
  auto it =
      std::upper_bound(lines.begin(), lines.end(), at,
                       [](std::uint32_t off, const semantic::Line& l) { return off < l.begin; });
  if (it == lines.begin()) return 0;
  --it;
  if (at >= it->end) return 0;
  return m.outermost_function(it->scope);
}

/// Where a statement goes first in a function body: the start of the physical line of its first
/// statement (after a docstring), with that statement's indentation.
struct LocalStart {
  std::uint32_t at = 0;
  std::string indent;
  std::string function;
};

std::optional<LocalStart> function_body_start(const semantic::Model& m, std::uint32_t fn) {
  const std::vector<semantic::Line>& lines = m.lines();
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].scope == fn) {
      first = i;
      break;
    }
  }
  // A lambda or a one-line `def f(): ...` has no line of its own.
  if (first == lines.size() || first == 0) return std::nullopt;
  LocalStart out;
  // The header is the logical line just before the body: `def name(...):`.
  for (semantic::TokenIndex t : lines[first - 1].tokens) {
    if (m.kind(t) != TokenKind::KwDef) continue;
    if (auto n = m.next(t); n && m.kind(*n) == TokenKind::Name) out.function = m.token_text(*n);
    break;
  }
  if (out.function.empty()) return std::nullopt;
  std::size_t at = first;
  const semantic::Line& head = lines[first];
  const bool docstring =
      std::all_of(head.tokens.begin(), head.tokens.end(),
                  [&](semantic::TokenIndex t) { return m.kind(t) == TokenKind::String; });
  if (docstring) {
    at = lines.size();
    for (std::size_t i = first + 1; i < lines.size(); ++i) {
      if (lines[i].scope == fn && lines[i].depth == head.depth) {
        at = i;
        break;
      }
    }
    if (at == lines.size()) return std::nullopt;
  }
  const std::string_view text = m.text();
  std::uint32_t start = lines[at].begin;
  while (start > 0 && text[start - 1] != '\n' && text[start - 1] != '\r') --start;
  out.indent = std::string(text.substr(start, lines[at].begin - start));
  if (out.indent.empty() || out.indent.find_first_not_of(" \t") != std::string::npos) {
    return std::nullopt;  // `x = 1; y = 2` on the header's line, or a form feed
  }
  out.at = start;
  return out;
}

struct Insert {
  std::uint32_t at;
  std::string api, message, text;
  bool before_all = false;  ///< before every other edit at `at` (a local device variable)
};

/// The definition of the host event class (torch.cuda.Event without a device).
std::string host_event_class(const Context& ctx) {
  const semantic::Model& m = ctx.m;
  const std::string nl(m.newline());
  const std::string time = m.module_alias("time").value_or("time");
  const std::string k(ctx.host_event_name());
  const std::vector<std::string> body = {
      "class " + k + ":",
      "    \"\"\"torch.cuda.Event without a device (inserted by torchport): CPU work is "
      "synchronous,",
      "    so an event is complete once recorded; elapsed_time() is host time in ms.\"\"\"",
      "",
      "    def __init__(self, enable_timing=False, blocking=False, interprocess=False):",
      "        self.recorded_at = None",
      "",
      "    def record(self, stream=None):",
      "        self.recorded_at = " + time + ".perf_counter()",
      "",
      "    def query(self):",
      "        return True",
      "",
      "    def synchronize(self):",
      "        pass",
      "",
      "    def wait(self, stream=None):",
      "        pass",
      "",
      "    def elapsed_time(self, end_event):",
      "        return (end_event.recorded_at - self.recorded_at) * 1000.0",
      "",
  };
  std::string cls = nl;
  for (const std::string& l : body) cls += l + nl;
  return cls;
}

/// The accelerator's device variable, in the narrowest scope that covers every use (issue 19
/// §2): local to the function when a single function uses it, module-level (at `var_at`) when
/// code at module level or several functions do (one shared name rather than copies).
Insert device_variable(Context& ctx, const std::string& torch, std::uint32_t var_at) {
  const semantic::Model& m = ctx.m;
  const std::string nl(m.newline());
  const std::string& t = torch;
  const std::string var(ctx.helper_name());
  const std::string value = var + " = " + t + ".accelerator.current_accelerator() if " + t +
                            ".accelerator.is_available() else " + t + ".device(\"cpu\")";
  std::optional<LocalStart> local;
  std::set<std::uint32_t> functions;
  bool module_level = false;
  for (const std::optional<std::uint32_t>& at : ctx.device_var_uses) {
    const std::uint32_t fn = at ? function_around(m, *at) : 0;
    if (fn == 0) module_level = true;
    functions.insert(fn);
  }
  if (!module_level && functions.size() == 1) local = function_body_start(m, *functions.begin());
  if (!local) return {var_at, var, "insert the device variable (torch >= 2.6)", value + nl};
  return {local->at, var,
          "insert the device variable at the start of " + local->function + "() (torch >= 2.6)",
          local->indent + value + nl, true};
}

/// One TP900 finding per offset, so that the driver keeps their order.
void emit(Context& ctx, std::vector<Insert> inserts) {
  const std::string nl(ctx.m.newline());
  const std::string_view text = ctx.m.text();
  auto prefix_newline = [&](std::uint32_t at) {
    return (at > 0 && at == text.size() && text.back() != '\n' && text.back() != '\r')
               ? nl
               : std::string();
  };
  std::stable_sort(inserts.begin(), inserts.end(),
                   [](const Insert& a, const Insert& b) { return a.at < b.at; });
  for (std::size_t i = 0; i < inserts.size();) {
    std::size_t j = i;
    std::string body = prefix_newline(inserts[i].at);
    std::string api, message;
    while (j < inserts.size() && inserts[j].at == inserts[i].at) {
      body += inserts[j].text;
      api += (api.empty() ? "" : "; ") + inserts[j].api;
      message += (message.empty() ? "" : "; ") + inserts[j].message;
      ++j;
    }
    Draft d = ctx.rewrite(api, message, inserts[i].at, inserts[i].at, body);
    // A local device variable goes before every other edit at its place: they use it.
    if (inserts[i].before_all) d.fix->edits.front().order = -1;
    tp900(ctx, std::move(d));
    i = j;
  }
}

}  // namespace

void run_insertions(Context& ctx) {
  // A file whose only changes were incidental ones is settled before (NeedSettled).
  if (!ctx.changed) return;
  const semantic::Model& m = ctx.m;
  const std::string nl(m.newline());
  // The target import.
  std::string target_import = ctx.target.import_stmt;
  if (!target_import.empty()) {
    const std::string module = target_import.substr(target_import.rfind(' ') + 1);
    for (const semantic::Import& im : m.imports()) {
      if (im.module == module || im.module.starts_with(module + ".")) target_import.clear();
    }
  }
  const std::string torch = ctx.used_device_var ? ctx.render("torch") : std::string("torch");
  const std::uint32_t block_end = std::max(m.import_block_end(), ctx.opts.top_of_module);
  const auto after_torch = m.after_first_torch_import();
  // A notebook runs its cells in order: when a rewritten line comes before the first torch
  // import (a pipeline put on the device in the cell before `import torch`), what it needs goes
  // at the top, not after that import.
  bool early = false;
  if (ctx.opts.notebook && after_torch) {
    for (const Finding& f : ctx.result.findings)
      if (f.fix && f.begin < *after_torch) early = true;
    for (const std::optional<std::uint32_t>& at : ctx.device_var_uses)
      if (at && *at < *after_torch) early = true;
  }
  std::uint32_t var_at = early ? block_end : std::max(block_end, after_torch.value_or(0));
  std::vector<Insert> inserts;
  if (ctx.need_torch_import) {
    inserts.push_back({block_end, "import torch", "insert import torch", "import torch" + nl});
    var_at = std::max(var_at, block_end);
  }
  if (!target_import.empty()) {
    const std::uint32_t at = early ? block_end : after_torch.value_or(block_end);
    inserts.push_back({at, target_import, "insert " + target_import, target_import + nl});
    ctx.target_import_inserted = true;
  }
  // An Ascend InsertGlobalRule (TP804) may have defined the variable already.
  const std::string& custom = ctx.custom_inserted;
  const bool var_inserted = custom.starts_with(ctx.device_id_var()) ||
                            custom.find(nl + ctx.device_id_var()) != std::string::npos;
  if (ctx.used_device_id && !var_inserted) {
    std::string os = "os";
    if (auto alias = m.module_alias("os")) {
      os = *alias;
    } else {
      inserts.push_back({var_at, "import os", "insert import os", "import os" + nl});
    }
    const std::string var = ctx.device_id_var();
    inserts.push_back({var_at, var, "insert " + var + " read from the environment",
                       var + " = int(" + os + ".environ.get(\"" + var + "\", \"0\"))" + nl});
    // --specify-device: the variable is the current device too (Ascend's InsertGlobalRule),
    // so `.cuda()` and the torch.cuda calls without a device use it.
    const catalogue::Mapping* sd = ctx.cat.lookup("torch.cuda.set_device", ctx.target.name);
    if (ctx.opts.specify_device && !ctx.target.device_id_env.empty() && sd &&
        sd->status == catalogue::Status::Supported && !sd->replacement.empty()) {
      inserts.push_back({var_at, "set_device", "insert " + var + " as the current device",
                         ctx.render(sd->replacement) + "(" + var + ")" + nl});
    }
  }
  const bool host_event = ctx.used_host_event && !m.lookup(ctx.host_event_name(), 0);
  if (host_event && !m.module_alias("time")) {
    inserts.push_back({block_end, "import time", "insert import time", "import time" + nl});
  }
  if (ctx.used_device_var && !m.lookup(ctx.helper_name(), 0)) {
    Insert var = device_variable(ctx, torch, var_at);
    // Before the file's own `import torch` (a notebook's early use): torch is imported first.
    if (!var.before_all && early && !ctx.need_torch_import && var_at < *after_torch)
      inserts.push_back({var_at, "import torch", "insert import torch", "import torch" + nl});
    inserts.push_back(std::move(var));
    ctx.require_torch(kAcceleratorMinTorch);
  }
  if (host_event) {
    const std::string k(ctx.host_event_name());
    inserts.push_back(
        {var_at, k, "insert " + k + ", torch.cuda.Event timed on the host", host_event_class(ctx)});
  }
  emit(ctx, std::move(inserts));
}

}  // namespace torchport::rules
