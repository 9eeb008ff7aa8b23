// Rule codes whose input is the whole project rather than one file's first pass: TP902's
// requirements that follow the migrated code, TP410's launcher files, and the target's
// project-level advice. The driver gathers the project's facts and hands them here.
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/context.h>
#include <torchport/rules/project_rules.h>

#include <algorithm>

namespace torchport::rules {

namespace {

/// "a.py, b.py, c.py and 2 more": the first three importers.
std::string importer_list(const std::vector<std::string>& importers) {
  std::string out;
  for (std::size_t i = 0; i < importers.size() && i < 3; ++i)
    out += (out.empty() ? "" : ", ") + importers[i];
  if (importers.size() > 3) out += " and " + std::to_string(importers.size() - 3) + " more";
  return out;
}

}  // namespace

std::vector<Finding> follow_requirements(std::string_view path, std::string_view text,
                                         const catalogue::Target& target,
                                         const ProjectRequirements& req,
                                         const catalogue::Catalogue* cat) {
  std::vector<Finding> found = raise_torch_requirement(path, text, req.min_torch);
  if (cat)
    for (Finding& f : move_torch_companions(path, text, req.min_torch, *cat))
      found.push_back(std::move(f));
  if (req.importers.empty()) return found;
  const std::string why =
      "the migrated code imports " + target.package + ": " + importer_list(req.importers);
  if (!target.requirement.empty()) {
    for (Finding& f : add_vendor_requirement(path, text, target.requirement, why))
      found.push_back(std::move(f));
    return found;
  }
  // Where would it go? The same files, found with a placeholder name; reported only.
  for (Finding& f : add_vendor_requirement(path, text, target.package, why)) {
    found.push_back(tp902(report(Operation::Unsupported, std::move(f.api),
                                 why + "; data/targets.json names no distribution for it (" +
                                     target.install + "): add the requirement by hand",
                                 f.begin, f.end)));
  }
  return found;
}

Finding launcher_finding(std::string_view name, std::string_view text, std::string_view main,
                         std::string_view target) {
  Draft f;
  f.op = Operation::Insert;
  f.api = std::string(name);
  f.message = "launcher: starts " + std::string(main) + " on every " + std::string(target) +
              " device of the node (" + std::string(name) + " --nproc N overrides the count)";
  f.begin = 0;
  f.end = static_cast<std::uint32_t>(text.size());
  return tp410(std::move(f));
}

std::vector<Advice> project_advice(const catalogue::AdviceTable& table) {
  std::vector<Advice> out;
  for (const auto& [setting, tip] : table.project) {
    Advice a;
    a.kind = Advice::Kind::Performance;
    a.api = setting;
    a.tip = "project-level (no file or line): " + tip;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace torchport::rules
