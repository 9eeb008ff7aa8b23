// Phase 5 of the driver for one file, run the rules (rules::check on a Python file's tree and
// model, rules::check_other on a scanned file), then the user's selection (--ignore,
// --per-file-ignores). The rules are the only source of findings.
//
// The device-value analysis (flow/device_values.h) runs inside this phase: the rules build it
// from the tree on first use (rules::Context::values()) and ask it; the driver has no part in it.
#pragma once

#include <torchport/catalogue/catalogue.h>
#include <torchport/flow/project_values.h>
#include <torchport/project/parse.h>
#include <torchport/project/prepare.h>
#include <torchport/rules/engine.h>
#include <torchport/text/file.h>
#include <torchport/text/line_index.h>
#include <torchport/text/source.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace torchport::project {

/// What every file of a pass shares: the run's catalogue and options, and what the project
/// tells the rules (its custom CUDA operators, --distributed's files, the vendor package).
struct FileContext {
  const catalogue::Catalogue& cat;
  const Options& opts;
  const rules::CustomOps& ops;
  const DistributedFiles& dist;
  std::string_view package;  ///< Selected::package
  /// The project's modules, for device values that cross them (nullptr: none).
  const flow::ProjectValues* values = nullptr;
  /// The input directory held open: its files are read relative to it (nullptr: by their path).
  const text::OpenDirectory* root = nullptr;
};

/// A Python file between the phases once its tree is gone: the original's text and the facts
/// the later phases need.
struct PythonText {
  std::string text;                      ///< the decoded source
  std::optional<text::LineIndex> lines;  ///< of `text`
  text::SourceFile meta;                 ///< path, encoding and BOM (no text)
  /// Offsets of the line starts where the original's module-level statements begin
  /// (selfcheck.h): the self-check re-parses only the statements that were edited.
  std::vector<std::uint32_t> cuts;
  bool imports_package = false;  ///< the original imports the target's vendor package
  bool output_pass = false;      ///< rules::output_pass_needed: the output pass runs
  rules::Options ropts;          ///< the options the rules ran with on this file
};

/// Output of run_rules: the findings, and the file without its tree and model. They are freed
/// before the output pass and the self-check build theirs, so that a large file's peak memory
/// is one tree and model, not three.
struct Checked {
  PythonText file;
  std::vector<rules::Finding> findings;  ///< in source order
};

/// Input: the file's tree and model. The report facts (minimum torch, custom CUDA operators,
/// advice, the torch.distributed use of --specify-device) go into `w`.
Checked run_rules(const ProjectFile& f, Modelled m, const FileContext& ctx, FileWork& w);

/// The same for a scanned file (requirements, setup.cfg, shell scripts, C++/CUDA sources).
std::vector<rules::Finding> run_rules_other(const ProjectFile& f, std::string_view bytes,
                                            const Options& opts, FileWork& w);

/// Removes the findings the user's selection ignores (--ignore, --per-file-ignores); the file's
/// log line says how many.
void drop_ignored(const std::string& rel, const Options& opts,
                  std::vector<rules::Finding>& findings, FileWork& w);

/// True when the module of one of `model`'s imports is `package` or inside it.
bool imports_module(const semantic::Model& model, std::string_view package);

}  // namespace torchport::project
