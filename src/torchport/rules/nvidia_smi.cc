// Rule family TP130: nvidia-smi in a subprocess, and the device counts read from its list.
//
// What it does:
//   A call that runs nvidia-smi (subprocess.check_output/run/Popen/call/getoutput/
//   getstatusoutput, os.popen/os.system; the command a string or a list whose first item is
//   the program) is found through the semantic model. Where it lists the GPUs (`-L`,
//   `--list-gpus`) and the code counts the list (len() of its lines through
//   .decode/.strip/.split/.splitlines/.read/.readlines/.stdout, or .count("GPU")), the whole
//   count becomes the target's device count, the one torch.cuda.device_count() becomes there
//   (the catalogue's mapping). Any other nvidia-smi call is reported, as is a notebook's
//   IPython line that runs it (`!nvidia-smi`), which torchport does not edit.
// Why:
//   nvidia-smi knows NVIDIA GPUs only: on another machine it is not installed (FileNotFoundError)
//   or lists no device, so the count is wrong or the script dies at start-up.
// Example:
//   n_gpu = len(subprocess.check_output(["nvidia-smi", "-L"]).decode().strip().split("\n"))
// Becomes (npu):
//   n_gpu = torch_npu.npu.device_count()
//   (cpu: 0, as torch.cuda.device_count() becomes there; accelerator:
//   torch.accelerator.device_count())
// Safety:
//   Only a count of the listing is rewritten: the command's other uses (its text printed, a
//   query of memory or utilisation, a shell pipeline) have no device-agnostic equivalent and
//   are reported, as is a command built at run time.
#include <torchport/rules/context.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>

namespace torchport::rules {

namespace {

/// TP130 (nvidia-smi): nvidia-smi in a subprocess: a count of its GPU list becomes the target's
/// device count. Its one producer: every TP130 finding is made here.
void tp130(Context& ctx, Draft d) { ctx.add("TP130", std::move(d)); }

using syntax::Node;
using syntax::NodeKind;

constexpr std::array<std::string_view, 8> kRunners = {"subprocess.check_output",
                                                      "subprocess.run",
                                                      "subprocess.Popen",
                                                      "subprocess.call",
                                                      "subprocess.getoutput",
                                                      "subprocess.getstatusoutput",
                                                      "os.popen",
                                                      "os.system"};

// The methods and attributes a listing's text goes through before it is counted.
constexpr std::array<std::string_view, 9> kThrough = {
    "decode", "strip", "rstrip", "lstrip", "split", "splitlines", "read", "readlines", "stdout"};

/// The shell text runs the program nvidia-smi (the word itself, not nvidia-smi-like).
bool runs_nvidia_smi(std::string_view text) {
  constexpr std::string_view kTool = "nvidia-smi";
  const auto part = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  };
  for (std::size_t at = text.find(kTool); at != std::string_view::npos;
       at = text.find(kTool, at + 1)) {
    const std::size_t end = at + kTool.size();
    if ((at == 0 || !part(text[at - 1])) && (end == text.size() || !part(text[end]))) return true;
  }
  return false;
}

class NvidiaSmi {
 public:
  explicit NvidiaSmi(Context& ctx) : ctx_(ctx), t_(ctx.tree) {}

  void run() {
    for (const Node* c : t_.find_all(NodeKind::Call)) call(*c);
    // A notebook's shell lines (`!nvidia-smi`): kept as they are, so reported.
    for (const Options::IPythonLine& l : ctx_.opts.ipython_lines) {
      if (!runs_nvidia_smi(l.text)) continue;
      tp130(ctx_,
            report(Operation::Unsupported, "nvidia-smi",
                   "an IPython line runs nvidia-smi (" + l.text +
                       "), which knows NVIDIA GPUs only: on " + elsewhere() +
                       " it is not installed or lists no device. IPython lines are kept as they "
                       "are: change or remove it by hand",
                   l.begin, l.end));
    }
  }

 private:
  /// The command's words when it is a literal: "nvidia-smi -L" or ["nvidia-smi", "-L"].
  std::optional<std::vector<std::string>> words(const Node& cmd) const {
    std::vector<std::string> out;
    if (cmd.kind() == NodeKind::Constant && t_.is_string(cmd)) {
      const std::optional<std::string> s = t_.string_value(cmd);
      if (!s) return std::nullopt;
      std::size_t i = 0;
      while (i < s->size()) {
        const std::size_t b = s->find_first_not_of(" \t", i);
        if (b == std::string::npos) break;
        const std::size_t e = s->find_first_of(" \t", b);
        out.push_back(s->substr(b, e == std::string::npos ? std::string::npos : e - b));
        i = e == std::string::npos ? s->size() : e;
      }
      return out;
    }
    if (cmd.kind() != NodeKind::List && cmd.kind() != NodeKind::Tuple) return std::nullopt;
    for (const Node* e : cmd.children()) {
      if (e->kind() != NodeKind::Constant || !t_.is_string(*e)) return std::nullopt;
      const std::optional<std::string> s = t_.string_value(*e);
      if (!s) return std::nullopt;
      out.push_back(*s);
    }
    return out;
  }

