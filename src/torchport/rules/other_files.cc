// Rule family TP901-TP902: the project's non-Python files.
//
// What it does:
//   TP901 lists custom CUDA operators defined in C++/CUDA sources (`m.def("name", ...)` in a
//   PYBIND11_MODULE, `m.def("name(Tensor x) -> Tensor")` / `m.impl("name", ...)` in
//   TORCH_LIBRARY blocks) for cuda_op_list.csv and reports each as UNSUPPORTED.
//   TP902 reports CUDA-only packages in requirements*.txt / pyproject.toml / setup.cfg, and in
//   shell launchers replaces CUDA_VISIBLE_DEVICES by the target's variable and reports
//   nvidia-smi.
// Why:
//   Custom CUDA kernels must be ported by hand (the vendors' tools only list them too), and a
//   CUDA-only requirement or launcher setting breaks the run before any Python executes.
// Example:
//   export CUDA_VISIBLE_DEVICES=0,1
//   flash-attn==2.5.0
// Becomes (npu):
//   export ASCEND_RT_VISIBLE_DEVICES=0,1
//   flash-attn==2.5.0            (reported UNSUPPORTED)
// Safety:
//   Only the variable name in a shell file is rewritten; everything else is reported.
#include <torchport/rules/engine.h>

#include <array>
#include <regex>

namespace torchport::rules {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view base_name(std::string_view path) {
  auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

constexpr std::array<std::string_view, 9> kCudaPackages = {"flash-attn", "flash_attn",   "xformers",
                                                           "apex",       "bitsandbytes", "cupy",
                                                           "pynvml",     "nvidia-ml-py", "triton"};

std::string_view visible_devices(std::string_view target) {
  if (target == "npu") return "ASCEND_RT_VISIBLE_DEVICES";
  if (target == "mlu") return "MLU_VISIBLE_DEVICES";
  if (target == "musa") return "MUSA_VISIBLE_DEVICES";
  if (target == "xpu") return "ZE_AFFINITY_MASK";
  if (target == "hpu") return "HABANA_VISIBLE_MODULES";
  return {};
}

Finding make(std::string_view code, Operation op, std::string api, std::string message,
             std::size_t b, std::size_t e) {
  Finding f;
  f.code = std::string(code);
  f.op = op;
  f.api = std::move(api);
  f.message = std::move(message);
  f.begin = static_cast<std::uint32_t>(b);
  f.end = static_cast<std::uint32_t>(e);
  return f;
}

}  // namespace

FileResult check_other(std::string_view path, std::string_view text, const Options& opts) {
  FileResult out;
  const std::string_view name = base_name(path);
  const std::string s(text);
  if (ends_with(name, ".cpp") || ends_with(name, ".cc") || ends_with(name, ".cu") ||
      ends_with(name, ".cuh") || ends_with(name, ".cxx")) {
    if (s.find("PYBIND11_MODULE") == std::string::npos &&
        s.find("TORCH_LIBRARY") == std::string::npos) {
      return out;
    }
    static const std::regex def(R"re(\b\w+\s*\.\s*def\s*\(\s*"([A-Za-z_][\w:.]*))re");
    for (auto it = std::sregex_iterator(s.begin(), s.end(), def); it != std::sregex_iterator();
         ++it) {
      std::string op = (*it)[1].str();
      if (auto c = op.rfind("::"); c != std::string::npos) op = op.substr(c + 2);
      out.cuda_apis.push_back(op);
      const auto b = static_cast<std::size_t>((*it).position(1));
      out.findings.push_back(make("TP901", Operation::Unsupported, op,
                                  "User-defined CUDA Operator.", b,
                                  b + static_cast<std::size_t>((*it).length(1))));
    }
    return out;
  }
  const bool requirements = (name.starts_with("requirements") && ends_with(name, ".txt")) ||
                            name == "pyproject.toml" || name == "setup.cfg";
  if (requirements) {
    static const std::regex pkg(R"re((^|["'\s])([A-Za-z][\w.-]*)\s*([<>=!~;\[]|["']|$))re",
                                std::regex::multiline);
    for (auto it = std::sregex_iterator(s.begin(), s.end(), pkg); it != std::sregex_iterator();
         ++it) {
      const std::string p = (*it)[2].str();
      for (auto c : kCudaPackages) {
        if (p == c) {
          const auto b = static_cast<std::size_t>((*it).position(2));
          out.findings.push_back(make(
              "TP902", Operation::Unsupported, p,
              p + " is a CUDA-only package; install the target's alternative", b, b + p.size()));
        }
      }
    }
    return out;
  }
  if (ends_with(name, ".sh") || ends_with(name, ".bash")) {
    const std::string_view var = visible_devices(opts.target);
    for (std::size_t at = s.find("CUDA_VISIBLE_DEVICES"); at != std::string::npos;
         at = s.find("CUDA_VISIBLE_DEVICES", at + 1)) {
      if (opts.target == "accelerator") continue;
      if (var.empty()) {
        out.findings.push_back(make("TP902", Operation::Unsupported, "CUDA_VISIBLE_DEVICES",
                                    opts.target + " has no visible-devices variable", at, at + 20));
        continue;
      }
      Finding f = make("TP902", Operation::Modify, "CUDA_VISIBLE_DEVICES",
                       "change CUDA_VISIBLE_DEVICES to " + std::string(var), at, at + 20);
      f.fix = fix::Fix{{fix::Edit{f.begin, f.end, std::string(var)}}, fix::Applicability::Safe};
      out.findings.push_back(std::move(f));
    }
    for (std::size_t at = s.find("nvidia-smi"); at != std::string::npos;
         at = s.find("nvidia-smi", at + 1)) {
      out.findings.push_back(make("TP902", Operation::Unsupported, "nvidia-smi",
                                  "nvidia-smi only sees NVIDIA GPUs; use the vendor's tool "
                                  "(npu-smi, cnmon, mthreads-gmi, xpu-smi, hl-smi)",
                                  at, at + 10));
    }
  }
  return out;
}

}  // namespace torchport::rules
