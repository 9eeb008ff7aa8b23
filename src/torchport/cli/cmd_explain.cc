// `torchport explain NAME [--target T]` and `torchport targets`: the catalogue, for people.
#include <torchport/catalogue/catalogue.h>
#include <torchport/cli/cli.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace torchport::cli {

namespace {

using catalogue::Catalogue;
using catalogue::Entry;
using catalogue::Mapping;

/// The entry for what the user typed: exact, then with "torch." / "." / quotes normalised.
const Entry* resolve(const Catalogue& cat, std::string name) {
  while (!name.empty() && (name.front() == '"' || name.front() == '\'')) name.erase(0, 1);
  while (!name.empty() &&
         (name.back() == '"' || name.back() == '\'' || name.back() == ')' || name.back() == '('))
    name.pop_back();
  for (const std::string& candidate :
       {name, "torch." + name, "." + name,
        name.rfind("cuda:", 0) == 0 ? std::string("cuda:N") : name}) {
    if (const Entry* e = cat.find(candidate)) return e;
  }
  return nullptr;
}

std::vector<std::string> suggestions(const Catalogue& cat, const std::string& name) {
  std::vector<std::string> out;
  std::string last = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  for (const Entry& e : cat.entries()) {
    if (!last.empty() && e.api.find(last) != std::string::npos) out.push_back(e.api);
    if (out.size() == 5) break;
  }
  return out;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

/// The catalogue names its sources as the project's developers saw them (the vendors' files in
/// a folder of upstream data, notes on the peer tools). A user has only the installed package, so
/// each cited part becomes the public URL it came from (PROVENANCE of the upstream data, the
/// public pages the notes cite) or a file installed with torchport.
std::string public_source(const std::string& source) {
  struct Prefix {
    std::string_view from, to;
  };
  static constexpr Prefix kPrefixes[] = {
      {"upstream ascend-msfmktransplt/",
       "https://github.com/xiaobingling93-pixel/Ascend-mstt/tree/"
       "99c2e0f990a17d328f487062acc9c490f7f6ff26/msfmktransplt/src/ms_fmk_transplt/resource/"},
      {"upstream ascend-torch_npu/",
       "https://github.com/Ascend/pytorch/tree/9e73e708ab9350d203475609f36f8a43f6a0c2ab "
       "(torch_npu/npu/__init__.py __all__): "},
      {"upstream ascend-op-plugin/",
       "https://github.com/Ascend/op-plugin/tree/517f2e7d0f202f38b76310706cb977ca2388ad21/"
       "op_plugin/config/"},
      {"upstream cambricon-torch_mlu/",
       "https://github.com/Cambricon/torch_mlu/tree/9e95f972d3bfda0a855f9500aec852664ceecb6a "
       "(tools/autogen_torch_api/api_support_lists/, torch_mlu/mlu/__init__.py __all__): "},
      {"upstream moorethreads-torch_musa/",
       "https://github.com/MooreThreads/torch_musa/tree/8b583b3f2fd0d9d3d9e74b9ec588a25d8bed1a30 "
       ": "},
      {"upstream intel-torch-xpu-ops/",
       "https://github.com/intel/torch-xpu-ops/blob/ab84f925a234f33ee70a29af59c03aefdeff68c3/"
       "src/ATen/native/xpu/XPUFallback.cpp: "},
      {"GUIDE.md section 2", "torchport/targets.py (installed with torchport: the target table)"},
      {"python/torchport/", "torchport/"},
      {"installed torch ", "the installed torch (https://github.com/pytorch/pytorch) "},
      {"no upstream data", "no public source: torchport's own rule"},
      // The vendor's own wheels on PyPI, read by tools/check_vendor_npu.py (versions and sha256
      // in data/vendor/torch_npu_wheels.json).
      {"torch-npu wheels ", "https://pypi.org/project/torch-npu/ (the wheels) "},
      {"PyTorch docs: ", "https://docs.pytorch.org/ "},
      // The device-backends notes, section 1.1, are about Ascend's torch_npu sources.
      {"shared/reference/device-backends-and-accuracy-tools.md 1.1 ",
       "https://github.com/Ascend/pytorch (torch_npu) "},
      // Section 1.6 is about Intel Gaudi's documentation (the best-practices page on dtypes).
      {"shared/reference/device-backends-and-accuracy-tools.md 1.6 ",
       "https://docs.habana.ai/en/latest/PyTorch/Model_Optimization_PyTorch/"
       "Best_Practices_for_Model_Training_on_Gaudi.html (Intel Gaudi) "},
  };
  // The notes on peer tools, by section: the public page each section is about.
  static constexpr Prefix kNotes[] = {
      {"1.",
       "https://github.com/xiaobingling93-pixel/Ascend-mstt/tree/"
       "99c2e0f990a17d328f487062acc9c490f7f6ff26/msfmktransplt (Ascend GPU2Ascend)"},
      {"2",
       "https://github.com/Ascend/pytorch/blob/master/torch_npu/contrib/transfer_to_npu.py "
       "(Ascend transfer_to_npu)"},
      {"3.1", "https://github.com/Cambricon/torch_mlu (Cambricon)"},
      {"3.2",
       "https://docs.habana.ai/en/latest/PyTorch/PyTorch_Model_Porting/GPU_Migration_Toolkit/"
       "Intel_Gaudi_Migration_APIs.html (Intel Gaudi GPU Migration Toolkit)"},
      {"3.3", "https://github.com/MooreThreads/torch_musa (Moore Threads)"},
      {"5.4",
       "https://github.com/Dao-AILab/flash-attention/issues/1781, "
       "https://github.com/triton-lang/triton-ascend/issues/808"},
      {"5.7", "https://github.com/microsoft/DeepSpeed/tree/master/op_builder"},
      {"6", "https://github.com/Dao-AILab/flash-attention/issues/1781"},
  };
  constexpr std::string_view kNotesFile = "shared/reference/peer-migration-tools.md ";
  std::string out;
  std::size_t start = 0;
  while (start <= source.size()) {
    std::size_t semi = source.find("; ", start);
    std::string part = source.substr(start, semi == std::string::npos ? semi : semi - start);
    // A fact marked unverified keeps the mark in front of its mapped source.
    constexpr std::string_view kUnverified = "unverified: ";
    const bool unverified = part.starts_with(kUnverified);
    if (unverified) part.erase(0, kUnverified.size());
    if (part.starts_with(kNotesFile)) {
      std::size_t sec_end = part.find(' ', kNotesFile.size());
      std::string section = part.substr(kNotesFile.size(), sec_end - kNotesFile.size());
      std::string rest = sec_end == std::string::npos ? "" : part.substr(sec_end);
      for (const Prefix& p : kNotes) {
        if (section.starts_with(p.from)) {
          part = std::string(p.to) + rest;
          break;
        }
      }
    }
    for (const Prefix& p : kPrefixes) {
      if (part.starts_with(p.from)) {
        part = std::string(p.to) + part.substr(p.from.size());
        break;
      }
    }
    if (part.find("://") == std::string::npos && part.find("installed torch") != std::string::npos)
      part += " (https://github.com/pytorch/pytorch)";
    if (unverified) part = std::string(kUnverified) + part;
    out += (out.empty() ? "" : "; ") + part;
    if (semi == std::string::npos) break;
    start = semi + 2;
  }
  return out;
}

/// True for a name that is CUDA-specific by its spelling, whatever the catalogue knows.
bool cuda_by_name(std::string_view name) {
  for (std::string_view p : {"torch.cuda", "cuda.", "torch.backends.cud", "torch.Tensor.cuda",
                             "torch.Tensor.is_cuda", ".cuda"})
    if (name.starts_with(p)) return true;
  return false;
}

void print_mapping(const std::string& target, const Mapping& m) {
  std::cout << "\n"
            << target << ": " << (m.replacement.empty() ? "(no replacement)" : m.replacement)
            << "\n";
  std::cout << "  status:        " << catalogue::to_string(m.status) << "\n";
  std::cout << "  minimum torch: " << or_dash(m.min_torch) << "\n";
  if (!m.note.empty()) std::cout << "  note:          " << m.note << "\n";
  if (!m.without_device.empty())
    std::cout << "  no device:     a call becomes " << m.without_device << "\n";
  if (!m.returns.empty()) std::cout << "  returns:       " << m.returns << " (unlike CUDA)\n";
  for (const auto& [api, repl] : m.moves_with)
    std::cout << "  moves with:    " << api << " -> " << repl << "\n";
  if (!m.read_by.empty()) std::cout << "  read by:       " << m.read_by << "\n";
  std::cout << "  source:        " << public_source(m.source) << "\n";
}

nlohmann::ordered_json mapping_json(const Mapping& m) {
  nlohmann::ordered_json out = {
      {"replacement", m.replacement},       {"status", catalogue::to_string(m.status)},
      {"min_torch", m.min_torch},           {"note", m.note},
      {"without_device", m.without_device}, {"source", public_source(m.source)}};
  // Only where the vendor's package differs (tools/check_vendor_npu.py): the others keep their
  // shape.
  if (!m.returns.empty()) out["returns"] = m.returns;
  if (!m.moves_with.empty()) {
    nlohmann::ordered_json moves = nlohmann::ordered_json::object();
    for (const auto& [api, repl] : m.moves_with) moves[api] = repl;
    out["moves_with"] = moves;
  }
  if (!m.read_by.empty()) out["read_by"] = m.read_by;
  return out;
}

}  // namespace

void setup_explain(CLI::App& app, int& exit_code) {
  struct Args {
    std::string name, target, torch_version, format = "text";
    bool all_sources = false;
  };
  auto a = std::make_shared<Args>();
  auto* name = app.add_option("NAME", a->name,
                              "a CUDA API (torch.cuda.max_memory_allocated), method (.cuda), "
                              "string (nccl, cuda:0), environment variable or package");
  app.add_flag("--all-sources", a->all_sources,
               "print every source explain can cite, one a line, and exit")
      ->excludes(name);
  app.add_option("--target,-t", a->target, "one target (default: all)");
  app.add_option("--torch-version,-v", a->torch_version,
                 "for APIs judged by the vendor's per-version lists");
  app.add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.footer(
      "Exit status: 0 the name is known; 1 it is unknown to torchport's knowledge base; 2 usage "
      "error; 4 internal error. Every source cited is a public URL or a file installed with "
      "torchport.");
  app.callback([a, &exit_code] {
    const Catalogue& cat = Catalogue::builtin();
    if (a->all_sources) {
      std::set<std::string> all;
      for (const catalogue::Target& t : cat.targets()) {
        for (const Entry& e : cat.entries())
          if (const Mapping* m = cat.lookup(e.api, t.name)) all.insert(public_source(m->source));
        for (const std::string& v : cat.support_versions(t.name))
          if (auto sup = cat.api_support("torch.nn.Linear", t.name, v))
            all.insert(public_source(sup->source));
      }
      for (const std::string& x : all) std::cout << x << "\n";
      exit_code = 0;
      return;
    }
    if (a->name.empty()) {
      std::cerr << "torchport explain: error: NAME is required (see `torchport explain --help`)\n";
      exit_code = 2;
      return;
    }
    if (!a->target.empty() && !cat.target(a->target)) {
      std::cerr << "torchport explain: error: unknown target '" << a->target
                << "' (see `torchport targets`)\n";
      exit_code = 2;
      return;
    }
    const Entry* e = resolve(cat, a->name);
    if (!e) {
      // Not in the knowledge base: a general torch API may still be judged by a vendor's list,
      // but a CUDA name never is "not CUDA-specific", and "no list confirms it" is not an answer.
      bool any = false;
      nlohmann::ordered_json j;
      for (const catalogue::Target& t : cat.targets()) {
        if (cuda_by_name(a->name)) break;
        if (!a->target.empty() && t.name != a->target) continue;
        auto s = cat.api_support(a->name, t.name, a->torch_version);
        if (!s || s->status == catalogue::Status::Unknown) continue;
        if (a->format == "json") {
          j[t.name] = {{"status", catalogue::to_string(s->status)},
                       {"tip", s->tip},
                       {"source", public_source(s->source)}};
        } else {
          if (!any) std::cout << a->name << " is not CUDA-specific; vendor support lists:\n";
          std::cout << "  " << t.name << ": " << catalogue::to_string(s->status)
                    << (s->tip.empty() || s->tip == "-" ? "" : " (" + s->tip + ")") << "  ["
                    << public_source(s->source) << "]\n";
        }
        any = true;
      }
      if (any) {
        if (a->format == "json")
          std::cout << nlohmann::ordered_json{{"api", a->name}, {"support", j}}.dump(2) << "\n";
        exit_code = 0;
        return;
      }
      std::cerr << "torchport explain: " << a->name << " is unknown to torchport's knowledge base"
                << (a->target.empty() ? std::string(" for any target") : " for " + a->target);
      auto sug = suggestions(cat, a->name);
      if (!sug.empty()) {
        std::cerr << "; did you mean:";
        for (const std::string& s : sug) std::cerr << " " << s;
      }
      std::cerr << "\n";
      exit_code = 1;
      return;
    }
    if (a->format == "json") {
      nlohmann::ordered_json j{{"api", e->api},
                               {"kind", catalogue::to_string(e->kind)},
                               {"family", e->family},
                               {"summary", e->summary}};
      nlohmann::ordered_json targets;
      for (const catalogue::Target& t : cat.targets()) {
        if (!a->target.empty() && t.name != a->target) continue;
        if (const Mapping* m = cat.lookup(e->api, t.name)) targets[t.name] = mapping_json(*m);
      }
      j["targets"] = std::move(targets);
      std::cout << j.dump(2) << "\n";
      exit_code = 0;
      return;
    }
    std::cout << e->api << "  (" << catalogue::to_string(e->kind) << ", " << e->family << ")\n";
    if (!e->summary.empty()) std::cout << "  " << e->summary << "\n";
    for (const catalogue::Target& t : cat.targets()) {
      if (!a->target.empty() && t.name != a->target) continue;
      if (const Mapping* m = cat.lookup(e->api, t.name)) print_mapping(t.name, *m);
    }
    exit_code = 0;
  });
}

static nlohmann::ordered_json facts_json(const catalogue::Target& t) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [fact, source] : t.facts) out[fact] = source;
  return out;
}

