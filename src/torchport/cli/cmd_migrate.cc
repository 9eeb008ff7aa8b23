// `torchport migrate` and `torchport analyze`.
#include <torchport/catalogue/catalogue.h>
#include <torchport/cli/cli.h>
#include <torchport/cli/third_party.h>
#include <torchport/project/driver.h>
#include <torchport/report/sarif.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace torchport::cli {

namespace {

struct CommonArgs {
  std::string input;
  std::string outdir;
  std::string target;
  std::string torch_version;
  bool specify_device = false;
  unsigned jobs = 0;
  std::vector<std::string> rules;
  std::vector<std::string> exclude, ignore, per_file_ignores;
  // The library's default (fix::kDefaultApplied): behaviour-changing fixes applied, labelled.
  bool unsafe_fixes = fix::kDefaultApplied == fix::Applicability::Unsafe;
  bool include_excluded = false;
  bool keep_device_flags = false;
  bool verbose = false;
  double max_file_mb = 0;
};

constexpr const char* kExitCodes =
    "Exit status: 0 done; 1 analyze found CUDA-specific code (the CI gate); 2 usage error or "
    "refused (nothing written); 3 incomplete: a file was not migrated (each one is a row of "
    "not_migrated.csv and a warning on stderr); 4 internal error.";

void add_common(CLI::App& app, CommonArgs& a) {
  app.add_option("INPUT", a.input, "the project directory or one Python file")->required();
  app.add_option("--target,-t", a.target,
                 "npu, mlu, musa, xpu, mps, hpu, cpu or accelerator (device-agnostic)")
      ->required();
  app.add_option("--torch-version,-v", a.torch_version,
                 "the torch version the output must run on (X.Y): selects per-version lists and "
                 "idioms");
  app.add_flag(
      "--specify-device,-s", a.specify_device,
      "pin the device to the index in the environment variable the target's vendor documents "
      "(device_id_env; Ascend's -s); refused for targets without one; can break distributed "
      "scripts");
  app.add_option("--jobs,-j", a.jobs, "worker threads (default: one per CPU)");
  app.add_option("--rules,-r", a.rules,
                 "custom rules on top of the catalogue: torchport's catalogue format or Ascend's "
                 "{\"rules\": {...}} JSON (repeatable)");
  app.add_option("--exclude", a.exclude,
                 "GLOB: files not looked at, still copied and reported as Skip (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--ignore", a.ignore,
                 "rule code or code prefix (TP5) neither reported nor applied (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--per-file-ignores", a.per_file_ignores,
                 "GLOB:CODE[,CODE...]: --ignore for the files GLOB matches (repeatable)")
      ->check(CLI::Validator(
          [](std::string& spec) {
            project::PathCodes pc;
            return project::parse_path_codes(spec, pc);
          },
          "GLOB:CODE[,CODE...]"))
      ->allow_extra_args(false);
  // Two flags, not CLI11's "--x,!--no-x" (whose help reads
  // `--unsafe-fixes,--no-unsafe-fixes{false}`).
  app.add_flag_callback(
      "--unsafe-fixes", [&a] { a.unsafe_fixes = true; },
      "apply the fixes that change behaviour or numerics (the default, unlike ruff: the output "
      "must run on the target): a value replaced by a constant, device_ids or a map_location "
      "index dropped, a seed call widened, an autocast dtype pinned; each is labelled in "
      "change_list.csv and report.json (docs/cli.md)");
  app.add_flag_callback(
      "--no-unsafe-fixes", [&a] { a.unsafe_fixes = false; },
      "leave out the fixes that change behaviour or numerics: only safe fixes are applied (the "
      "others are still reported)");
  app.add_flag("--keep-device-flags", a.keep_device_flags,
               "keep the command line's CUDA-shaped device flags (--cuda, --no-cuda, use_cuda): "
               "only the minimal edits inside them (TP310 ports them to the target's idiom, the "
               "old flags kept as deprecated aliases)");
  app.add_flag("--include-excluded", a.include_excluded,
               "also process .git .hg .svn __pycache__ node_modules *.egg-info build dist and "
               "virtualenvs (excluded by default, as ruff does; the log lists them)");
  app.add_flag("--verbose", a.verbose,
               "torchport.log gets a line per file (with Ascend's [Progress: N%]) and per finding; "
               "by default it keeps the warnings and the summary (the findings are in the CSVs)");
  app.add_option("--max-file-size", a.max_file_mb,
                 "do not migrate files larger than this many MB (default: no limit); each one is "
                 "reported and makes the run incomplete")
      ->check(CLI::NonNegativeNumber);
  app.footer(kExitCodes);
}

project::Options to_options(const CommonArgs& a) {
  project::Options o;
  o.input = a.input;
  o.outdir = a.outdir;
  o.rules.target = a.target;
  o.rules.torch_version = a.torch_version;
  o.rules.specify_device = a.specify_device;
  o.rules.port_idiom = !a.keep_device_flags;
  o.jobs = a.jobs;
  o.default_excludes = !a.include_excluded;
  o.verbose_log = a.verbose;
  o.max_bytes = static_cast<std::uintmax_t>(a.max_file_mb * 1024 * 1024);
  for (const std::string& r : a.rules) o.rule_files.emplace_back(r);
  o.selection.exclude = a.exclude;
  o.selection.ignore = a.ignore;
  for (const std::string& spec : a.per_file_ignores) {
    project::PathCodes pc;
    if (project::parse_path_codes(spec, pc).empty()) o.selection.per_file_ignores.push_back(pc);
  }
  o.fixes = a.unsafe_fixes ? fix::Applicability::Unsafe : fix::Applicability::Safe;
  return o;
}

std::string all_findings_csv(const report::Report& r) {
  std::string out = "File,Start Line,End Line,Column,Operation Type,Code,OP,Message\n";
  for (const report::Row& row : r.rows) {
    std::string op(rules::to_string(row.op));
    out += report::csv_cell(row.file) + "," + std::to_string(row.start_line) + "," +
           std::to_string(row.end_line) + "," + std::to_string(row.column) + "," + op + "," +
           report::csv_cell(row.code) + "," + report::csv_cell(row.api) + "," +
           report::csv_cell(row.message) + "\n";
  }
  return out;
}

/// Paths in GitHub annotations are relative to where torchport ran: INPUT as typed, then the
/// report's path (relative to INPUT, or the file itself when INPUT is one file).
std::string github_prefix(const std::string& input) {
  std::filesystem::path p(input);
  std::error_code ec;
  if (!std::filesystem::is_directory(p, ec)) p = p.parent_path();
  std::string s = p.generic_string();
  if (s.empty() || s == ".") return {};
  if (s.back() != '/') s += '/';
  return s.starts_with("./") ? s.substr(2) : s;
}

/// Runs the driver in a child process that a crash on one file does not take down (contain.h):
/// a refused run prints its one-line error, a finished one is shown by `show`.
int run_and_show(const std::string& who, project::Options& o,
                 const std::function<void(const project::RunResult&)>& show) {
  return project::run_contained(who, [&](const std::vector<project::CrashedFile>& crashed) {
    o.crashed = crashed;
    project::RunResult r = project::run(o, catalogue::Catalogue::builtin(), &std::cerr);
    if (!r.error.empty()) {
      std::cerr << who << ": error: " << r.error << "\n";
      return r.exit_code;
    }
    show(r);
    // The run is over and its process ends next (the contained child leaves with _exit, which
    // runs no destructor of a static): the result, tens of thousands of report rows on a large
    // tree, is handed to the kernel whole instead of being freed row by row (about 1 % of
    // `analyze`'s CPU on the torch tree). Where the run is not contained, it is freed at exit.
    static std::optional<project::RunResult> left;
    const int code = r.exit_code;
    left.emplace(std::move(r));
    return code;
  });
}

}  // namespace

