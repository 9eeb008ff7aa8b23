// Rule family TP901-TP902: the project's non-Python files.
//
// What it does:
//   TP901 lists custom CUDA operators defined in C++/CUDA sources (`m.def("name", ...)` in a
//   PYBIND11_MODULE, `m.def("name(Tensor x) -> Tensor")` / `m.impl("name", ...)` in
//   TORCH_LIBRARY blocks) for cuda_op_list.csv and reports each as UNSUPPORTED.
//   TP902 reports CUDA-only requirements in requirements*.txt, pyproject.toml, setup.cfg and
//   environment.yml (a setup.py's setup() call: setup_requires.cc): the catalogue's packages
//   (flash-attn, xformers, apex, cupy and cupy-cuda12x, pynvml / nvidia-ml-py, ...) with the
//   target's alternative from the catalogue, NVIDIA's CUDA wheels and conda packages (nvidia-*,
//   cuda-*, cudatoolkit, cudnn, pytorch-cuda), CUDA builds pinned by a local version
//   (torch==2.1.0+cu121) and the CUDA wheel indexes (--extra-index-url
//   https://download.pytorch.org/whl/cu121). In shell launchers it replaces CUDA_VISIBLE_DEVICES by
//   the target's variable from the catalogue (reported, and left in place, where the target has
//   none: cpu, mps, accelerator) and reports nvidia-smi. After the migration (driver.cc),
//   requirements follow the output: the torch requirement is raised to the torch the output needs,
//   and the target's vendor package (data/targets.json "requirement": torch_npu, torch_mlu,
//   torch_musa) is added to requirements*.txt and pyproject.toml's [project] dependencies where a
//   migrated file imports it. A torchvision / torchaudio / torchtext pinned to a release for
//   an older torch moves to its release for the raised floor
//   (data/catalogue/companions/torch.json), or is reported where there is none.
// Why:
//   Custom CUDA kernels must be ported by hand (the vendors' tools only list them too), and a
//   CUDA-only requirement or launcher setting breaks the run before any Python executes.
// Example:
//   export CUDA_VISIBLE_DEVICES=0,1
//   flash-attn==2.5.0
// Becomes (npu):
//   export ASCEND_RT_VISIBLE_DEVICES=0,1
//   flash-attn==2.5.0            (reported UNSUPPORTED: use torch_npu.npu_fusion_attention)
// Safety:
//   Only the variable name in a shell file is rewritten; everything else is reported.
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/context.h>
#include <torchport/rules/engine.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace torchport::rules {

namespace {

/// TP901 (custom-cuda-op): custom CUDA operators in .cpp/.cu sources (cuda_op_list.csv). Its one
/// producer: every TP901 finding is made here.
Finding tp901(Draft d) { return finding("TP901", std::move(d)); }

}  // namespace

/// TP902 (project-file): CUDA-only requirements and CUDA settings in shell launchers. Its one
/// producer: every TP902 finding is made here.
Finding tp902(Draft d) { return finding("TP902", std::move(d)); }

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// What follows the last '/' or '\\' (the whole path without one): a walk back from the end,
// over the name only (find_last_of called memchr on its two bytes for each byte of the path).
std::string_view base_name(std::string_view path) {
  std::size_t i = path.size();
  while (i > 0 && path[i - 1] != '/' && path[i - 1] != '\\') --i;
  return path.substr(i);
}

// A distribution name as pip compares them (PEP 503): lower case, runs of -_. as "-".
std::string normalize(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '_' || c == '.' || c == '-') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// The catalogue's package entry that the distribution `dist` installs.
const catalogue::Entry* package_entry(const catalogue::Catalogue& cat, std::string_view dist) {
  std::string n = normalize(dist);
  // Distribution names that differ from the import name the catalogue uses.
  if (n == "nvidia-ml-py" || n == "nvidia-ml-py3") n = "pynvml";
  if (n.starts_with("cupy-cuda")) n = "cupy";  // cupy-cuda12x, cupy-cuda11x, cupy-cuda102
  for (const catalogue::Entry& e : cat.entries()) {
    if (e.kind == catalogue::Kind::Package && e.api.find('.') == std::string::npos &&
        normalize(e.api) == n) {
      return &e;
    }
  }
  return nullptr;
}