  /// The node that counts the listing `n` produces (len(...) or .count("GPU")), or nullptr.
  const Node* count_of(const Node& n) const {
    const Node* cur = &n;
    for (;;) {
      const Node* p = cur->parent();
      if (!p) return nullptr;
      if (p->kind() == NodeKind::Attribute && p->value() == cur) {
        const std::string_view attr = t_.name(*p);
        const Node* pc = p->parent();
        const bool called = pc && pc->kind() == NodeKind::Call && pc->func() == p;
        if (attr == "count" && called) {
          const auto args = pc->args();
          if (std::distance(args.begin(), args.end()) != 1) return nullptr;
          const Node* a = *args.begin();
          const std::optional<std::string> s = a->kind() == NodeKind::Constant && t_.is_string(*a)
                                                   ? t_.string_value(*a)
                                                   : std::nullopt;
          return s && *s == "GPU" ? pc : nullptr;
        }
        if (std::find(kThrough.begin(), kThrough.end(), attr) == kThrough.end()) return nullptr;
        cur = attr == "stdout" ? p : (called ? pc : nullptr);
        if (!cur) return nullptr;
        continue;
      }
      if (p->kind() == NodeKind::Call && cur->role() == syntax::Role::Arg && p->func() &&
          p->func()->kind() == NodeKind::Name && t_.name(*p->func()) == "len") {
        const auto args = p->args();
        return std::distance(args.begin(), args.end()) == 1 && cur != &n ? p : nullptr;
      }
      return nullptr;
    }
  }

  /// Where nvidia-smi finds no GPU: the target, or for the accelerator target (which also runs
  /// on NVIDIA GPUs, where nvidia-smi works) every machine whose device is not one.
  std::string elsewhere() const {
    return ctx_.accelerator()
               ? "a machine whose accelerator is not an NVIDIA GPU (or that has none)"
               : ctx_.target.name;
  }

  /// The target's device count, as torch.cuda.device_count() becomes there; "" if none.
  std::string device_count() {
    const catalogue::Mapping* mp = ctx_.cat.lookup("torch.cuda.device_count", ctx_.target.name);
    if (!mp || mp->status == catalogue::Status::Unsupported) return {};
    if (!mp->replacement.empty()) {
      ctx_.require_torch(mp->min_torch);
      return ctx_.render(mp->replacement) + "()";
    }
    return mp->without_device;
  }

  void call(const Node& c) {
    const Node* f = c.func();
    if (!f) return;
    const semantic::Reference* r = ctx_.m.reference_at(f->last_token());
    if (!r || r->last != f->last_token() ||
        std::find(kRunners.begin(), kRunners.end(), r->qualified) == kRunners.end())
      return;
    const auto args = c.args();
    if (args.begin() == args.end()) return;
    const std::optional<std::vector<std::string>> w = words(**args.begin());
    if (!w || w->empty() || (*w)[0] != "nvidia-smi") return;
    const auto cr = t_.byte_range(c);
    const bool lists = std::any_of(w->begin() + 1, w->end(), [](const std::string& a) {
      return a == "-L" || a == "--list-gpus";
    });
    const Node* count = lists ? count_of(c) : nullptr;
    const std::string replacement = count ? device_count() : std::string{};
    if (!count || replacement.empty()) {
      tp130(ctx_,
            report(Operation::Unsupported, "nvidia-smi",
                   "nvidia-smi knows NVIDIA GPUs only: on " + elsewhere() +
                       " it is not installed or lists no device. Left as is" +
                       (lists ? std::string(": the listing is not counted with len() or "
                                            ".count(\"GPU\"); count the devices with "
                                            "torch.cuda.device_count() as ported to the target")
                              : std::string(": query the device through torch instead")),
                   cr.begin, cr.end));
      return;
    }
    const auto nr = t_.byte_range(*count);
    tp130(ctx_,
          ctx_.rewrite(
              "nvidia-smi",
              "change the count of nvidia-smi's GPU list to " + replacement + " (the devices of " +
                  (ctx_.accelerator() ? std::string("the accelerator") : ctx_.target.name) +
                  ", as torch.cuda.device_count() " + "becomes there)",
              nr.begin, nr.end,
              ctx_.operand(replacement, count->first_token(), count->last_token())));
  }

  Context& ctx_;
  const syntax::Tree& t_;
};

}  // namespace

void run_nvidia_smi(Context& ctx) { NvidiaSmi(ctx).run(); }

}  // namespace torchport::rules
