#include <torchport/project/files.h>
#include <torchport/project/page.h>
#include <torchport/project/reports.h>
#include <torchport/rules/project_rules.h>
#include <torchport/text/utf8.h>

#include <ctime>
#include <exception>
#include <ostream>
#include <thread>

namespace torchport::project {

namespace fs = std::filesystem;
using report::Outcome;
using report::Row;

namespace {

/// The log's timestamp, formatted again only when the second changes.
class Stamp {
 public:
  const std::string& operator()() {
    if (std::time_t t = std::time(nullptr); t != time_) {
      time_ = t;
      std::tm tm{};
      gmtime_r(&t, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
      text_ = buf;
    }
    return text_;
  }

 private:
  std::time_t time_ = -1;
  std::string text_;
};

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

void log_header(const report::Report& rep, const std::vector<std::string>& excluded,
                const Options& opts, Stamp& now, std::string& log) {
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
}

/// The log lines of work `i` of `n`: with `verbose`, its progress line and a line per finding
/// (Ascend's log); otherwise only a warning when the file failed or was not migrated.
void log_file(const FileWork& w, std::size_t i, std::size_t n, bool verbose, Stamp& now,
              std::string& log) {
  const bool warning = w.entry.outcome == Outcome::Failure || w.entry.not_migrated;
  if (!verbose) {
    if (!warning) return;
    log += now();
    log += " [WARNING] ";
    log += w.entry.file;
    log += ": ";
    log += report::to_string(w.entry.outcome);
    if (!w.entry.reason.empty()) log += ": ";
    log += w.entry.reason;
    log += '\n';
    return;
  }
  char pct[32];
  std::snprintf(pct, sizeof pct, "[Progress: %.2f%%] ",
                100.0 * static_cast<double>(i + 1) / static_cast<double>(n));
  const char* level = warning ? "WARNING" : "INFO";
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
  for (const Row& r : w.rows) {
    bool warn = r.op == rules::Operation::Unsupported || r.op == rules::Operation::Unknown;
    log += now();
    log += warn ? " [WARNING] " : " [INFO] ";
    log += pct;
    log += report::log_line(r);
    log += '\n';
  }
}

/// Work `w`'s part of the report, moved in.
void add_to_report(FileWork& w, report::Report& rep, std::string& diff) {
  for (const std::string& op : w.cuda_ops) rep.cuda_ops.push_back({w.entry.file, op});
  rep.advice.insert(rep.advice.end(), std::make_move_iterator(w.advice.begin()),
                    std::make_move_iterator(w.advice.end()));
  rep.min_torch = report::max_version(rep.min_torch, w.entry.min_torch);
  rep.rows.append(std::move(w.rows));
  diff += w.diff;
  rep.files.push_back(std::move(w.entry));
}

/// --specify-device pins every process to one device: a distributed script usually picks its
/// device from its rank instead.
void warn_specify_device(const Plan& plan, const std::vector<FileWork>& works,
                         const report::Report& rep, std::ostream* progress, Stamp& now,
                         std::string& log) {
  for (const FileWork& w : works) {
    if (w.distributed_at.empty()) continue;
    const std::string msg =
        "--specify-device pins every process to the device in " +
        plan.catalogue().target(rep.target)->device_id_env +
        ", but the project uses torch.distributed (" + w.distributed_at +
        "): a distributed script whose processes pick their device from their rank can break; "
        "set the variable per process or migrate without -s";
    log += now() + " [WARNING] " + msg + "\n";
    if (progress) *progress << "torchport " << rep.command << ": warning: " << msg << "\n";
    break;
  }
}

}  // namespace

Reports build_reports(const Plan& plan, const Selected& selected, Written written,
                      const Options& opts, std::ostream* progress) {
  std::vector<FileWork>& works = written.works;
  Reports out;
  report::Report& rep = out.report;
  rep.command = opts.analyze_only ? "analyze" : "migrate";
  rep.target = opts.rules.target;
  rep.torch_version = opts.rules.torch_version;
  rep.input = text::printable_utf8(plan.input.string());
  rep.output = opts.inplace ? plan.input.string() : plan.result_dir.string();
  std::string& log = out.log;
  log.reserve(256 + works.size() * 96);
  Stamp now;
  log_header(rep, selected.excluded, opts, now, log);
  // Every file's findings join the run's list as the vector they were made in (report::Rows)
  rep.rows.reserve_files(works.size());
  rep.files.reserve(works.size());
  for (std::size_t i = 0; i < works.size(); ++i) {
    FileWork& w = works[i];
    if (!text::is_valid_utf8(w.entry.file)) name_not_utf8(w);
    log_file(w, i, works.size(), opts.verbose_log, now, log);
    if (progress && w.entry.not_migrated)
      *progress << "torchport " << rep.command << ": warning: " << w.entry.reason
                << " [not migrated]\n";
    add_to_report(w, rep, out.diff);
  }
  warn_specify_device(plan, works, rep, progress, now, log);
  // Project-level advice (settings with no site in the code): rows with NA for file and lines.
  if (const catalogue::AdviceTable* adv = plan.catalogue().advice(rep.target)) {
    rep.has_advice = true;
    for (rules::Advice& a : rules::project_advice(*adv))
      rep.advice.push_back({"", 0, 0, a.kind, std::move(a.api), std::move(a.api_type),
                            std::move(a.tip), std::move(a.affinity)});
  }
  const std::size_t changes = rep.count(rules::Operation::Insert) +
                              rep.count(rules::Operation::Modify) +
                              rep.count(rules::Operation::Delete);
  log += now() + " [INFO] findings: " + std::to_string(changes) + " changes (change_list.csv), " +
         std::to_string(rep.count(rules::Operation::Unsupported)) +
         " unsupported (unsupported_api.csv), " +
         std::to_string(rep.count(rules::Operation::Unknown)) + " unknown (unknown_api.csv)" +
         (opts.verbose_log ? "" : "; a line per file and per finding: --verbose") + "\n";
  log += now() + " [INFO] done: " + std::to_string(rep.files.size()) + " files, " +
         std::to_string(rep.count(Outcome::Failure)) + " failure(s), " +
         std::to_string(rep.count_not_migrated()) + " not migrated\n";
  return out;
}

namespace {

std::string write_report_files(const Plan& plan, const fs::path& dir, const Reports& reports,
                               bool parallel) {
  const report::Report& rep = reports.report;
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
    write("torchport.log", reports.log);
    write("changes.diff", reports.diff);
    // The page lists the CSVs: it comes after them.
    if (error.empty()) error = write_page(plan, rep, dir);
  }
  if (json_exception) std::rethrow_exception(json_exception);
  return error.empty() ? json_error : error;
}

}  // namespace

std::string write_reports(const Plan& plan, const Reports& reports, bool parallel) {
  if (plan.report_dir.empty()) return {};
  fs::path dir = plan.tmp_dir.empty() ? plan.report_dir : plan.tmp_dir / kReportDirName;
  std::string err = write_report_files(plan, dir, reports, parallel);
  std::error_code ec;
  if (!err.empty() && !plan.tmp_dir.empty()) fs::remove_all(plan.tmp_dir, ec);
  return err;
}

}  // namespace torchport::project