// NVIDIA's CUDA toolkit and library distributions (pip wheels and conda packages).
bool cuda_toolkit_package(std::string_view n) {
  return n.starts_with("nvidia-") || n.starts_with("cuda-") || n == "cudatoolkit" || n == "cudnn" ||
         n == "pytorch-cuda" || n == "nccl";
}

struct Scan {
  const catalogue::Catalogue& cat;
  const Options& opts;
  std::vector<Finding>& out;

  std::string install() const {
    const catalogue::Target* t = cat.target(opts.target);
    return t && !t->install.empty() ? t->install : "the " + opts.target + " build of torch";
  }

  void add(std::string api, Operation op, std::string message, std::size_t b, std::size_t e) {
    for (const Finding& f : out) {
      if (f.begin == b && f.code == "TP902") return;  // found by two scans
    }
    out.push_back(tp902(report(op, std::move(api), std::move(message), b, e)));
  }

  // One requirement specifier ("flash-attn>=2.5", "cupy-cuda12x", "pytorch-cuda=12.1") whose
  // first byte is at `offset` in the file. Anything that does not look like one is ignored.
  void spec(std::string_view s, std::size_t offset) {
    static const std::regex req(R"re(^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*([<>=!~;\[@(].*)?$)re");
    std::match_results<std::string_view::const_iterator> mt;
    if (!std::regex_match(s.begin(), s.end(), mt, req)) return;
    const std::string dist = mt[1].str();
    const std::size_t b = offset + static_cast<std::size_t>(mt.position(1));
    const std::size_t e = b + dist.size();
    const std::string n = normalize(dist);
    if (const catalogue::Entry* entry = package_entry(cat, dist)) {
      const catalogue::Mapping* mp = cat.lookup(entry->api, opts.target);
      std::string message = "requirement " + dist + ": ";
      if (mp && !mp->note.empty()) {
        message += mp->note;
      } else {
        message += entry->api + " is CUDA-only";
      }
      if (mp && !mp->replacement.empty() && message.find(mp->replacement) == std::string::npos) {
        message += "; use " + mp->replacement;
      }
      const bool works = mp && (mp->status == catalogue::Status::Supported ||
                                mp->status == catalogue::Status::Partial);
      add(dist, works ? Operation::Unknown : Operation::Unsupported, std::move(message), b, e);
      return;
    }
    if (cuda_toolkit_package(n)) {
      add(dist, Operation::Unsupported,
          "requirement " + dist + ": an NVIDIA CUDA library, only for NVIDIA GPUs; remove it (" +
              opts.target + " needs " + install() + ")",
          b, e);
    }
  }

  // CUDA builds pinned by a local version (+cu121) and CUDA wheel indexes (/whl/cu121).
  void markers(std::string_view s, std::size_t offset) {
    static const std::regex local(
        R"re(([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:[=<>!~]=?=?)\s*v?[0-9][A-Za-z0-9.!*]*\+(cu[0-9]+)\b)re");
    static const std::regex index(R"re(https?://[^\s"',\]]*/whl/(cu[0-9]+)\b[^\s"',\]]*)re");
    using It = std::regex_iterator<std::string_view::const_iterator>;
    for (It it(s.begin(), s.end(), local); it != It(); ++it) {
      const auto b = offset + static_cast<std::size_t>((*it).position(0));
      const std::string api = (*it)[1].str() + "+" + (*it)[2].str();
      add(api, Operation::Unsupported,
          (*it)[0].str() + " pins a CUDA build (local version +" + (*it)[2].str() + "); install " +
              install() + " instead",
          b, b + static_cast<std::size_t>((*it).length(0)));
    }
    for (It it(s.begin(), s.end(), index); it != It(); ++it) {
      const auto b = offset + static_cast<std::size_t>((*it).position(0));
      add((*it)[0].str(), Operation::Unsupported,
          "a CUDA wheel index (" + (*it)[1].str() + ") serves CUDA builds only; install " +
              install() + " instead",
          b, b + static_cast<std::size_t>((*it).length(0)));
    }
  }
};

