#include <torchport/project/contain.h>
#include <torchport/project/files.h>
#include <torchport/project/prepare.h>
#include <torchport/report/report.h>
#include <unistd.h>

#include <cctype>
#include <regex>

namespace torchport::project {

namespace fs = std::filesystem;

namespace {

bool valid_version(const std::string& v) {
  static const std::regex re(R"(\d+\.\d+(\.\d+)?)");
  return std::regex_match(v, re);
}

/// An unknown --target: which targets the user may have meant, from the words of
/// data/targets.json's vendor and title (`--target ascend`, `gaudi`).
std::string unknown_target(const std::string& name, const catalogue::Catalogue& cat) {
  std::string names;
  for (const catalogue::Target& x : cat.targets()) names += (names.empty() ? "" : ", ") + x.name;
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string meant;
  for (const catalogue::Target& x : cat.targets()) {
    std::string words = " " + x.vendor + " " + x.title + " ";
    for (char& c : words)
      c = std::isalnum(static_cast<unsigned char>(c))
              ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
              : ' ';
    if (lower.size() >= 3 && words.find(" " + lower + " ") != std::string::npos)
      meant += (meant.empty() ? "" : " or ") + x.name + " (" + x.title + ")";
  }
  return "unknown target '" + name + "'" + (meant.empty() ? "" : ": did you mean " + meant + "?") +
         " (expected one of: " + names + ")";
}

std::string refuse_options(const Options& opts, const catalogue::Catalogue& cat) {
  const catalogue::Target* t = cat.target(opts.rules.target);
  if (!t) return unknown_target(opts.rules.target, cat);
  if (opts.rules.specify_device && t->device_id_env.empty()) {
    std::string with;
    for (const catalogue::Target& x : cat.targets())
      if (!x.device_id_env.empty())
        with += (with.empty() ? "" : ", ") + x.name + " (" + x.device_id_env + ")";
    return "--specify-device: no vendor document names an environment variable for the device "
           "index of a process on target " +
           t->name + " (data/targets.json \"device_id_env\"), so there is nothing to pin to" +
           (with.empty() ? std::string() : "; targets with one: " + with);
  }
  const std::string& v = opts.rules.torch_version;
  if (!v.empty()) {
    if (!valid_version(v)) return "--torch-version '" + v + "': expected X.Y, e.g. 2.6";
    if (!t->min_torch.empty() && report::max_version(v, t->min_torch) != v)
      return "target " + t->name + " needs torch >= " + t->min_torch + " (--torch-version " + v +
             ")";
  }
  std::error_code ec;
  if (!fs::exists(opts.input, ec)) return opts.input.string() + ": no such file or directory";
  return {};
}

/// Custom rules (--rules FILE, in order: a later file wins) go on top of the catalogue.
std::string load_rules(const Options& opts, Plan& plan) {
  for (const fs::path& file : opts.rule_files) {
    std::string text, error;
    if (!read_file(file, text, error)) return file.string() + ": cannot read: " + error;
    std::optional<catalogue::Catalogue> next = plan.catalogue().with_rules(
        file.string(), text, opts.rules.target, opts.rules.specify_device, &error);
    if (!next) return error;
    plan.custom = std::move(next);
  }
  return {};
}

/// --inplace: the backup directory, and the reports beside it (or in -o).
std::string inplace_paths(const Options& opts, Plan& plan) {
  std::error_code ec;
  const fs::path& input = plan.input;
  plan.backup_dir = opts.backup.empty()
                        ? input.parent_path() / (input.filename().string() + ".torchport-backup")
                        : fs::absolute(opts.backup);
  if (plan.input_is_dir && is_within(plan.backup_dir, input))
    return "--backup " + plan.backup_dir.string() + " is inside the input " + input.string();
  if (fs::exists(plan.backup_dir, ec) && !opts.force)
    return plan.backup_dir.string() + " already exists (use --force to reuse it)";
  plan.report_dir =
      (opts.outdir.empty() ? plan.backup_dir : fs::absolute(opts.outdir)) / kReportDirName;
  if (!opts.outdir.empty() && plan.input_is_dir && is_within(opts.outdir, input))
    return "-o " + opts.outdir.string() + " is inside the input " + input.string();
  plan.exclude.push_back(plan.backup_dir);
  return {};
}

/// migrate -o OUTDIR: the result directory, and the scratch directory the tree is built in.
std::string result_paths(const Options& opts, const std::string& name, Plan& plan) {
  std::error_code ec;
  if (opts.outdir.empty()) return "an output directory is required (-o OUTDIR)";
  fs::path outdir = fs::absolute(opts.outdir);
  if (plan.input_is_dir && is_within(outdir, plan.input))
    return "OUTDIR " + outdir.string() + " is inside INPUT " + plan.input.string() +
           ": choose a directory outside the project";
  plan.result_dir = outdir / name;
  if (fs::exists(plan.result_dir, ec) && !opts.force)
    return plan.result_dir.string() + " already exists (use --force to replace it)";
  fs::create_directories(outdir, ec);
  if (ec) return outdir.string() + ": cannot create: " + ec.message();
  plan.tmp_dir = outdir / ("." + name + ".torchport-tmp-" + std::to_string(::getpid()));
  fs::remove_all(plan.tmp_dir, ec);
  fs::create_directories(plan.tmp_dir, ec);
  if (ec) return plan.tmp_dir.string() + ": cannot create: " + ec.message();
  note_scratch_dir(plan.tmp_dir);  // removed by the parent if this attempt crashes (contain.h)
  plan.report_dir = plan.result_dir / kReportDirName;
  return {};
}

std::string plan_run(const Options& opts, Plan& plan) {
  if (std::string why = refuse_options(opts, plan.catalogue()); !why.empty()) return why;
  if (std::string why = load_rules(opts, plan); !why.empty()) return why;
  plan.input = fs::weakly_canonical(fs::absolute(opts.input));
  plan.input_is_dir = fs::is_directory(plan.input);
  std::string name = result_name(plan.input, opts.rules.target);
  // --distributed: the entry script must be convertible, or nothing is written.
  if (opts.distributed) {
    name += "_multi";
    if (std::string why = distributed_entry(opts, plan.input, plan.input_is_dir, plan.dist);
        !why.empty())
      return why;
  }
  if (opts.analyze_only) {
    if (!opts.outdir.empty()) {
      plan.report_dir = fs::absolute(opts.outdir);
      plan.exclude.push_back(plan.report_dir);
    }
  } else if (std::string why =
                 opts.inplace ? inplace_paths(opts, plan) : result_paths(opts, name, plan);
             !why.empty()) {
    return why;
  }
  // The reports of an earlier run on this tree are not part of the project.
  if (plan.input_is_dir) plan.exclude.push_back(plan.input / kReportDirName);
  return {};
}

}  // namespace

const catalogue::Target& Plan::target() const { return *catalogue().target(target_name); }

Plan prepare(const Options& opts, const catalogue::Catalogue& builtin) {
  Plan plan;
  plan.builtin = &builtin;
  plan.target_name = opts.rules.target;
  plan.refusal = plan_run(opts, plan);
  return plan;
}

}  // namespace torchport::project
