#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/project/contain.h>
#include <torchport/project/diff.h>
#include <torchport/project/driver.h>
#include <torchport/project/files.h>
#include <torchport/project/launchers.h>
#include <torchport/project/selfcheck.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/line_index.h>
#include <torchport/text/source.h>
#include <torchport/text/utf8.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iomanip>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace torchport::project {

namespace fs = std::filesystem;
using report::FileEntry;
using report::Outcome;
using report::Row;

namespace {

constexpr const char* kReportDirName = "torchport-report";

/// What processing one file produced.
struct FileWork {
  FileEntry entry;
  std::vector<Row> rows;
  std::vector<std::string> cuda_ops;
  std::vector<report::AdviceRow> advice;
  std::string output;  ///< the new bytes when entry.changed
  std::string diff;
  std::string distributed_at;    ///< --specify-device: "file:line:col" of a torch.distributed use
  bool imports_package = false;  ///< the output imports the target's vendor package
};

/// True when the module of one of `model`'s imports is `package` or inside it.
bool imports_module(const semantic::Model& model, std::string_view package) {
  if (package.empty()) return false;
  for (const semantic::Import& im : model.imports()) {
    if (im.module == package ||
        (im.module.size() > package.size() && im.module.starts_with(package) &&
         im.module[package.size()] == '.'))
      return true;
  }
  return false;
}

/// 1-based line and column of byte `offset` in raw bytes (for decode errors).
std::pair<std::size_t, std::size_t> raw_line_col(std::string_view bytes, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < bytes.size(); ++i) {
    if (bytes[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

/// Turns findings into located rows, applying the safe fixes unless analyzing. Returns the
/// new text (== text when nothing was applied). The fixes' edits are moved out of `findings`
/// (on a file with a finding on every line they are a large part of its memory); each
/// finding keeps its fix's applicability.
std::string apply_findings(const std::string& rel, std::string_view text,
                           std::vector<rules::Finding>& findings, bool analyze_only, FileWork& work,
                           std::vector<fix::AppliedEdit>& applied,
                           const text::LineIndex* lines = nullptr,
                           fix::Applicability allowed = fix::Applicability::Safe) {
  std::optional<text::LineIndex> own;
  if (!lines && !findings.empty()) lines = &own.emplace(text);
  std::vector<fix::Fix> fixes;
  std::vector<std::size_t> fix_of(findings.size(), SIZE_MAX);
  if (!analyze_only) {
    fixes.reserve(findings.size());
    for (std::size_t i = 0; i < findings.size(); ++i) {
      if (!findings[i].fix) continue;
      fix_of[i] = fixes.size();
      fixes.push_back(std::move(*findings[i].fix));
    }
  }
  fix::ApplyResult ar = fix::apply_fixes(text, fixes, allowed);
  work.rows.reserve(work.rows.size() + findings.size());  // no doubling: a row per finding
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const rules::Finding& f = findings[i];
    auto clamp = [&](std::uint32_t o) {
      return std::min<std::uint32_t>(o, static_cast<std::uint32_t>(text.size()));
    };
    std::uint32_t b = clamp(f.begin), e = clamp(std::max(f.begin, f.end));
    text::LineCol start = lines->locate(b);
    text::LineCol end = lines->locate(e > b ? e - 1 : b);
    Row row;
    row.file = rel;
    row.start_line = start.line;
    row.end_line = end.line;
    row.column = start.column + 1;
    row.op = f.op;
    row.code = f.code;
    row.api = f.api;
    row.message = f.message;
    row.changes = f.changes;
    if (f.fix)
      row.applicability = f.fix->applicability == fix::Applicability::Safe     ? "safe"
                          : f.fix->applicability == fix::Applicability::Unsafe ? "unsafe"
                                                                               : "display-only";
    if (fix_of[i] != SIZE_MAX) {
      fix::FixOutcome o = ar.outcomes[fix_of[i]];
      row.applied = o == fix::FixOutcome::Applied || o == fix::FixOutcome::Duplicate;
      if (o == fix::FixOutcome::NotApplicable)
        row.message = "not applied (" +
                      std::string(f.fix->applicability == fix::Applicability::Unsafe
                                      ? "unsafe fix, left out by --no-unsafe-fixes"
                                      : "display-only fix") +
                      "): " + f.message;
      if (o == fix::FixOutcome::Overlap || o == fix::FixOutcome::Invalid) {
        // Never drop a change silently: it stays in place and is reported as not done.
        row.op = rules::Operation::Unsupported;
        row.message = std::string("not applied (") +
                      (o == fix::FixOutcome::Overlap ? "overlaps another change" : "invalid edit") +
                      "): " + f.message;
      }
    }
    work.rows.push_back(std::move(row));
  }
  applied = std::move(ar.edits);
  return std::move(ar.text);
}

/// Custom CUDA operators defined in the project's C++/CUDA sources: name -> defining file.
using OpMap = rules::CustomOps;

bool is_cxx_source(const ProjectFile& f) {
  static const char* const kExt[] = {".cpp", ".cc", ".cxx", ".cu", ".cuh"};
  std::string ext = fs::path(f.rel).extension().string();
  for (const char* e : kExt)
    if (ext == e) return true;
  return false;
}

/// Removes the findings the user's selection ignores (--ignore, --per-file-ignores); the file's
/// log line says how many.
void drop_ignored(const std::string& rel, const Options& opts,
                  std::vector<rules::Finding>& findings, FileWork& w) {
  const Selection& sel = opts.selection;
  if (sel.ignore.empty() && sel.per_file_ignores.empty()) return;
  std::size_t before = findings.size();
  std::erase_if(findings, [&](const rules::Finding& f) { return sel.ignored(rel, f.code); });
  if (std::size_t n = before - findings.size())
    w.entry.reason = std::to_string(n) + " finding(s) ignored by the rule selection";
}

/// What the second pass gives back: the text, and its syntax tree when the pass parsed that
/// text and changed nothing (the self-check then reuses it instead of parsing the same text
/// again).
struct SecondPass {
  std::string after;
  std::optional<syntax::Tree> tree;  ///< the parse of `after`, if made
  bool ran = false;  ///< TP310 looked at the text (its edits, if any, are composed in `applied`)
};

/// The second pass (TP310, rules/idiom.cc): it reads the output of the first, so that it sees
/// the device rules' rewrites. Its rows get the original's lines (`lines`); its edits join the
/// first pass's for the diff.
SecondPass second_pass(const std::string& rel, const text::LineIndex& lines, std::string after,
                       std::vector<fix::AppliedEdit>& applied, const catalogue::Catalogue& cat,
                       const rules::Options& ropts, const Options& opts, bool cuda_flag,
                       FileWork& w) {
  SecondPass out;
  // No rule of the first pass writes a CUDA flag: an original without one has none to port.
  if (!ropts.port_idiom || !cuda_flag) {
    out.after = std::move(after);
    return out;
  }
  out.ran = true;
  syntax::Tree t2 = syntax::parse(rel, after);
  std::vector<rules::Finding> fs;
  if (t2.ok()) {
    const semantic::Model m2(t2);
    fs = rules::port_device_idiom(t2, m2, cat, ropts);
    drop_ignored(rel, opts, fs, w);
  }
  if (fs.empty()) {  // unchanged (or the first pass's output does not parse: the self-check says
                     // so)
    out.after = std::move(after);
    out.tree.emplace(std::move(t2));
    return out;
  }
  const std::size_t first_row = w.rows.size();
  std::vector<fix::AppliedEdit> applied2;
  std::string after2 =
      apply_findings(rel, after, fs, opts.analyze_only, w, applied2, &t2.lines(), opts.fixes);
  for (std::size_t i = 0; i < fs.size() && first_row + i < w.rows.size(); ++i) {
    Row& row = w.rows[first_row + i];
    std::uint32_t b = fix::to_original(fs[i].begin, applied);
    std::uint32_t e = fix::to_original(std::max(fs[i].begin, fs[i].end), applied, true);
    text::LineCol start = lines.locate(b);
    text::LineCol end = lines.locate(e > b ? e - 1 : b);
    row.start_line = start.line;
    row.end_line = end.line;
    row.column = start.column + 1;
  }
  if (after2 != after) {
    applied = fix::compose(applied, applied2, after2);
  } else {
    out.tree.emplace(std::move(t2));  // every fix was left out: the text is the one parsed
  }
  out.after = std::move(after2);
  return out;
}

/// `package`: the target's vendor package when the project has requirements to keep in step
/// (FileWork::imports_package), else "".
/// --distributed: the entry script and the project modules it imports (directly or through one
/// another), all relative to INPUT.
struct DistributedFiles {
  std::string main;
  std::set<std::string> imported;
  std::set<std::string, std::less<>> loader_functions;  ///< rules::loader_functions of `imported`
};

/// What the first pass leaves to the rest of process_python. Its syntax tree and semantic model
/// are freed before the second pass and the self-check parse build theirs, so that a large
/// file's peak memory is one tree and model, not three (issue 21 §5).
struct FirstPass {
  std::string text;                      ///< the decoded source
  std::string after;                     ///< with the first pass's fixes
  std::optional<text::LineIndex> lines;  ///< of `text`
  text::SourceFile meta;                 ///< path, encoding and BOM (no text)
  std::vector<fix::AppliedEdit> applied;
  bool imports_package = false;  ///< the original imports the target's vendor package
  bool cuda_flag = false;        ///< the original defines a CUDA flag (TP310 may fire)
  /// Offsets of the line starts where the original's module-level statements begin (decorators
  /// included), ascending: the tokenizer is at a clean state there (no open bracket, string or
  /// indented block). The self-check re-parses only the statements that were edited.
  std::vector<std::uint32_t> cuts;
};

/// Parses the decoded file, runs the rules and applies their fixes. nullopt (with `w`'s
/// outcome and reason set) when the file does not parse.
std::optional<FirstPass> first_pass(const ProjectFile& f, text::SourceFile source,
                                    const catalogue::Catalogue& cat, const Options& opts,
                                    const OpMap& ops, const DistributedFiles& dist,
                                    std::string_view package, rules::Options& ropts, FileWork& w) {
  std::optional<syntax::Tree> tree(syntax::parse(std::move(source)));
  if (!tree->ok()) {
    w.entry.outcome = Outcome::Failure;
    w.entry.reason = (tree->diagnostics().empty() ? f.rel + ": syntax error"
                                                  : tree->format(tree->diagnostics().front())) +
                     " (copied unchanged)";
    return std::nullopt;
  }
  FirstPass p;
  std::vector<rules::Finding> findings;
  {
    // One semantic model serves the rules and the vendor-list judging.
    const semantic::Model model(*tree);
    ropts = opts.rules;
    ropts.custom_ops = &ops;  // project information for TP903
    ropts.distributed = opts.distributed && (f.rel == dist.main || dist.imported.contains(f.rel));
    ropts.distributed_companion = ropts.distributed && f.rel != dist.main;
    ropts.distributed_main = dist.main;
    if (ropts.distributed) ropts.distributed_loader_functions = dist.loader_functions;
    rules::FileResult fr = rules::check(*tree, model, cat, ropts);
    drop_ignored(f.rel, opts, fr.findings, w);
    w.entry.min_torch = fr.min_torch_version;
    w.cuda_ops = std::move(fr.cuda_apis);
    if (fr.distributed_at) {
      text::LineCol at = tree->lines().locate(*fr.distributed_at);
      w.distributed_at =
          f.rel + ":" + std::to_string(at.line) + ":" + std::to_string(at.column + 1);
    }
    for (const rules::Advice& a : fr.advice) {
      text::LineCol start = tree->lines().locate(a.begin);
      text::LineCol end = tree->lines().locate(a.end > a.begin ? a.end - 1 : a.begin);
      w.advice.push_back(
          {f.rel, start.line, end.line, a.kind, a.api, a.api_type, a.tip, a.affinity});
    }
    p.imports_package = imports_module(model, package);
    findings = std::move(fr.findings);
  }
  p.cuda_flag = rules::defines_cuda_flag(*tree);
  p.cuts = statement_cuts(*tree);
  p.text = tree->text();
  p.lines.emplace(tree->lines());
  p.meta.path = tree->source().path;
  p.meta.encoding = tree->source().encoding;
  p.meta.bom = tree->source().bom;
  // The findings own their text: the tree goes before the report rows and the new text are
  // made (on a file with a finding on every line they are as large as the tree).
  tree.reset();
  p.after = apply_findings(f.rel, p.text, findings, opts.analyze_only, w, p.applied, &*p.lines,
                           opts.fixes);
  return p;
}

FileWork process_python(const ProjectFile& f, std::string bytes, const catalogue::Catalogue& cat,
                        const Options& opts, const OpMap& ops, const DistributedFiles& dist,
                        std::string_view package) {
  FileWork w;
  w.entry.file = f.rel;
  w.entry.python = true;
  text::DecodeResult dec = text::decode(f.rel, bytes);
  if (!dec.source) {
    auto [line, col] = raw_line_col(bytes, dec.error ? dec.error->byte_offset : 0);
    w.entry.outcome = Outcome::Failure;
    w.entry.reason = f.rel + ":" + std::to_string(line) + ":" + std::to_string(col) +
                     ": cannot decode as " + (dec.error ? dec.error->encoding : "utf-8") + ": " +
                     (dec.error ? dec.error->message : "unknown error") + " (copied unchanged)";
    return w;
  }
  std::string().swap(bytes);  // the raw bytes are not needed past decoding
  rules::Options ropts;
  std::optional<FirstPass> p =
      first_pass(f, std::move(*dec.source), cat, opts, ops, dist, package, ropts, w);
  if (!p) return w;
  SecondPass second = second_pass(f.rel, *p->lines, std::move(p->after), p->applied, cat, ropts,
                                  opts, p->cuda_flag, w);
  const std::string& after = second.after;
  w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
  if (after == p->text) {
    w.imports_package = p->imports_package;
    return w;
  }
  // Self-check: the output must parse, else the original is kept and the failure reported.
  // Without a second-pass tree, the edited module-level statements are parsed on their own
  // first; the whole text is parsed when that proves nothing (or its model is needed).
  const bool proven = !second.ran && package.empty() &&
                      edited_statements_parse(f.rel, p->text, after, p->cuts, p->applied);
  std::optional<syntax::Tree> check;
  if (second.tree)
    check.emplace(std::move(*second.tree));
  else if (!proven)
    check.emplace(syntax::parse(f.rel, after));
  second.tree.reset();
  if (check && !check->ok()) {
    w.entry.outcome = Outcome::Failure;
    const bool too_deep =
        !check->diagnostics().empty() && check->diagnostics().front().message == syntax::kTooDeep;
    const std::string where = check->diagnostics().empty()
                                  ? std::string("syntax error")
                                  : check->format(check->diagnostics().front());
    // A file near the depth limit whose rewrite adds a level is not a bug: say so.
    w.entry.reason = too_deep ? f.rel + ": the rewritten file would nest deeper than " +
                                    std::to_string(syntax::kMaxNesting) + " levels (" + where +
                                    "); the original is kept"
                              : f.rel + ": internal error: the rewritten file does not parse (" +
                                    where + "); the original is kept";
    for (Row& r : w.rows) r.applied = false;
    return w;
  }
  w.entry.changed = true;
  if (!package.empty()) w.imports_package = imports_module(semantic::Model(*check), package);
  w.output = text::encode(p->meta, after);
  if (opts.diff) w.diff = unified_diff(f.rel, p->text, after, p->applied);
  return w;
}

FileWork process_scanned(const ProjectFile& f, const std::string& bytes, const Options& opts) {
  FileWork w;
  w.entry.file = f.rel;
  w.entry.outcome = Outcome::Success;
  rules::FileResult fr = rules::check_other(f.rel, bytes, opts.rules);
  drop_ignored(f.rel, opts, fr.findings, w);
  w.cuda_ops = fr.cuda_apis;
  std::vector<fix::AppliedEdit> applied;
  std::string after =
      apply_findings(f.rel, bytes, fr.findings, opts.analyze_only, w, applied, nullptr, opts.fixes);
  w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
  if (after != bytes) {
    w.entry.changed = true;
    w.output = std::move(after);
    if (opts.diff) w.diff = unified_diff(f.rel, bytes, w.output, applied);
  }
  return w;
}

FileWork process(const ProjectFile& f, const catalogue::Catalogue& cat, const Options& opts,
                 const OpMap& ops, const DistributedFiles& dist, std::string_view package) {
  FileWork w;
  w.entry.file = f.rel;
  w.entry.python = f.kind == FileKind::Python;
  const CurrentFile working_on(f.rel);  // named by the fatal-signal handler (contain.h)
  for (const CrashedFile& c : opts.crashed)
    if (c.rel == f.rel) {
      w.entry.outcome = Outcome::Failure;
      w.entry.not_migrated = true;
      w.entry.reason = f.rel + ": torchport crashed (" + c.signal +
                       ") on this file and ran again without it: copied unchanged (a bug in "
                       "torchport: please report it)";
      return w;
    }
  if (std::string pattern = opts.selection.excluded_by(f.rel); !pattern.empty()) {
    w.entry.outcome = Outcome::Skip;
    w.entry.reason = "excluded by '" + pattern + "': copied unchanged";
    return w;
  }
  if (f.kind == FileKind::Symlink) {
    w.entry.outcome = Outcome::Skip;
    w.entry.reason = "symbolic link: not followed";
    std::error_code ec;
    fs::path target = fs::weakly_canonical(f.path, ec);
    if (ec || fs::is_symlink(fs::symlink_status(target, ec))) {
      w.entry.reason = "symbolic link that does not resolve (a loop?): recreated as a link";
    } else if (classify(target) != FileKind::Other && fs::is_regular_file(target, ec) &&
               !is_within(target, opts.input)) {
      // Its target is not part of the project, so nothing migrates it: the user must know.
      w.entry.python = classify(target) == FileKind::Python;
      w.entry.not_migrated = true;
      w.entry.reason = f.rel + ": symbolic link to " + target.string() +
                       ", outside the input: recreated as a link, its target not migrated";
    }
    return w;
  }
  if (f.kind == FileKind::Other) {
    w.entry.outcome = Outcome::Skip;
    w.entry.reason = "not Python: copied unchanged";
    return w;
  }
  if (opts.max_bytes && f.size > opts.max_bytes) {
    w.entry.outcome = Outcome::Skip;
    w.entry.not_migrated = true;
    w.entry.reason = f.rel + ": " + std::to_string(f.size) +
                     " bytes, larger than --max-file-size (" + std::to_string(opts.max_bytes) +
                     " bytes): copied unchanged";
    return w;
  }
  std::string bytes, error;
  if (!read_file(f.path, bytes, error)) {
    w.entry.outcome = Outcome::Failure;
    w.entry.not_migrated = true;
    w.entry.reason = f.rel + ": cannot read: " + error;
    return w;
  }
  try {
    FileWork done = f.kind == FileKind::Python
                        ? process_python(f, std::move(bytes), cat, opts, ops, dist, package)
                        : process_scanned(f, bytes, opts);
    done.entry.not_migrated = done.entry.outcome != Outcome::Success;
    return done;
  } catch (const std::exception& e) {
    // A defect in a rule must not abort the run: the file is reported and copied unchanged.
    w.entry.outcome = Outcome::Failure;
    w.entry.not_migrated = true;
    w.entry.reason = f.rel + ": internal error: " + e.what() + " (copied unchanged)";
    w.rows.clear();
    return w;
  } catch (...) {
    w.entry.outcome = Outcome::Failure;
    w.entry.not_migrated = true;
    w.entry.reason = f.rel + ": internal error: an unknown exception (copied unchanged)";
    w.rows.clear();
    return w;
  }
}

/// The reports are UTF-8 (JSON requires it): a file name that is not valid UTF-8 is shown with
/// \xNN escapes, and the file's row says so. The file itself is handled as any other.
void name_not_utf8(FileWork& w) {
  const std::string shown = text::printable_utf8(w.entry.file);
  const std::string note = "the file name is not valid UTF-8 (reported as " + shown + ")";
  w.entry.reason =
      w.entry.reason.empty() ? note : text::printable_utf8(w.entry.reason) + "; " + note;
  w.entry.file = shown;
  for (Row& r : w.rows) {
    r.file = shown;
    r.message = text::printable_utf8(r.message);
  }
  for (std::string& op : w.cuda_ops) op = text::printable_utf8(op);
}

bool valid_version(const std::string& v) {
  static const std::regex re(R"(\d+\.\d+(\.\d+)?)");
  return std::regex_match(v, re);
}

std::string now_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

/// Writes every report file into `dir`. Returns "" or an error. With `parallel`, report.json
/// (the largest) is rendered and written on a second thread while the others are.
std::string write_reports(const fs::path& dir, const report::Report& rep, const std::string& log,
                          const std::string& diff, bool parallel) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return dir.string() + ": cannot create: " + ec.message();
  std::string json_error;
  std::exception_ptr json_exception;
  auto json_report = [&] {
    try {
      std::string why;
      if (!write_atomic(dir / "report.json", report::report_json(rep), why))
        json_error = (dir / "report.json").string() + ": " + why;
    } catch (...) {
      json_exception = std::current_exception();
    }
  };
  std::string error;
  {
    std::jthread json_thread;  // joined at the end of this block, however it is left
    if (parallel)
      json_thread = std::jthread(json_report);
    else
      json_report();
    auto write = [&](const char* name, const std::string& text) {
      if (!error.empty() || text.empty() || write_atomic(dir / name, text, error)) return;
      error = (dir / name).string() + ": " + error;
    };
    write("change_list.csv", report::change_list_csv(rep));
    write("unsupported_api.csv", report::unsupported_api_csv(rep));
    write("unknown_api.csv", report::unknown_api_csv(rep));
    write("cuda_op_list.csv", report::cuda_op_list_csv(rep));
    write("not_migrated.csv", report::not_migrated_csv(rep));
    if (rep.has_advice) {
      write("api_precision_advice.csv", report::api_precision_advice_csv(rep));
      write("api_performance_advice.csv", report::api_performance_advice_csv(rep));
      write("affinity_api_call.csv", report::affinity_api_call_csv(rep));
    }
    write("torchport.log", log);
    write("changes.diff", diff);
  }
  if (json_exception) std::rethrow_exception(json_exception);
  return error.empty() ? json_error : error;
}

std::string refuse_options(const Options& opts, const catalogue::Catalogue& cat) {
  const catalogue::Target* t = cat.target(opts.rules.target);
  if (!t) {
    std::string names;
    for (const catalogue::Target& x : cat.targets()) names += (names.empty() ? "" : ", ") + x.name;
    // A vendor's or product's name (`--target ascend`, `gaudi`) points to its target, from the
    // words of data/targets.json's vendor and title.
    std::string lower;
    for (char c : opts.rules.target)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
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
    return "unknown target '" + opts.rules.target + "'" +
           (meant.empty() ? "" : ": did you mean " + meant + "?") + " (expected one of: " + names +
           ")";
  }
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

/// --distributed: resolves --main (relative to INPUT) into `main_rel` and checks that the
/// script can be converted (rules::distributed_refusal). Returns "" or why not.
std::string distributed_entry(const Options& opts, const catalogue::Catalogue& cat,
                              const fs::path& input, bool input_is_dir, DistributedFiles& dist) {
  std::string& main_rel = dist.main;
  if (opts.analyze_only || opts.inplace)
    return "--distributed writes a new tree: it goes with migrate -o OUTDIR, not with "
           "analyze or --inplace";
  fs::path main;
  std::error_code ec;
  if (!input_is_dir) {
    main = input;
    if (!opts.main.empty() && fs::weakly_canonical(fs::absolute(opts.main), ec) != input &&
        opts.main.filename() != input.filename())
      return "--main " + opts.main.string() + " is not the INPUT file " + input.string();
  } else {
    if (opts.main.empty())
      return "--distributed needs --main FILE: the training script to convert, relative to " +
             input.string();
    main = opts.main.is_absolute() ? opts.main : input / opts.main;
    if (!fs::exists(main, ec) && fs::exists(fs::absolute(opts.main), ec))
      main = fs::absolute(opts.main);
    main = fs::weakly_canonical(main, ec);
    if (!is_within(main, input))
      return "--main " + opts.main.string() + " is not a file of the input " + input.string();
  }
  if (!fs::is_regular_file(main, ec)) return "--main " + main.string() + ": no such file";
  main_rel = input_is_dir ? main.lexically_relative(input).generic_string()
                          : main.filename().generic_string();
  std::string bytes, error;
  if (!read_file(main, bytes, error)) return main.string() + ": cannot read: " + error;
  text::DecodeResult dec = text::decode(main_rel, bytes);
  if (!dec.source) return main_rel + ": cannot decode: nothing was converted";
  syntax::Tree tree = syntax::parse(std::move(*dec.source));
  if (!tree.ok())
    return (tree.diagnostics().empty() ? main_rel + ": syntax error"
                                       : tree.format(tree.diagnostics().front())) +
           ": nothing was converted";
  const semantic::Model model(tree);
  (void)cat;
  // The project modules the script imports, and the ones they import: breadth first, each file
  // once. A module that does not read or parse is left to the ordinary migration (its row says
  // why).
  std::vector<std::unique_ptr<syntax::Tree>> trees;
  std::vector<std::unique_ptr<semantic::Model>> models;
  std::vector<std::pair<const syntax::Tree*, const semantic::Model*>> imported;
  if (input_is_dir) {
    std::string script_dir = main_rel.rfind('/') == std::string::npos
                                 ? std::string()
                                 : main_rel.substr(0, main_rel.rfind('/'));
    std::vector<std::pair<const syntax::Tree*, std::string>> queue = {{&tree, main_rel}};
    std::set<std::string> seen = {main_rel};
    for (std::size_t q = 0; q < queue.size(); ++q) {
      for (const std::string& rel :
           rules::imported_module_paths(*queue[q].first, queue[q].second, script_dir)) {
        if (seen.contains(rel)) continue;
        const fs::path path = input / rel;
        if (!fs::is_regular_file(path, ec) || !is_within(fs::weakly_canonical(path, ec), input))
          continue;
        seen.insert(rel);
        if (opts.selection.excluded_by(rel) != std::string()) continue;
        std::string text, err;
        if (!read_file(path, text, err)) continue;
        text::DecodeResult d = text::decode(rel, text);
        if (!d.source) continue;
        auto t = std::make_unique<syntax::Tree>(syntax::parse(std::move(*d.source)));
        if (!t->ok()) continue;
        models.push_back(std::make_unique<semantic::Model>(*t));
        // Its dotted name as the script imports it: relative to the script's directory (or
        // the root), without .py and __init__.
        std::string dotted = rel.substr(0, rel.size() - 3);
        if (dotted.ends_with("/__init__")) dotted.resize(dotted.size() - 9);
        if (!script_dir.empty() && dotted.starts_with(script_dir + "/"))
          dotted = dotted.substr(script_dir.size() + 1);
        std::replace(dotted.begin(), dotted.end(), '/', '.');
        for (std::string& f : rules::loader_functions(*t, *models.back(), dotted))
          dist.loader_functions.insert(std::move(f));
        imported.emplace_back(t.get(), models.back().get());
        dist.imported.insert(rel);
        queue.emplace_back(t.get(), rel);
        trees.push_back(std::move(t));
      }
    }
  }
  std::string why = rules::distributed_refusal(tree, model, opts.rules.model_var, imported);
  if (!why.empty()) why += " (--distributed: nothing was written)";
  return why;
}

}  // namespace

std::string result_name(const fs::path& input, const std::string& target) {
  fs::path abs = fs::weakly_canonical(fs::absolute(input));
  std::string name = fs::is_directory(abs) ? abs.filename().string() : abs.stem().string();
  if (name.empty()) name = "project";
  return name + "_" + target;
}

RunResult run(const Options& opts, const catalogue::Catalogue& builtin, std::ostream* progress) {
  RunResult res;
  auto refuse = [&](std::string why) {
    res.exit_code = kExitUsage;
    res.error = std::move(why);
    return res;
  };
  if (std::string why = refuse_options(opts, builtin); !why.empty()) return refuse(why);
  // Custom rules (--rules FILE, in order: a later file wins) go on top of the catalogue.
  std::optional<catalogue::Catalogue> custom;
  for (const fs::path& file : opts.rule_files) {
    std::string text, error;
    if (!read_file(file, text, error)) return refuse(file.string() + ": cannot read: " + error);
    const catalogue::Catalogue& base = custom ? *custom : builtin;
    std::optional<catalogue::Catalogue> next =
        base.with_rules(file.string(), text, opts.rules.target, opts.rules.specify_device, &error);
    if (!next) return refuse(error);
    custom = std::move(next);
  }
  const catalogue::Catalogue& cat = custom ? *custom : builtin;

  std::error_code ec;
  const fs::path input = fs::weakly_canonical(fs::absolute(opts.input));
  const bool input_is_dir = fs::is_directory(input);
  std::string name = result_name(input, opts.rules.target);
  // --distributed: the entry script must be convertible, or nothing is written.
  DistributedFiles dist;
  const std::string& main_rel = dist.main;
  if (opts.distributed) {
    name += "_multi";
    if (std::string why = distributed_entry(opts, cat, input, input_is_dir, dist); !why.empty())
      return refuse(why);
  }
  fs::path tmp_dir;  // migrate: the tree is built here, then renamed into place
  fs::path backup_dir;
  std::vector<fs::path> exclude;

  if (opts.analyze_only) {
    if (!opts.outdir.empty()) {
      res.report_dir = fs::absolute(opts.outdir);
      exclude.push_back(res.report_dir);
    }
  } else if (opts.inplace) {
    backup_dir = opts.backup.empty()
                     ? input.parent_path() / (input.filename().string() + ".torchport-backup")
                     : fs::absolute(opts.backup);
    if (input_is_dir && is_within(backup_dir, input))
      return refuse("--backup " + backup_dir.string() + " is inside the input " + input.string());
    if (fs::exists(backup_dir, ec) && !opts.force)
      return refuse(backup_dir.string() + " already exists (use --force to reuse it)");
    res.report_dir =
        (opts.outdir.empty() ? backup_dir : fs::absolute(opts.outdir)) / kReportDirName;
    if (!opts.outdir.empty() && input_is_dir && is_within(opts.outdir, input))
      return refuse("-o " + opts.outdir.string() + " is inside the input " + input.string());
    exclude.push_back(backup_dir);
  } else {
    if (opts.outdir.empty()) return refuse("an output directory is required (-o OUTDIR)");
    fs::path outdir = fs::absolute(opts.outdir);
    if (input_is_dir && is_within(outdir, input))
      return refuse("OUTDIR " + outdir.string() + " is inside INPUT " + input.string() +
                    ": choose a directory outside the project");
    res.result_dir = outdir / name;
    if (fs::exists(res.result_dir, ec) && !opts.force)
      return refuse(res.result_dir.string() + " already exists (use --force to replace it)");
    fs::create_directories(outdir, ec);
    if (ec) return refuse(outdir.string() + ": cannot create: " + ec.message());
    tmp_dir = outdir / ("." + name + ".torchport-tmp-" + std::to_string(::getpid()));
    fs::remove_all(tmp_dir, ec);
    fs::create_directories(tmp_dir, ec);
    if (ec) return refuse(tmp_dir.string() + ": cannot create: " + ec.message());
    note_scratch_dir(tmp_dir);  // removed by the parent if this attempt crashes (contain.h)
    res.report_dir = res.result_dir / kReportDirName;
  }

  // The reports of an earlier run on this tree are not part of the project.
  if (input_is_dir) exclude.push_back(input / kReportDirName);
  std::vector<std::string> excluded;
  std::vector<ProjectFile> files = discover(input, exclude, opts.default_excludes, &excluded);
  std::vector<FileWork> works(files.size());

  // The output tree's directories first (workers only create files).
  auto out_path = [&](const ProjectFile& f) { return tmp_dir / fs::path(f.rel); };
  if (!tmp_dir.empty()) {
    std::set<fs::path> dirs;
    for (const ProjectFile& f : files) dirs.insert(out_path(f).parent_path());
    if (input_is_dir) {
      // Empty directories are part of the project too.
      for (auto it = fs::recursive_directory_iterator(input, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_directory(ec) && !it->is_symlink(ec)) {
          if (opts.default_excludes && default_excluded(it->path())) {
            it.disable_recursion_pending();
            continue;
          }
          dirs.insert(tmp_dir / it->path().lexically_relative(input));
        }
    }
    for (const fs::path& d : dirs) fs::create_directories(d, ec);
  }

  // Two passes: C++/CUDA sources first (their custom operators), then everything else, so
  // Python calls to those operators are reported.
  OpMap ops;
  const unsigned max_jobs =
      opts.jobs ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
  // The progress line: from the first file on, at most ten updates a second, from whichever
  // worker passes the mark.
  std::atomic<std::size_t> done{0};
  std::mutex progress_mutex;
  std::chrono::steady_clock::time_point last_shown{};  // the first file shows at once
  auto show_progress = [&](bool final) {
    if (!opts.progress_line) return;
    std::unique_lock lock(progress_mutex, std::try_to_lock);
    if (!lock.owns_lock() && !final) return;
    if (!lock.owns_lock()) lock.lock();
    auto now = std::chrono::steady_clock::now();
    if (!final && now - last_shown < std::chrono::milliseconds(100)) return;
    last_shown = now;
    if (final) {
      std::fputs("\r\033[K", stderr);
    } else {
      std::fprintf(stderr, "\rtorchport %s: %zu/%zu files",
                   opts.analyze_only ? "analyze" : "migrate", done.load(), files.size());
    }
    std::fflush(stderr);
  };
  // Requirements follow the output: which Python files import the target's vendor package is
  // only asked when the project has requirements that could name it.
  const catalogue::Target& target = *cat.target(opts.rules.target);
  std::string package;
  for (const ProjectFile& f : files) {
    const std::string base = fs::path(f.rel).filename().string();
    if (f.kind == FileKind::Scanned &&
        (base == "pyproject.toml" || (base.starts_with("requirements") && base.ends_with(".txt"))))
      package = target.package;
  }
  auto run_pass = [&](std::vector<std::size_t> todo) {
    const auto jobs = static_cast<unsigned>(
        std::min<std::size_t>(max_jobs, std::max<std::size_t>(1, todo.size())));
    // Largest files first, so that no worker is left with a big file at the end (the results
    // are kept by file index: the order of work does not show in any output).
    if (jobs > 1)
      std::stable_sort(todo.begin(), todo.end(),
                       [&](std::size_t a, std::size_t b) { return files[a].size > files[b].size; });
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t k = next++; k < todo.size(); k = next++) {
        std::size_t i = todo[k];
        FileWork w = process(files[i], cat, opts, ops, dist, package);
        if (!tmp_dir.empty()) {
          fs::path dst = out_path(files[i]);
          std::string error;
          std::error_code wec;
          if (files[i].kind == FileKind::Symlink) {
            fs::copy_symlink(files[i].path, dst, wec);
            if (wec) error = wec.message();
          } else if (w.entry.changed) {
            if (!write_atomic(dst, w.output, error, files[i].path))
              error = "cannot write: " + error;
          } else {
            fs::copy_file(files[i].path, dst, fs::copy_options::overwrite_existing, wec);
            if (wec) error = "cannot copy: " + wec.message();
          }
          if (!error.empty()) {
            w.entry.outcome = Outcome::Failure;
            w.entry.not_migrated = true;
            w.entry.reason = files[i].rel + ": " + error;
          }
        }
        works[i] = std::move(w);
        ++done;
        show_progress(false);
      }
    };
    // Even one job runs on a thread of its own: the stack every tree walk needs (limits.h),
    // whoever calls the driver.
    std::vector<syntax::WalkThread> pool;
    for (unsigned j = 0; j < jobs; ++j) pool.emplace_back(worker);
    for (syntax::WalkThread& t : pool) t.join();
  };
  std::vector<std::size_t> first, second;
  for (std::size_t i = 0; i < files.size(); ++i)
    (is_cxx_source(files[i]) ? first : second).push_back(i);
  run_pass(first);
  for (std::size_t i : first)
    for (const std::string& op : works[i].cuda_ops) ops.emplace(op, files[i].rel);
  run_pass(second);
  show_progress(true);

  // Requirements follow the output (TP902): the torch the migrated Python files need, and the
  // target's vendor package where a migrated file imports it.
  std::string needed, importers;
  std::size_t n_importers = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const FileWork& w = works[i];
    needed = report::max_version(needed, w.entry.min_torch);
    if (!w.imports_package || w.entry.outcome != Outcome::Success) continue;
    if (++n_importers <= 3) importers += (importers.empty() ? "" : ", ") + files[i].rel;
  }
  if (n_importers > 3) importers += " and " + std::to_string(n_importers - 3) + " more";
  for (std::size_t i = 0; i < files.size() && (!needed.empty() || n_importers); ++i) {
    FileWork& w = works[i];
    if (files[i].kind != FileKind::Scanned || w.entry.outcome != Outcome::Success) continue;
    std::string current = w.output, error;
    if (!w.entry.changed && !read_file(files[i].path, current, error)) continue;
    auto found = rules::raise_torch_requirement(files[i].rel, current, needed);
    if (n_importers) {
      const std::string why = "the migrated code imports " + target.package + ": " + importers;
      if (!target.requirement.empty()) {
        for (rules::Finding& f :
             rules::add_vendor_requirement(files[i].rel, current, target.requirement, why))
          found.push_back(std::move(f));
      } else {
        // Where would it go? The same files, found with a placeholder name; reported only.
        for (rules::Finding& f :
             rules::add_vendor_requirement(files[i].rel, current, target.package, why)) {
          f.op = rules::Operation::Unsupported;
          f.fix.reset();
          f.changes.clear();
          f.message = why + "; data/targets.json names no distribution for it (" + target.install +
                      "): add the requirement by hand";
          found.push_back(std::move(f));
        }
      }
    }
    if (found.empty()) continue;
    std::vector<fix::AppliedEdit> applied;
    std::string after = apply_findings(files[i].rel, current, found, opts.analyze_only, w, applied,
                                       nullptr, opts.fixes);
    w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
    if (after == current) continue;
    if (opts.diff && !w.entry.changed) w.diff = unified_diff(files[i].rel, current, after, applied);
    w.entry.changed = true;
    w.output = std::move(after);
    if (!tmp_dir.empty() && !write_atomic(out_path(files[i]), w.output, error, files[i].path)) {
      w.entry.outcome = Outcome::Failure;
      w.entry.not_migrated = true;
      w.entry.reason = files[i].rel + ": cannot write: " + error;
    }
  }
  // --distributed: the launchers, in the result's root, each a row of the reports.
  std::vector<FileWork> launcher_works;
  if (opts.distributed && !tmp_dir.empty()) {
    for (const Launcher& l : distributed_launchers(*cat.target(opts.rules.target), main_rel)) {
      FileWork w;
      w.entry.file = l.name;
      w.entry.outcome = Outcome::Success;
      w.entry.changed = true;
      std::string error;
      const fs::path dst = tmp_dir / l.name;
      if (fs::exists(dst, ec)) {
        w.entry.outcome = Outcome::Failure;
        w.entry.not_migrated = true;
        w.entry.reason = l.name + ": the project has a file of that name: launcher not written";
      } else if (!write_atomic(dst, l.text, error)) {
        w.entry.outcome = Outcome::Failure;
        w.entry.not_migrated = true;
        w.entry.reason = l.name + ": cannot write: " + error;
      } else {
        fs::permissions(dst,
                        fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec,
                        ec);
        w.entry.reason = "launcher generated by --distributed";
        Row row;
        row.file = l.name;
        row.start_line = 1;
        row.end_line = static_cast<std::uint32_t>(std::count(l.text.begin(), l.text.end(), '\n'));
        row.column = 1;
        row.op = rules::Operation::Insert;
        row.code = "TP410";
        row.api = l.name;
        row.message = "launcher: starts " + main_rel + " on every " + opts.rules.target +
                      " device of the node (" + l.name + " --nproc N overrides the count)";
        row.applied = true;
        w.rows.push_back(std::move(row));
        w.entry.findings = 1;
      }
      launcher_works.push_back(std::move(w));
    }
  }
  for (FileWork& w : launcher_works) works.push_back(std::move(w));