template <class F>
void for_each_line(std::string_view s, F f) {
  std::size_t at = 0;
  while (at < s.size()) {
    std::size_t nl = s.find('\n', at);
    if (nl == std::string_view::npos) nl = s.size();
    std::string_view line = s.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    f(line, at);
    at = nl + 1;
  }
}

// Strips a `#` comment (at the start or after whitespace, as pip and YAML read them).
std::string_view strip_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

void scan_requirement_file(std::string_view name, std::string_view s, Scan& scan) {
  const bool yaml = ends_with(name, ".yml") || ends_with(name, ".yaml");
  const bool txt = ends_with(name, ".txt");
  for_each_line(s, [&](std::string_view raw, std::size_t at) {
    const std::string_view line = strip_comment(raw);
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos) return;
    if (yaml) {  // list items: "- flash-attn==2.5", "- pytorch-cuda=12.1"
      if (line[i] != '-') return;
      i = line.find_first_not_of(" \t", i + 1);
      if (i == std::string_view::npos) return;
    }
    if (line[i] == '-' && txt) return;  // pip options: only their URLs matter (markers)
    scan.spec(line.substr(i), at + i);
    if (yaml || txt) return;
    // pyproject.toml / setup.cfg: quoted requirement strings, and poetry's `name = "^1.0"`.
    for (std::size_t q = line.find_first_of("\"'"); q != std::string_view::npos;) {
      const std::size_t close = line.find(line[q], q + 1);
      if (close == std::string_view::npos) break;
      scan.spec(line.substr(q + 1, close - q - 1), at + q + 1);
      q = line.find_first_of("\"'", close + 1);
    }
  });
  scan.markers(s, 0);
}

bool cxx_source(std::string_view name) {
  return ends_with(name, ".cpp") || ends_with(name, ".cc") || ends_with(name, ".cu") ||
         ends_with(name, ".cuh") || ends_with(name, ".cxx");
}

bool requirements_name(std::string_view name) {
  return (name.starts_with("requirements") && ends_with(name, ".txt")) ||
         name == "pyproject.toml" || name == "setup.cfg" || name == "environment.yml" ||
         name == "environment.yaml";
}

bool shell_script(std::string_view name) {
  return ends_with(name, ".sh") || ends_with(name, ".bash");
}

}  // namespace

bool other_file_read(std::string_view path) {
  const std::string_view name = base_name(path);
  return cxx_source(name) || requirements_name(name) || shell_script(name);
}

bool requirement_file(std::string_view path) {
  const std::string_view name = base_name(path);
  return (name.starts_with("requirements") && ends_with(name, ".txt")) || name == "pyproject.toml";
}

namespace {

// ---- TP901: the custom CUDA operators a C++/CUDA source defines ----
void tp901_custom_ops(const std::string& s, FileResult& out) {
  static const std::regex def(R"re(\b\w+\s*\.\s*def\s*\(\s*"([A-Za-z_][\w:.]*))re");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), def); it != std::sregex_iterator();
       ++it) {
    std::string op = (*it)[1].str();
    if (auto c = op.rfind("::"); c != std::string::npos) op = op.substr(c + 2);
    out.cuda_apis.push_back(op);
    const auto b = static_cast<std::size_t>((*it).position(1));
    out.findings.push_back(tp901(report(Operation::Unsupported, op, "User-defined CUDA Operator.",
                                        b, b + static_cast<std::size_t>((*it).length(1)))));
  }
}

