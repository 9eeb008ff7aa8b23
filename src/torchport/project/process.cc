#include <torchport/project/apply.h>
#include <torchport/project/diff.h>
#include <torchport/project/notebook.h>
#include <torchport/project/output_pass.h>
#include <torchport/project/parse.h>
#include <torchport/project/process.h>
#include <torchport/project/selfcheck.h>
#include <torchport/syntax/limits.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

namespace torchport::project {

namespace fs = std::filesystem;
using report::Outcome;

namespace {

FileWork process_python(const ProjectFile& f, FileWork w, std::string bytes,
                        const FileContext& ctx) {
  std::optional<Parsed> parsed = parse_file(f, std::move(bytes), w);
  if (!parsed) return w;
  Modelled modelled = build_model(std::move(*parsed));
  Checked checked = run_rules(f, std::move(modelled), ctx, w);
  Fixed fixed = apply_fixes(f, std::move(checked), ctx.opts, w);
  OutputPassed passed = output_pass(f, std::move(fixed), ctx, w);
  self_check(f, std::move(passed), ctx, w);
  return w;
}

FileWork process_scanned(const ProjectFile& f, FileWork w, const std::string& bytes,
                         const Options& opts) {
  w.entry.outcome = Outcome::Success;
  std::vector<rules::Finding> findings = run_rules_other(f, bytes, opts, w);
  Applied a = apply_findings(f.rel, bytes, findings, opts, w);
  w.entry.findings = static_cast<std::uint32_t>(w.rows.size());
  if (a.text) {
    w.entry.changed = true;
    w.output = std::move(*a.text);
    if (opts.diff) w.diff = unified_diff(f.rel, bytes, w.output, a.edits);
  }
  return w;
}

bool is_cxx_source(const ProjectFile& f) {
  static const char* const kExt[] = {".cpp", ".cc", ".cxx", ".cu", ".cuh"};
  std::string ext = fs::path(f.rel).extension().string();
  for (const char* e : kExt)
    if (ext == e) return true;
  return false;
}

/// The progress line: from the first file on, at most ten updates a second, from whichever
/// worker passes the mark.
class ProgressLine {
 public:
  ProgressLine(const Options& opts, std::size_t total) : opts_(opts), total_(total) {}
  void file_done() {
    ++done_;
    show(false);
  }
  void show(bool final) {
    if (!opts_.progress_line) return;
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() && !final) return;
    if (!lock.owns_lock()) lock.lock();
    auto now = std::chrono::steady_clock::now();
    if (!final && now - last_shown_ < std::chrono::milliseconds(100)) return;
    last_shown_ = now;
    if (final) {
      std::fputs("\r\033[K", stderr);
    } else {
      std::fprintf(stderr, "\rtorchport %s: %zu/%zu files",
                   opts_.analyze_only ? "analyze" : "migrate", done_.load(), total_);
    }
    std::fflush(stderr);
  }

 private:
  const Options& opts_;
  std::size_t total_;
  std::atomic<std::size_t> done_{0};
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_shown_{};  // the first file shows at once
};

}  // namespace

FileWork process_file(const ProjectFile& f, const FileContext& ctx) {
  const CurrentFile working_on(f.rel);  // named by the fatal-signal handler (contain.h)
  Admitted a = admit_file(f, ctx.opts, ctx.root);
  if (!a.bytes) return std::move(a.work);
  FileWork& w = a.work;
  try {
    FileWork done = f.kind == FileKind::Python ? process_python(f, w, std::move(*a.bytes), ctx)
                    : f.kind == FileKind::Notebook
                        ? process_notebook(f, w, std::move(*a.bytes), ctx)
                        : process_scanned(f, w, *a.bytes, ctx.opts);
    done.entry.not_migrated = done.entry.outcome != Outcome::Success;
    return done;
  } catch (const std::exception& e) {
    // A defect in a rule must not abort the run: the file is reported and copied unchanged.
    fail(w, f.rel + ": internal error: " + e.what() + " (copied unchanged)");
    return std::move(w);
  } catch (...) {
    fail(w, f.rel + ": internal error: an unknown exception (copied unchanged)");
    return std::move(w);
  }
}

unsigned max_jobs(const Options& opts) {
  return opts.jobs ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
}

void for_each_file(const std::vector<ProjectFile>& files, std::vector<std::size_t> todo,
                   unsigned max, const std::function<void(std::size_t)>& fn) {
  const auto jobs =
      static_cast<unsigned>(std::min<std::size_t>(max, std::max<std::size_t>(1, todo.size())));
  if (jobs > 1)
    std::stable_sort(todo.begin(), todo.end(),
                     [&](std::size_t a, std::size_t b) { return files[a].size > files[b].size; });
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t k = next++; k < todo.size(); k = next++) fn(todo[k]);
  };
  std::vector<syntax::WalkThread> pool;
  for (unsigned j = 0; j < jobs; ++j) pool.emplace_back(worker);
  for (syntax::WalkThread& t : pool) t.join();
}

Processed process_files(const Plan& plan, const Selected& selected, const Options& opts) {
  const std::vector<ProjectFile>& files = selected.files;
  Processed out;
  out.works.resize(files.size());
  rules::CustomOps ops;
  std::vector<std::string> modules;
  std::vector<std::size_t> sizes;
  for (const ProjectFile& f : files) {
    if (f.kind != FileKind::Python) continue;
    modules.push_back(f.rel);
    sizes.push_back(f.size_known ? static_cast<std::size_t>(f.size) : 0);
  }
  const flow::ProjectValues values(plan.input_is_dir ? plan.input : plan.input.parent_path(),
                                   std::move(modules), std::move(sizes));
  // The input directory is held open, and each file read by its path relative to it (the
  // relative paths discover gave): the kernel walks only that part of each path.
  std::optional<text::OpenDirectory> root;
  if (plan.input_is_dir) root.emplace(plan.input.c_str());
  const FileContext ctx{plan.catalogue(),       opts, ops, plan.dist, selected.package, &values,
                        root ? &*root : nullptr};
  ProgressLine progress(opts, files.size());
  auto run_pass = [&](const std::vector<std::size_t>& todo) {
    for_each_file(files, todo, max_jobs(opts), [&](std::size_t i) {
      out.works[i] = process_file(files[i], ctx);
      progress.file_done();
    });
  };
  // Two passes: C++/CUDA sources first (their custom operators), then everything else, so
  // Python calls to those operators are reported.
  std::vector<std::size_t> first, second;
  for (std::size_t i = 0; i < files.size(); ++i)
    (is_cxx_source(files[i]) ? first : second).push_back(i);
  run_pass(first);
  for (std::size_t i : first)
    for (const std::string& op : out.works[i].cuda_ops) ops.emplace(op, files[i].rel);
  run_pass(second);
  progress.show(true);
  return out;
}

}  // namespace torchport::project
