// The device-value layer: where the value of an expression that reaches a device position comes
// from, read from the syntax tree. It sits between the semantic model and the rules: a rule asks
// it "what is `gpu_id` in `model.to(gpu_id)`?" instead of matching tokens or names.
//
// The analysis follows values backwards, inside one module (and, given the project, into the
// project's other modules: project_values.h), through:
//   - literals: an integer (a device index), "cuda" / "cuda:N", "cpu", "nccl", and device strings
//     built from "cuda" at run time (f"cuda:{i}", "cuda:%d" % i, "cuda:" + str(i),
//     "cuda:{}".format(i));
//   - names: every binding of the name in the scope that Python resolves it in (the function's
//     own bindings, else the module's), and a function's parameters: their defaults and the
//     arguments of every call of the function in the module (`worker(rank, ...)`), with
//     `torch.multiprocessing.spawn(fn, ...)` passing fn its process index;
//   - attributes: `args.gpu` from argparse (`add_argument("--gpu", type=int, default=0)`: an int
//     option is an index, else its default) and from every `X.gpu = ...` in the module;
//   - calls: `int(...)` of an index, `os.environ["LOCAL_RANK"]`, `os.getenv("RANK")` and the like
//     under int(), torch.distributed's get_rank() / get_local_rank(), torch.cuda.current_device(),
//     and the return values of the module's own functions (`select_device()`);
//   - conditional and `or` expressions: both sides;
//   - with a ModuleContext: a name imported from another module of the project, an attribute
//     of such a module (`config.GPU_ID`), and `args.gpu` whose option another module defines.
// A value whose sources are not all known says so (Source::Unknown among them), and the rules
// then report instead of rewriting. The walk is memoised per node and bounded (a cycle or a chain
// deeper than kMaxSteps is Unknown).
#pragma once

#include <torchport/syntax/tree.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::flow {

/// Where a value can come from. A Value is a set of these.
enum class Source : std::uint8_t {
  Unknown = 0,       ///< not determined by the code (a call result, a subscript, input...)
  DeviceString = 1,  ///< a CUDA device literal: "cuda", "cuda:0"
  HostString = 2,    ///< "cpu"
  Formatted = 3,     ///< a device string built from "cuda" at run time: f"cuda:{i}"
  Index = 4,         ///< an integer device index (a literal, LOCAL_RANK, a rank, an int option)
  Backend = 5,       ///< the collective backend name "nccl"
  None = 6,          ///< None (the default device)
  Text = 7,          ///< another string literal ("mps", "gloo", "auto")
};

struct Value {
  std::uint8_t sources = 0;  ///< bit (1 << Source)
  /// The literal nodes the value comes from (Constant or JoinedStr/BinOp for Formatted), in
  /// source order, without duplicates: what a rule rewrites.
  std::vector<const syntax::Node*> literals;

  bool has(Source s) const { return (sources & (1u << static_cast<unsigned>(s))) != 0; }
  /// Every source is one of `allowed` (and there is at least one).
  bool only(std::initializer_list<Source> allowed) const {
    std::uint8_t mask = 0;
    for (Source s : allowed) mask |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(s));
    return sources != 0 && (sources & ~mask) == 0;
  }
  bool known() const { return sources != 0 && !has(Source::Unknown); }
  void add(Source s) { sources |= static_cast<std::uint8_t>(1u << static_cast<unsigned>(s)); }
  void merge(const Value& o);
};

/// argparse's dest for an option string: "--no-cuda" -> "no_cuda", "-d" -> "d"; "" for one made
/// of dashes only ("--", which argparse refuses), so a script's odd option never throws here.
std::string option_dest(std::string_view option);

class ProjectValues;

/// Where the module being analysed sits in its project: the other modules' values follow
/// `from ... import` and argparse options across files (project_values.h).
struct ModuleContext {
  const ProjectValues* project = nullptr;
  std::string module;       ///< the module's dotted name ("pkg.train"); "" when not importable
  bool is_package = false;  ///< the module is a package's __init__.py
};

/// An argparse option as the module defines it (add_argument, configargparse's `.add`).
struct OptionFact {
  std::vector<std::string> dests;  ///< every dest it may have: of each option string, and dest=
  std::string first;               ///< the first option string ("--device")
  bool add_argument = false;       ///< called as add_argument (not `.add`)
  bool is_int = false;             ///< type=int
  bool has_default = false;
  const syntax::Node* default_value = nullptr;
};

class DeviceValues {
 public:
  /// Indexes the module (one walk). The tree must outlive this object.
  explicit DeviceValues(const syntax::Tree& tree, ModuleContext where = {});
  ~DeviceValues();
  DeviceValues(const DeviceValues&) = delete;
  DeviceValues& operator=(const DeviceValues&) = delete;

  /// Where the value of expression `e` comes from.
  Value of(const syntax::Node& e) const;

  /// True when every source of `e` is an integer device index (None allowed: `default=None`
  /// options used under `if args.gpu is not None`).
  bool is_index(const syntax::Node& e) const;
  /// The same test on a value already asked for: `is_index(of(e))` is `is_index(e)`, since
  /// of() answers the same node alike however often it is asked (a value computed under a cut
  /// is kept for one query only, and the memo keeps only values that no cut reached).
  static bool is_index(const Value& v) {
    return v.has(Source::Index) && v.only({Source::Index, Source::None});
  }

  /// True when `attribute` (`self.is_cuda`, `cfg.cuda`) names an attribute that the module's own
  /// code assigns on the same object (`self.is_cuda = ...` in the same class; `cfg.cuda = ...`):
  /// a user's attribute, not torch's (Tensor.is_cuda cannot be assigned).
  bool user_attribute(const syntax::Node& attribute) const;

  /// The value of every module-level name bound only by assignments (`GPU_ID = 0`), in no
  /// particular order: what another module's `from this import GPU_ID` gets.
  std::vector<std::pair<std::string, Value>> module_values() const;

  /// The module's argparse options.
  const std::vector<OptionFact>& options() const;

  /// The longest chain of bindings followed before giving up.
  static constexpr int kMaxSteps = 24;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torchport::flow