// ---- TP902: CUDA_VISIBLE_DEVICES and nvidia-smi in a shell launcher ----
void tp902_shell_launcher(const std::string& s, const catalogue::Catalogue& cat,
                          const Options& opts, FileResult& out) {
  const catalogue::Mapping* mp = cat.lookup("CUDA_VISIBLE_DEVICES", opts.target);
  const bool rename =
      mp && !mp->replacement.empty() && mp->status != catalogue::Status::Unsupported;
  for (std::size_t at = s.find("CUDA_VISIBLE_DEVICES"); at != std::string::npos;
       at = s.find("CUDA_VISIBLE_DEVICES", at + 1)) {
    if (!rename) {
      // Meaningful only on CUDA machines: it stays, and the row says why.
      out.findings.push_back(tp902(
          report(Operation::Unsupported, "CUDA_VISIBLE_DEVICES",
                 "CUDA_VISIBLE_DEVICES stays (it only selects NVIDIA GPUs): " +
                     (mp && !mp->note.empty() ? mp->note
                                              : opts.target + " has no visible-devices variable"),
                 at, at + 20)));
      continue;
    }
    Draft f = report(Operation::Modify, "CUDA_VISIBLE_DEVICES",
                     "change CUDA_VISIBLE_DEVICES to " + mp->replacement +
                         (mp->note.empty() ? "" : " (" + mp->note + ")"),
                     at, at + 20);
    f.fix = fix::Fix{{fix::Edit{f.begin, f.end, mp->replacement}}, fix::Applicability::Safe};
    out.findings.push_back(tp902(std::move(f)));
  }
  for (std::size_t at = s.find("nvidia-smi"); at != std::string::npos;
       at = s.find("nvidia-smi", at + 1)) {
    out.findings.push_back(tp902(report(Operation::Unsupported, "nvidia-smi",
                                        "nvidia-smi only sees NVIDIA GPUs; use the vendor's tool "
                                        "(npu-smi, cnmon, mthreads-gmi, xpu-smi, hl-smi)",
                                        at, at + 10)));
  }
}

}  // namespace

FileResult check_other(std::string_view path, std::string_view text, const Options& opts) {
  FileResult out;
  const std::string_view name = base_name(path);
  if (!other_file_read(name)) return out;
  const std::string s(text);
  if (cxx_source(name)) {
    if (s.find("PYBIND11_MODULE") == std::string::npos &&
        s.find("TORCH_LIBRARY") == std::string::npos) {
      return out;
    }
    tp901_custom_ops(s, out);
    return out;
  }
  const bool requirements = requirements_name(name);
  const catalogue::Catalogue& cat = catalogue::Catalogue::builtin();
  if (requirements) {
    Scan scan{cat, opts, out.findings};
    scan_requirement_file(name, s, scan);
    std::stable_sort(out.findings.begin(), out.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.begin < b.begin; });
    return out;
  }
  if (shell_script(name)) {
    tp902_shell_launcher(s, cat, opts, out);
  }
  return out;
}

namespace {

// Each requirement string of a requirements*.txt (`txt`, one per line, options skipped) or of
// a pyproject.toml (the quoted strings), with its byte offset.
template <class F>
void for_each_requirement(bool txt, std::string_view text, F requirement) {
  for_each_line(text, [&](std::string_view raw, std::size_t at) {
    const std::string_view line = strip_comment(raw);
    const std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos) return;
    if (txt) {
      if (line[i] != '-') requirement(line.substr(i), at + i);
      return;
    }
    for (std::size_t q = line.find_first_of("\"'"); q != std::string_view::npos;) {
      const std::size_t close = line.find(line[q], q + 1);
      if (close == std::string_view::npos) break;
      requirement(line.substr(q + 1, close - q - 1), at + q + 1);
      q = line.find_first_of("\"'", close + 1);
    }
  });
}

}  // namespace