  // In place: back up every original that changes, then replace each file atomically.
  if (opts.inplace) {
    for (std::size_t i = 0; i < files.size(); ++i) {
      FileWork& w = works[i];
      if (!w.entry.changed) continue;
      std::string error;
      fs::path bak = backup_dir / fs::path(files[i].rel);
      fs::create_directories(bak.parent_path(), ec);
      std::string original;
      if (!read_file(files[i].path, original, error) ||
          !write_atomic(bak, original, error, files[i].path)) {
        w.entry.outcome = Outcome::Failure;
        w.entry.not_migrated = true;
        w.entry.reason = files[i].rel + ": backup failed, file left unchanged: " + error;
        w.entry.changed = false;
        for (Row& r : w.rows) r.applied = false;
        continue;
      }
      if (!write_atomic(files[i].path, w.output, error, files[i].path)) {
        w.entry.outcome = Outcome::Failure;
        w.entry.not_migrated = true;
        w.entry.reason = files[i].rel + ": cannot replace, file left unchanged: " + error;
        w.entry.changed = false;
        for (Row& r : w.rows) r.applied = false;
      }
    }
  }

  // The report, in file order (deterministic whatever --jobs is).
  report::Report& rep = res.report;
  rep.command = opts.analyze_only ? "analyze" : "migrate";
  rep.target = opts.rules.target;
  rep.torch_version = opts.rules.torch_version;
  rep.input = text::printable_utf8(input.string());
  rep.output = opts.inplace ? input.string() : res.result_dir.string();
  std::string log;
  log.reserve(256 + works.size() * 96);
  // The timestamp, formatted again only when the second changes.
  std::time_t stamp_time = -1;
  std::string stamp;
  auto now = [&]() -> const std::string& {
    if (std::time_t t = std::time(nullptr); t != stamp_time) {
      stamp_time = t;
      stamp = now_utc(t);
    }
    return stamp;
  };
  log += now();
  log += " [INFO] torchport " TORCHPORT_VERSION " ";
  log += rep.command;
  log += " --target ";
  log += rep.target;
  if (!rep.torch_version.empty()) log += " --torch-version " + rep.torch_version;
  log += "\n" + now() + " [INFO] input: " + rep.input + "\n";
  if (!opts.command_line.empty()) log += now() + " [INFO] command: " + opts.command_line + "\n";
  if (!excluded.empty()) {
    log += now() + " [INFO] excluded by default (--include-excluded keeps them): ";
    for (std::size_t i = 0; i < excluded.size(); ++i) log += (i ? ", " : "") + excluded[i];
    log += "\n";
  }
  for (std::size_t i = 0; i < works.size(); ++i) {
    FileWork& w = works[i];
    if (!text::is_valid_utf8(w.entry.file)) name_not_utf8(w);
    char pct[32];
    std::snprintf(pct, sizeof pct, "[Progress: %.2f%%] ",
                  100.0 * static_cast<double>(i + 1) / static_cast<double>(works.size()));
    const char* level =
        w.entry.outcome == Outcome::Failure || w.entry.not_migrated ? "WARNING" : "INFO";
    log += now();
    log += " [";
    log += level;
    log += "] ";
    log += pct;
    log += w.entry.file;
    log += ": ";
    log += report::to_string(w.entry.outcome);
    if (!w.entry.reason.empty()) log += ": ";
    log += w.entry.reason;
    log += '\n';
    if (progress && w.entry.not_migrated)
      *progress << "torchport " << rep.command << ": warning: " << w.entry.reason
                << " [not migrated]\n";
    for (const Row& r : w.rows) {
      bool warn = r.op == rules::Operation::Unsupported || r.op == rules::Operation::Unknown;
      log += now();
      log += warn ? " [WARNING] " : " [INFO] ";
      log += pct;
      log += report::log_line(r);
      log += '\n';
    }
    for (const std::string& op : w.cuda_ops) rep.cuda_ops.push_back({w.entry.file, op});
    rep.advice.insert(rep.advice.end(), std::make_move_iterator(w.advice.begin()),
                      std::make_move_iterator(w.advice.end()));
    rep.min_torch = report::max_version(rep.min_torch, w.entry.min_torch);
    rep.rows.insert(rep.rows.end(), std::make_move_iterator(w.rows.begin()),
                    std::make_move_iterator(w.rows.end()));
    res.diff += w.diff;
    rep.files.push_back(std::move(w.entry));
  }
  // --specify-device pins every process to one device: a distributed script usually picks
  // its device from its rank instead.
  for (const FileWork& w : works) {
    if (w.distributed_at.empty()) continue;
    const std::string msg =
        "--specify-device pins every process to the device in " +
        cat.target(rep.target)->device_id_env + ", but the project uses torch.distributed (" +
        w.distributed_at +
        "): a distributed script whose processes pick their device from their rank can break; "
        "set the variable per process or migrate without -s";
    log += now() + " [WARNING] " + msg + "\n";
    if (progress) *progress << "torchport " << rep.command << ": warning: " << msg << "\n";
    break;
  }
  // Project-level advice (settings with no site in the code): rows with NA for file and lines.
  if (const catalogue::AdviceTable* adv = cat.advice(rep.target)) {
    rep.has_advice = true;
    for (const auto& [setting, tip] : adv->project)
      rep.advice.push_back({"", 0, 0, rules::Advice::Kind::Performance, setting, "",
                            "project-level (no file or line): " + tip, ""});
  }
  log += now() + " [INFO] done: " + std::to_string(rep.files.size()) + " files, " +
         std::to_string(rep.count(Outcome::Failure)) + " failure(s)\n";