void setup_migrate(CLI::App& app, int& exit_code) {
  struct Args : CommonArgs {
    bool diff = false, inplace = false, force = false, quiet = false, clear_outputs = false;
    std::string backup;
    bool distributed = false;
    std::string main, model_var = "model", per_rank_batch = "split";
  };
  auto a = std::make_shared<Args>();
  add_common(app, *a);
  app.add_option("--output,-o", a->outdir,
                 "parent directory of the result: OUTDIR/<input-name>_<target>/ (with --inplace: "
                 "where the reports go)");
  app.add_flag("--diff", a->diff, "print a unified diff of every change");
  app.add_flag("--clear-outputs", a->clear_outputs,
               "notebooks (.ipynb): clear every code cell's outputs and execution count");
  app.add_flag("--inplace", a->inplace,
               "rewrite the input files themselves (atomically, keeping backups)");
  app.add_option("--backup", a->backup,
                 "with --inplace: where the originals go (default: <INPUT>.torchport-backup)");
  app.add_flag("--force,-f", a->force, "replace an existing result or backup directory");
  app.add_flag("--quiet,-q", a->quiet, "no summary table");
  app.add_flag("--distributed", a->distributed,
               "make the --main training script a DistributedDataParallel one (one process per "
               "device, torchrun): OUTDIR/<input-name>_<target>_multi/ with run_distributed.sh");
  app.add_option("--main", a->main,
                 "with --distributed: the training script, relative to INPUT (Ascend's -m)");
  app.add_option("--model-var", a->model_var,
                 "with --distributed: the variable that holds the model (default: model; "
                 "`self.<var>` matches too)");
  app.add_option("--per-rank-batch", a->per_rank_batch,
                 "with --distributed: split (default) divides each DataLoader's batch_size "
                 "between the ranks, so the global batch stays the same; keep leaves it per "
                 "device (the global batch grows with the ranks)")
      ->check(CLI::IsMember({"split", "keep"}));
  app.callback([a, &exit_code] {
    if (!a->inplace && a->outdir.empty()) {
      std::cerr << "torchport migrate: error: -o OUTDIR is required (or --inplace); see "
                   "`torchport migrate --help`\n";
      exit_code = project::kExitUsage;
      return;
    }
    if (!a->inplace && !a->backup.empty()) {
      std::cerr << "torchport migrate: error: --backup only goes with --inplace; see "
                   "`torchport migrate --help`\n";
      exit_code = project::kExitUsage;
      return;
    }
    project::Options o = to_options(*a);
    o.diff = a->diff;
    o.clear_outputs = a->clear_outputs;
    o.inplace = a->inplace;
    o.backup = a->backup;
    o.force = a->force;
    o.distributed = a->distributed;
    o.main = a->main;
    o.rules.model_var = a->model_var;
    o.rules.keep_batch = a->per_rank_batch == "keep";
    if (!a->distributed && (!a->main.empty() || a->model_var != "model")) {
      std::cerr << "torchport migrate: error: --main and --model-var only go with "
                   "--distributed; see `torchport migrate --help`\n";
      exit_code = project::kExitUsage;
      return;
    }
    o.progress_line = !a->quiet && ::isatty(STDERR_FILENO);
    exit_code = run_and_show("torchport migrate", o, [&](const project::RunResult& r) {
      if (a->diff) std::cout << r.diff;
      if (!a->quiet) {
        std::cout << report::summary_table(r.report);
        if (!r.result_dir.empty()) std::cout << "result: " << r.result_dir.string() << "\n";
        std::cout << "reports: " << r.report_dir.string() << "\n";
      }
    });
  });
}