std::vector<Finding> raise_torch_requirement(std::string_view path, std::string_view text,
                                             std::string_view min_torch) {
  std::vector<Finding> out;
  const std::string_view name = base_name(path);
  const bool txt = name.starts_with("requirements") && ends_with(name, ".txt");
  if (min_torch.empty() || !(txt || name == "pyproject.toml")) return out;
  // One requirement string `spec` at byte `at`: "torch", "torch>=2.0", "torch>=2.0,<3; ...".
  auto requirement = [&](std::string_view spec, std::size_t at) {
    std::size_t n = 0;
    while (n < spec.size() && (std::isalnum(static_cast<unsigned char>(spec[n])) ||
                               spec[n] == '-' || spec[n] == '_' || spec[n] == '.')) {
      ++n;
    }
    if (normalize(spec.substr(0, n)) != "torch") return;
    std::size_t end = spec.find(';');  // environment markers stay as they are
    if (end == std::string_view::npos) end = spec.size();
    std::string_view versions = spec.substr(n, end - n);
    while (!versions.empty() && (versions.back() == ' ' || versions.back() == '\t')) {
      versions.remove_suffix(1);
    }
    const std::string want = ">=" + std::string(min_torch);
    const std::string why = " (the migrated code needs torch >= " + std::string(min_torch) +
                            ": torch.accelerator, data/targets.json)";
    if (versions.find_first_not_of(" \t") == std::string_view::npos) {
      const std::size_t b = at + n;
      Draft f = report(Operation::Modify, "torch", "require torch" + want + why, b, b);
      f.fix =
          fix::Fix{{fix::Edit{static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b), want}},
                   fix::Applicability::Safe};
      out.push_back(tp902(std::move(f)));
      return;
    }
    // Each clause: ">=2.0", "==2.1.0", "<2.5".
    std::size_t pos = n;
    while (pos < n + versions.size()) {
      std::size_t comma = spec.find(',', pos);
      if (comma == std::string_view::npos || comma > n + versions.size())
        comma = n + versions.size();
      std::string_view clause = spec.substr(pos, comma - pos);
      const std::size_t lead = clause.find_first_not_of(" \t");
      const std::size_t cb = pos + (lead == std::string_view::npos ? 0 : lead);
      clause = spec.substr(cb, comma - cb);
      std::size_t opn = 0;
      while (opn < clause.size() &&
             std::string_view("<>=!~").find(clause[opn]) != std::string_view::npos) {
        ++opn;
      }
      const std::string_view op = clause.substr(0, opn);
      std::string_view ver = clause.substr(opn);
      while (!ver.empty() && (ver.front() == ' ')) ver.remove_prefix(1);
      while (!ver.empty() && (ver.back() == ' ' || ver.back() == '\t')) ver.remove_suffix(1);
      const bool below = !ver.empty() && compare_versions(ver, min_torch) < 0;
      if ((op == ">=" || op == ">") && below) {
        const std::size_t b = at + cb, e = b + opn + (clause.size() - opn);
        Draft f = report(
            Operation::Modify, "torch",
            "change torch" + std::string(op) + std::string(ver) + " to torch" + want + why, b, e);
        f.fix = fix::Fix{{fix::Edit{static_cast<std::uint32_t>(b),
                                    static_cast<std::uint32_t>(at + cb + clause.size()), want}},
                         fix::Applicability::Safe};
        out.push_back(tp902(std::move(f)));
      } else if ((op == "==" || op == "~=" || op == "<" || op == "<=") && below) {
        out.push_back(tp902(report(Operation::Unsupported, "torch",
                                   "torch" + std::string(op) + std::string(ver) +
                                       " excludes the torch the migrated code needs" + why +
                                       "; change the requirement by hand",
                                   at + cb, at + cb + clause.size())));
      }
      pos = comma + 1;
    }
  };
  for_each_requirement(txt, text, requirement);
  return out;
}

namespace {

// "2.9.1" -> "2.9".
std::string_view minor_of(std::string_view v) {
  const std::size_t a = v.find('.');
  if (a == std::string_view::npos) return v;
  const std::size_t b = v.find('.', a + 1);
  return b == std::string_view::npos ? v : v.substr(0, b);
}

}  // namespace

