#include <fcntl.h>
#include <sys/stat.h>
#include <torchport/project/files.h>
#include <torchport/project/page.h>
#include <torchport/report/page.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

namespace torchport::project {

namespace fs = std::filesystem;
using report::Row;

namespace {

/// The bytes of a regular file (links followed); nullopt when it cannot be read.
std::optional<std::string> read_bytes(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
    std::string data;
    data.reserve(static_cast<std::size_t>(st.st_size));
    char buf[1 << 16];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) data.append(buf, static_cast<std::size_t>(n));
    if (n == 0) out = std::move(data);
  }
  ::close(fd);
  return out;
}

/// Where the page reads a file's texts: the run's roots, as the user sees them.
struct Roots {
  fs::path input;
  bool input_is_dir = false;
  fs::path before;  ///< the originals: the input, or the backup of an in-place run
  fs::path after;   ///< the migrated files (the scratch tree being built); empty for analyze
  bool migrate = false;
  bool inplace = false;

  fs::path source(const fs::path& root, const std::string& rel) const {
    std::error_code ec;
    return input_is_dir || fs::is_directory(root, ec) ? root / rel : root;
  }
};

Roots roots_of(const Plan& plan, const report::Report& rep) {
  Roots r;
  r.input = plan.input;
  r.input_is_dir = plan.input_is_dir;
  r.migrate = rep.command == "migrate" && !rep.output.empty();
  r.inplace = r.migrate && fs::path(rep.output) == plan.input;
  r.before = r.inplace ? plan.report_dir.parent_path() : plan.input;
  if (r.migrate) r.after = plan.tmp_dir.empty() ? fs::path(rep.output) : plan.tmp_dir;
  return r;
}

std::optional<report::PageText> notebook_text(const fs::path& p) {
  std::optional<std::string> bytes = read_bytes(p);
  if (!bytes) return std::nullopt;
  std::optional<report::NotebookView> view = report::notebook_view(*bytes);
  if (!view) return std::nullopt;
  return report::page_text_of_lines(view->lines);
}

std::optional<report::PageText> source_text(const fs::path& p) {
  std::optional<std::string> bytes = read_bytes(p);
  if (!bytes) return std::nullopt;
  return report::source_text(std::move(*bytes));
}

/// The same project migrated into the same OUTDIR for other targets (OUTDIR/<name>_<target>),
/// this run's target included, in the order of their directory names.
std::vector<report::PageTarget> other_targets(const Plan& plan, const report::Report& rep) {
  const std::string name = plan.result_dir.filename().string();
  const std::string suffix = "_" + rep.target;
  if (name.size() < suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return {};
  const std::string stem = name.substr(0, name.size() - suffix.size()) + "_";
  std::set<std::string> names{name};
  std::error_code ec;
  for (fs::directory_iterator it(plan.result_dir.parent_path(), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.compare(0, stem.size(), stem) == 0 &&
        fs::is_regular_file(it->path() / kReportDirName / "report.json", ec))
      names.insert(n);
  }
  std::vector<report::PageTarget> rows;
  for (const std::string& n : names) {
    report::PageTarget t;
    if (n == name) {
      t = report::page_target(rep);
    } else {
      std::optional<std::string> text =
          read_bytes(plan.result_dir.parent_path() / n / kReportDirName / "report.json");
      std::optional<report::PageTarget> other =
          text ? report::page_target_of_json(*text, rep.input) : std::nullopt;
      if (!other || n != stem + other->target) continue;
      t = std::move(*other);
    }
    t.href = "../../" + n + "/" + std::string(kReportDirName) + "/index.html";
    rows.push_back(std::move(t));
  }
  return rows;
}

}  // namespace

std::string write_page(const Plan& plan, const report::Report& rep, const fs::path& dir) {
  const Roots roots = roots_of(plan, rep);
  const std::size_t n = rep.files.size();
  // A notebook is shown as Python: its rows are located in the page's lines of its cells.
  std::vector<std::optional<report::NotebookView>> notebooks(n);
  report::PageIndex index;
  index.cells.assign(n, nullptr);
  index.chunks.assign(n, -1);
  std::unordered_map<std::string, std::size_t> file_index;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& rel = rep.files[i].file;
    file_index.emplace(rel, i);
    if (!rel.ends_with(".ipynb")) continue;
    auto view = [&](const fs::path& root) -> std::optional<report::NotebookView> {
      std::optional<std::string> bytes = read_bytes(roots.source(root, rel));
      return bytes ? report::notebook_view(*bytes) : std::nullopt;
    };
    notebooks[i] = view(roots.before);
    if (!notebooks[i] && roots.inplace) notebooks[i] = view(roots.input);
    if (notebooks[i]) index.cells[i] = &notebooks[i]->first;
  }
  // The page lines of each file's findings.
  std::vector<std::vector<std::uint32_t>> lines(n);
  std::vector<char> found(n, 0);
  for (const Row& r : rep.rows) {
    auto at = file_index.find(r.file);
    if (at == file_index.end()) continue;
    const std::size_t i = at->second;
    found[i] = 1;
    const std::uint32_t start = report::page_line(r, r.start_line, index.cells[i]);
    const std::uint32_t end = std::max(start, report::page_line(r, r.end_line, index.cells[i]));
    for (std::uint32_t l = start; l <= end; ++l) lines[i].push_back(l);
  }
  const fs::path chunk_dir = dir / "files";
  const fs::path tmp_dir = dir / (".files.tmp-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp_dir, ec);
  fs::create_directories(tmp_dir, ec);
  if (ec) return tmp_dir.string() + ": cannot create: " + ec.message();
  for (std::size_t i = 0; i < n; ++i) {
    const report::FileEntry& f = rep.files[i];
    if (!found[i] && !f.changed) continue;
    const bool nb = notebooks[i].has_value();
    auto read = [&](const fs::path& p) { return nb ? notebook_text(p) : source_text(p); };
    std::optional<report::PageText> before =
        nb ? std::optional(report::page_text_of_lines(notebooks[i]->lines))
           : read(roots.source(roots.before, f.file));
    if (!before && roots.inplace && !f.changed)
      before = read(roots.source(roots.input, f.file));  // unchanged: not backed up
    if (!before) continue;
    std::optional<report::PageText> after;
    if (f.changed && roots.migrate) after = read(roots.source(roots.after, f.file));
    const std::string js =
        report::page_chunk_js(i, f.file, before->lines, after ? &after->lines : nullptr, lines[i]);
    std::ofstream out(tmp_dir / (std::to_string(i) + ".js"), std::ios::binary);
    out << js;
    if (!out.flush()) return (tmp_dir / (std::to_string(i) + ".js")).string() + ": cannot write";
    index.chunks[i] = static_cast<std::int64_t>(i);
  }
  fs::remove_all(chunk_dir, ec);
  fs::rename(tmp_dir, chunk_dir, ec);
  if (ec) return chunk_dir.string() + ": cannot write: " + ec.message();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (const std::string name = it->path().filename().string();
        name.ends_with(".csv") && name[0] != '.' && it->is_regular_file(ec))
      index.csvs.push_back(it->path().filename().string());
  std::sort(index.csvs.begin(), index.csvs.end());
  if (roots.migrate && !roots.inplace) index.targets = other_targets(plan, rep);
  std::string error;
  if (!write_atomic(dir / "index.html", report::page_index_html(rep, index), error))
    return (dir / "index.html").string() + ": " + error;
  return {};
}

}  // namespace torchport::project