  // Reports, then the output tree moves into place in one rename.
  if (!res.report_dir.empty()) {
    fs::path dir = tmp_dir.empty() ? res.report_dir : tmp_dir / kReportDirName;
    if (std::string err = write_reports(dir, rep, log, res.diff, max_jobs > 1); !err.empty()) {
      if (!tmp_dir.empty()) fs::remove_all(tmp_dir, ec);
      return refuse(err);
    }
  }
  if (!tmp_dir.empty()) {
    fs::path old;
    if (fs::exists(res.result_dir, ec)) {
      old = res.result_dir;
      old += ".torchport-old-" + std::to_string(::getpid());
      fs::rename(res.result_dir, old, ec);
      if (ec) {
        fs::remove_all(tmp_dir, ec);
        return refuse(res.result_dir.string() + ": cannot replace: " + ec.message());
      }
    }
    fs::rename(tmp_dir, res.result_dir, ec);
    if (ec) {
      std::string msg = ec.message();
      if (!old.empty()) fs::rename(old, res.result_dir, ec);
      return refuse(res.result_dir.string() + ": cannot move the result into place: " + msg);
    }
    if (!old.empty()) fs::remove_all(old, ec);
  }

  // Incomplete wins over findings: a gate must not pass on a tree it could not read.
  if (rep.count(Outcome::Failure) > 0 || rep.count_not_migrated() > 0)
    res.exit_code = kExitIncomplete;
  else if (opts.analyze_only && (!rep.rows.empty() || !rep.cuda_ops.empty()))
    res.exit_code = kExitFindings;
  else
    res.exit_code = kExitOk;
  return res;
}

}  // namespace torchport::project