std::vector<Finding> move_torch_companions(std::string_view path, std::string_view text,
                                           std::string_view min_torch,
                                           const catalogue::Catalogue& cat) {
  std::vector<Finding> out;
  const std::string_view name = base_name(path);
  const bool txt = name.starts_with("requirements") && ends_with(name, ".txt");
  if (min_torch.empty() || !(txt || name == "pyproject.toml")) return out;
  const std::string floor(minor_of(min_torch));
  auto requirement = [&](std::string_view spec, std::size_t at) {
    std::size_t n = 0;
    while (n < spec.size() && (std::isalnum(static_cast<unsigned char>(spec[n])) ||
                               spec[n] == '-' || spec[n] == '_' || spec[n] == '.')) {
      ++n;
    }
    const std::string dist = normalize(spec.substr(0, n));
    const std::vector<catalogue::Companion>* rows = cat.companions(dist);
    if (!rows || rows->empty()) return;
    std::size_t end = spec.find(';');
    if (end == std::string_view::npos) end = spec.size();
    // Each clause: "==0.20.0", "~=0.20", "<0.21".
    for (std::size_t pos = n; pos < end;) {
      std::size_t comma = spec.find(',', pos);
      if (comma == std::string_view::npos || comma > end) comma = end;
      std::string_view clause = spec.substr(pos, comma - pos);
      const std::size_t lead = clause.find_first_not_of(" \t");
      const std::size_t cb = pos + (lead == std::string_view::npos ? clause.size() : lead);
      clause = spec.substr(cb, comma - cb);
      pos = comma + 1;
      std::size_t opn = 0;
      while (opn < clause.size() &&
             std::string_view("<>=!~").find(clause[opn]) != std::string_view::npos)
        ++opn;
      const std::string_view op = clause.substr(0, opn);
      std::string_view ver = clause.substr(opn);
      while (!ver.empty() && ver.front() == ' ') ver.remove_prefix(1);
      while (!ver.empty() && (ver.back() == ' ' || ver.back() == '\t')) ver.remove_suffix(1);
      if (ver.empty() || !(op == "==" || op == "~=" || op == "<" || op == "<=")) continue;
      // The torch the pinned release is built for: the newest release at or below the pin.
      const catalogue::Companion* pinned = nullptr;
      for (const catalogue::Companion& c : *rows)
        if (compare_versions(c.version, ver) <= 0) pinned = &c;
      if (pinned && compare_versions(minor_of(pinned->torch), floor) >= 0) continue;
      // Its release for the floor: the newest built for the floor's minor, else the first
      // built for a newer torch.
      const catalogue::Companion* want = nullptr;
      for (const catalogue::Companion& c : *rows)
        if (minor_of(c.torch) == floor) want = &c;
      if (!want)
        for (const catalogue::Companion& c : *rows)
          if (compare_versions(c.torch, min_torch) >= 0) {
            want = &c;
            break;
          }
      const std::string have = dist + std::string(op) + std::string(ver);
      const std::string why = (pinned ? " is built for torch " + pinned->torch
                                      : " is older than " + dist + " " + rows->front().version +
                                            " (built for torch " + rows->front().torch + ")") +
                              ", below the torch >= " + std::string(min_torch) +
                              " the migrated code needs (data/catalogue/companions/torch.json)";
      const std::uint32_t b = static_cast<std::uint32_t>(at + cb);
      // Up to the version's last character: the spaces before a `;` marker stay.
      const std::uint32_t e =
          static_cast<std::uint32_t>(at + (ver.data() + ver.size() - spec.data()));
      if (!want) {
        out.push_back(
            tp902(report(Operation::Unsupported, dist,
                         have + why + "; no " + dist + " release is built for it (the last, " +
                             rows->back().version + ", for torch " + rows->back().torch +
                             "): drop the requirement or keep the older torch",
                         b, e)));
        continue;
      }
      if (op == "<" || op == "<=") {
        out.push_back(tp902(report(Operation::Unsupported, dist,
                                   "the upper bound " + have + " excludes " + dist + " " +
                                       want->version + ", the release for torch " + want->torch +
                                       why + "; change the bound by hand",
                                   b, e)));
        continue;
      }
      Draft f = report(Operation::Modify, dist,
                       "change " + have + " to " + dist + "==" + want->version +
                           " (its release for torch " + want->torch + "): " + have + why,
                       b, e);
      f.fix = fix::Fix{{fix::Edit{b, e, "==" + want->version}}, fix::Applicability::Safe};
      out.push_back(tp902(std::move(f)));
    }
  };
  for_each_requirement(txt, text, requirement);
  return out;
}