void setup_analyze(CLI::App& app, int& exit_code) {
  struct Args : CommonArgs {
    std::string format = "text";
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  add_common(app, *a);
  app.add_flag("--quiet,-q", a->quiet, "no summary table (the findings are still printed)");
  app.add_option("--format", a->format,
                 "text, json, csv, sarif (SARIF 2.1.0) or github (workflow annotations), on stdout")
      ->check(CLI::IsMember({"text", "json", "csv", "sarif", "github"}));
  app.add_option("--output,-o", a->outdir,
                 "also write the report files (CSV, report.json, log) into this directory");
  auto third_party = std::make_shared<ThirdPartyArgs>();
  add_third_party_options(app, *third_party);
  app.callback([a, third_party, &exit_code] {
    if (third_party->enabled) {
      exit_code = run_third_party(*third_party, "torchport analyze", a->input, a->target,
                                  a->torch_version, a->outdir, a->format, a->include_excluded);
      return;
    }
    project::Options o = to_options(*a);
    o.analyze_only = true;
    o.progress_line = ::isatty(STDERR_FILENO);
    exit_code = run_and_show("torchport analyze", o, [&](const project::RunResult& r) {
      if (a->format == "json") {
        std::cout << report::report_json(r.report);
      } else if (a->format == "csv") {
        std::cout << all_findings_csv(r.report);
      } else if (a->format == "sarif") {
        std::cout << report::sarif_json(r.report);
      } else if (a->format == "github") {
        std::cout << report::github_annotations(r.report, github_prefix(a->input));
      } else {
        report::write_findings_text(r.report, std::cout);
        if (!a->quiet) {
          std::cout << report::summary_table(r.report, !r.report_dir.empty());
          // as migrate prints it (then the front end adds `report page:`)
          if (!r.report_dir.empty()) std::cout << "reports: " << r.report_dir.string() << "\n";
        }
      }
    });
  });
}

}  // namespace torchport::cli
