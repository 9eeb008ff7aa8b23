// `torchport explain NAME [--target T]` and `torchport targets`: the catalogue, for people.
#include <torchport/catalogue/catalogue.h>
#include <torchport/cli/cli.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
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

void print_mapping(const std::string& target, const Mapping& m) {
  std::cout << "\n"
            << target << ": " << (m.replacement.empty() ? "(no replacement)" : m.replacement)
            << "\n";
  std::cout << "  status:        " << catalogue::to_string(m.status) << "\n";
  std::cout << "  minimum torch: " << or_dash(m.min_torch) << "\n";
  if (!m.note.empty()) std::cout << "  note:          " << m.note << "\n";
  if (!m.without_device.empty())
    std::cout << "  no device:     a call becomes " << m.without_device << "\n";
  std::cout << "  source:        " << m.source << "\n";
}

nlohmann::ordered_json mapping_json(const Mapping& m) {
  return {{"replacement", m.replacement},       {"status", catalogue::to_string(m.status)},
          {"min_torch", m.min_torch},           {"note", m.note},
          {"without_device", m.without_device}, {"source", m.source}};
}

}  // namespace

void setup_explain(CLI::App& app, int& exit_code) {
  struct Args {
    std::string name, target, torch_version, format = "text";
  };
  auto a = std::make_shared<Args>();
  app.add_option("NAME", a->name,
                 "a CUDA API (torch.cuda.max_memory_allocated), method (.cuda), string (nccl, "
                 "cuda:0), environment variable or package")
      ->required();
  app.add_option("--target,-t", a->target, "one target (default: all)");
  app.add_option("--torch-version,-v", a->torch_version,
                 "for APIs judged by the vendor's per-version lists");
  app.add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.callback([a, &exit_code] {
    const Catalogue& cat = Catalogue::builtin();
    if (!a->target.empty() && !cat.target(a->target)) {
      std::cerr << "torchport explain: error: unknown target '" << a->target << "'\n";
      exit_code = 2;
      return;
    }
    const Entry* e = resolve(cat, a->name);
    if (!e) {
      // Not CUDA-specific: say what the vendor lists say about it, if anything.
      bool any = false;
      nlohmann::ordered_json j;
      for (const catalogue::Target& t : cat.targets()) {
        if (!a->target.empty() && t.name != a->target) continue;
        auto s = cat.api_support(a->name, t.name, a->torch_version);
        if (!s) continue;
        if (a->format == "json") {
          j[t.name] = {
              {"status", catalogue::to_string(s->status)}, {"tip", s->tip}, {"source", s->source}};
        } else {
          if (!any) std::cout << a->name << " is not CUDA-specific; vendor support lists:\n";
          std::cout << "  " << t.name << ": " << catalogue::to_string(s->status)
                    << (s->tip.empty() || s->tip == "-" ? "" : " (" + s->tip + ")") << "  ["
                    << s->source << "]\n";
        }
        any = true;
      }
      if (any) {
        if (a->format == "json")
          std::cout << nlohmann::ordered_json{{"api", a->name}, {"support", j}}.dump(2) << "\n";
        exit_code = 0;
        return;
      }
      std::cerr << "torchport explain: error: '" << a->name << "' is not in the catalogue";
      auto sug = suggestions(cat, a->name);
      if (!sug.empty()) {
        std::cerr << "; did you mean:";
        for (const std::string& s : sug) std::cerr << " " << s;
      }
      std::cerr << "\n";
      exit_code = 2;
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