namespace {

// The distribution name at the start of a requirement string ("torch_npu>=2.1; ..." -> torch_npu).
std::string_view requirement_name(std::string_view spec) {
  std::size_t n = 0;
  while (n < spec.size() && (std::isalnum(static_cast<unsigned char>(spec[n])) || spec[n] == '-' ||
                             spec[n] == '_' || spec[n] == '.')) {
    ++n;
  }
  return spec.substr(0, n);
}

// One quoted string of a TOML array: the bytes between the quotes and where they are.
struct ArrayItem {
  std::string_view value;
  std::size_t open = 0;   // the opening quote
  std::size_t close = 0;  // the closing quote
};

// pyproject.toml: the [project] table's `dependencies = [...]` array, as the byte of its `[`,
// the byte of its `]` and its strings; nullopt when the file has none.
struct DependencyArray {
  std::size_t open = 0, close = 0;
  std::vector<ArrayItem> items;
};

std::optional<DependencyArray> project_dependencies(std::string_view text) {
  bool in_project = false;
  std::optional<DependencyArray> found;
  std::size_t at = 0;
  while (at < text.size() && !found) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(at, nl - at);
    const std::size_t i = line.find_first_not_of(" \t");
    if (i != std::string_view::npos && line[i] == '[') {
      const std::string_view header = strip_comment(line.substr(i));
      std::string_view h = header;
      while (!h.empty() && (h.back() == ' ' || h.back() == '\t' || h.back() == '\r'))
        h.remove_suffix(1);
      in_project = h == "[project]";
    } else if (in_project && i != std::string_view::npos &&
               line.substr(i).starts_with("dependencies")) {
      std::size_t k = i + 12;
      while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
      if (k < line.size() && line[k] == '=') {
        ++k;
        while (k < line.size() && (line[k] == ' ' || line[k] == '\t')) ++k;
        if (k < line.size() && line[k] == '[') {
          // Walk the array: strings, comments, up to the matching `]`.
          DependencyArray arr;
          arr.open = at + k;
          for (std::size_t p = at + k + 1; p < text.size(); ++p) {
            const char c = text[p];
            if (c == '#') {
              p = text.find('\n', p);
              if (p == std::string_view::npos) return std::nullopt;
            } else if (c == '"' || c == '\'') {
              const std::size_t close = text.find(c, p + 1);
              if (close == std::string_view::npos) return std::nullopt;
              arr.items.push_back({text.substr(p + 1, close - p - 1), p, close});
              p = close;
            } else if (c == ']') {
              arr.close = p;
              found = std::move(arr);
              break;
            }
          }
          if (!found) return std::nullopt;
        }
      }
    }
    at = nl + 1;
  }
  return found;
}

}  // namespace