void setup_targets(CLI::App& app, int& exit_code) {
  auto format = std::make_shared<std::string>("text");
  app.add_option("--format", *format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.callback([format, &exit_code] {
    const Catalogue& cat = Catalogue::builtin();
    if (*format == "json") {
      nlohmann::ordered_json arr = nlohmann::ordered_json::array();
      for (const catalogue::Target& t : cat.targets()) {
        arr.push_back({{"name", t.name},
                       {"vendor", t.vendor},
                       {"device", t.device},
                       {"module", t.module},
                       {"import", t.import_stmt},
                       {"install", t.install},
                       {"requirement", t.requirement},
                       {"backend", t.backend},
                       {"visible_devices", t.visible_devices},
                       {"amp_device", t.amp_device},
                       {"min_torch", t.min_torch},
                       {"torch_versions", t.torch_versions},
                       {"support_lists", cat.support_versions(t.name)},
                       {"no_dtypes", t.no_dtypes},
                       {"title", t.title},
                       {"package", t.package},
                       {"amp_dtype", t.amp_dtype},
                       {"device_index", t.device_index},
                       {"host", t.host},
                       {"profiler_activity", t.profiler_activity},
                       {"fallback",
                        {{"default", t.fallback.default_behaviour},
                         {"env", t.fallback.env},
                         {"env_effect", t.fallback.env_effect},
                         {"note", t.fallback.note}}},
                       {"notes", t.notes},
                       {"sources", t.sources},
                       {"facts", facts_json(t)},
                       {"unverified", t.unverified()}});
      }
      std::cout << arr.dump(2) << "\n";
      exit_code = 0;
      return;
    }
    for (const catalogue::Target& t : cat.targets()) {
      std::cout << t.name << "  " << t.vendor << "\n";
      std::cout << "  device:          " << or_dash(t.device) << "\n";
      std::cout << "  module:          " << t.module << "\n";
      std::cout << "  install:         " << t.install << "\n";
      if (!t.import_stmt.empty()) std::cout << "  import:          " << t.import_stmt << "\n";
      if (!t.requirement.empty()) std::cout << "  requirement:     " << t.requirement << "\n";
      std::cout << "  backend:         " << (t.backend.empty() ? "none" : t.backend) << "\n";
      std::cout << "  visible devices: " << or_dash(t.visible_devices) << "\n";
      std::string versions;
      for (const std::string& v : cat.support_versions(t.name))
        versions += (versions.empty() ? "" : ", ") + v;
      std::cout << "  torch:           " << (t.min_torch.empty() ? "any" : ">= " + t.min_torch);
      if (!versions.empty()) std::cout << " (vendor API lists for torch " << versions << ")";
      std::cout << "\n";
      if (!t.no_dtypes.empty()) {
        std::string d;
        for (const std::string& x : t.no_dtypes) d += (d.empty() ? "" : ", ") + x;
        std::cout << "  no dtypes:       " << d << "\n";
      }
      if (!t.amp_dtype.empty()) std::cout << "  amp dtype:       " << t.amp_dtype << "\n";
      if (!t.fallback.default_behaviour.empty()) {
        std::cout << "  missing kernels: "
                  << (t.fallback.default_behaviour == "cpu" ? "fall back to the CPU" : "raise");
        if (!t.fallback.env.empty())
          std::cout << " (" << t.fallback.env << " " << t.fallback.env_effect << ")";
        std::cout << "\n";
      }
      const std::vector<std::string> unverified = t.unverified();
      if (!unverified.empty()) {
        std::string u;
        for (const std::string& x : unverified) u += (u.empty() ? "" : ", ") + x;
        std::cout << "  unverified:      " << u << " (no upstream source: see --format json)\n";
      }
      std::cout << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace torchport::cli