std::vector<Finding> add_vendor_requirement(std::string_view path, std::string_view text,
                                            std::string_view requirement, std::string_view why) {
  std::vector<Finding> out;
  const std::string_view name = base_name(path);
  const bool txt = name.starts_with("requirements") && ends_with(name, ".txt");
  const std::string_view dist = requirement_name(requirement);
  if (dist.empty() || !(txt || name == "pyproject.toml")) return out;
  const std::string want = normalize(dist);
  const std::string nl = text.find("\r\n") != std::string_view::npos ? "\r\n" : "\n";
  const bool versioned = requirement.size() > dist.size();
  const std::string message =
      "add " + std::string(requirement) + " (" + std::string(why) +
      "; data/targets.json requirement)" +
      (versioned ? std::string()
                 : "; without a version: the sources pair no " + std::string(dist) +
                       " release with a torch version, install the one built for your torch");
  auto emit = [&](std::size_t at, std::vector<fix::Edit> edits) {
    Draft f = report(Operation::Insert, std::string(dist), message, at, at);
    f.changes = "visible change: a new requirement";
    f.fix = fix::Fix{std::move(edits), fix::Applicability::Safe};
    out.push_back(tp902(std::move(f)));
  };
  auto edit = [](std::size_t at, std::string s) {
    return fix::Edit{static_cast<std::uint32_t>(at), static_cast<std::uint32_t>(at), std::move(s)};
  };
  if (txt) {
    // After the torch requirement; else at the end of requirements.txt itself (a
    // requirements-dev.txt without torch is not the place for the device's package).
    std::optional<std::size_t> torch_line_end;
    bool named = false;
    for_each_line(text, [&](std::string_view raw, std::size_t at) {
      const std::string_view line = strip_comment(raw);
      const std::size_t i = line.find_first_not_of(" \t");
      if (i == std::string_view::npos || line[i] == '-') return;
      const std::string n = normalize(requirement_name(line.substr(i)));
      if (n == want) named = true;
      if (n == "torch" && !torch_line_end) torch_line_end = at + raw.size();
    });
    if (named || (!torch_line_end && name != "requirements.txt")) return out;
    std::size_t at = torch_line_end.value_or(text.size());
    if (at < text.size() && text[at] == '\r') ++at;
    if (at < text.size() && text[at] == '\n') ++at;  // after the line break
    const bool needs_break = at > 0 && text[at - 1] != '\n';
    emit(at, {edit(at, (needs_break ? nl : std::string()) + std::string(requirement) + nl)});
    return out;
  }
  const std::optional<DependencyArray> arr = project_dependencies(text);
  if (!arr) return out;
  const ArrayItem* anchor = nullptr;
  for (const ArrayItem& item : arr->items) {
    const std::string n = normalize(requirement_name(item.value));
    if (n == want) return out;
    if (n == "torch" && !anchor) anchor = &item;
  }
  if (!anchor && !arr->items.empty()) anchor = &arr->items.back();
  const char q = anchor ? text[anchor->open] : '"';
  const std::string quoted = q + std::string(requirement) + q;
  if (!anchor) {  // dependencies = []
    emit(arr->open + 1, {edit(arr->open + 1, quoted)});
    return out;
  }
  // The anchor's line: its own line in a multi-line array (only a comma and a comment after it)?
  const std::size_t line_begin = text.rfind('\n', anchor->open) + 1;  // npos + 1 == 0
  std::size_t line_end = text.find('\n', anchor->close);
  if (line_end == std::string_view::npos) line_end = text.size();
  const std::string_view before = text.substr(line_begin, anchor->open - line_begin);
  std::string_view after = text.substr(anchor->close + 1, line_end - anchor->close - 1);
  const bool comma = after.find_first_not_of(" \t") != std::string_view::npos &&
                     after[after.find_first_not_of(" \t")] == ',';
  std::string_view rest = after;
  if (comma) rest.remove_prefix(after.find(',') + 1);
  rest = strip_comment(rest);
  const bool own_line = line_begin > arr->open &&
                        before.find_first_not_of(" \t") == std::string_view::npos &&
                        rest.find_first_not_of(" \t\r") == std::string_view::npos;
  if (own_line) {
    std::vector<fix::Edit> edits;
    if (!comma) edits.push_back(edit(anchor->close + 1, ","));
    const std::size_t at = line_end < text.size() ? line_end + 1 : text.size();
    edits.push_back(edit(at, std::string(before) + quoted + "," + nl));
    emit(at, std::move(edits));
  } else {
    emit(anchor->close + 1, {edit(anchor->close + 1, ", " + quoted)});
  }
  return out;
}

void scan_requirement_string(Context& ctx, std::string_view value, std::uint32_t at) {
  Scan scan{ctx.cat, ctx.opts, ctx.result.findings};
  scan.spec(value, at);
  scan.markers(value, at);
}

}  // namespace torchport::rules
