// `torchport dev parse` and `torchport dev dump-spans`: running the parser over files.
//
//   dev parse PATH... [--stdin-list] [--jobs N] [--quiet]
//       Parses every .py file under the paths, prints each error as `path:line:col: message`
//       (col 1-based), checks that printing the tree gives the text back, prints the counts.
//       Exit status 1 when any file has an error or fails the round trip.
//   dev dump-spans FILE... [--stdin-list] [--jobs N]
//       One JSON object per file, in input order, for the conformance harness
//       (python/torchport/dev/parse_check.py):
//         {"path": P, "ok": true, "roundtrip": true, "nodes": [[KIND, line, col, end_line,
//         end_col], ...]}
//         {"path": P, "ok": false, "error": {"line": L, "col": C, "message": M}}
//       col/end_col are CPython's (0-based, UTF-8 bytes); the error col is 0-based too.
#include <torchport/cli/cli.h>
#include <torchport/cli/dump_spans.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/printer.h>
#include <torchport/text/source.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace torchport::cli {
namespace {

std::optional<std::string> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::move(ss).str();
}

std::vector<std::string> discover(const std::vector<std::string>& paths, std::string& error) {
  std::vector<std::string> files;
  namespace fs = std::filesystem;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(
               p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec) && it->path().filename() == "__pycache__") {
          it.disable_recursion_pending();
          continue;
        }
        if (it->path().extension() == ".py" && it->is_regular_file(ec))
          found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      error = p + ": no such file or directory";
      return {};
    }
  }
  return files;
}

/// Runs `work(i)` for i in [0, n) on `jobs` threads; `done(i)` is called in index order on the
/// calling thread as soon as results up to i are ready.
template <class Work, class Done>
void run_ordered(std::size_t n, int jobs, Work work, Done done) {
  std::vector<std::optional<std::string>> results(n);
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (;;) {
      std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      std::string r = work(i);
      {
        std::lock_guard<std::mutex> lock(mu);
        results[i] = std::move(r);
      }
      cv.notify_all();
    }
  };
  if (jobs <= 1) {
    for (std::size_t i = 0; i < n; ++i) done(i, work(i));
    return;
  }
  std::vector<syntax::WalkThread> threads;  // each with the stack a tree walk needs (limits.h)
  for (int j = 0; j < jobs; ++j) threads.emplace_back(worker);
  for (std::size_t i = 0; i < n; ++i) {
    std::string r;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return results[i].has_value(); });
      r = std::move(*results[i]);
      results[i].reset();
    }
    done(i, std::move(r));
  }
  for (syntax::WalkThread& t : threads) t.join();
}

int default_jobs() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

struct ParseCounts {
  std::atomic<std::size_t> files{0}, ok{0}, syntax_errors{0}, decode_errors{0},
      roundtrip_failures{0}, bytes{0};
};

int run_parse(std::vector<std::string> paths, bool stdin_list, int jobs, bool quiet) {
  if (stdin_list) {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) paths.push_back(line);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "torchport: dev parse: no paths given\n");
    return 2;
  }
  std::string error;
  std::vector<std::string> files = discover(paths, error);
  if (!error.empty()) {
    std::fprintf(stderr, "torchport: %s\n", error.c_str());
    return 2;
  }
  ParseCounts counts;
  auto start = std::chrono::steady_clock::now();
  auto work = [&](std::size_t i) -> std::string {
    const std::string& path = files[i];
    counts.files++;
    std::optional<std::string> bytes = read_bytes(path);
    if (!bytes) {
      counts.decode_errors++;
      return path + ": cannot read file\n";
    }
    counts.bytes += bytes->size();
    text::DecodeResult decoded = text::decode(path, *bytes);
    if (!decoded.source) {
      counts.decode_errors++;
      return path + ": cannot decode: " + decoded.error->message + " (byte " +
             std::to_string(decoded.error->byte_offset) + ", encoding " + decoded.error->encoding +
             ")\n";
    }
    syntax::Tree tree = syntax::parse(std::move(*decoded.source));
    std::string out;
    if (!syntax::round_trips(tree)) {
      counts.roundtrip_failures++;
      out += path + ": round trip failed: print(parse(text)) != text\n";
    }
    if (!tree.ok()) {
      counts.syntax_errors++;
      for (const text::Diagnostic& d : tree.diagnostics())
        if (d.severity == text::Severity::Error) {
          out += tree.format(d) + "\n";
          break;
        }
    } else {
      counts.ok++;
    }
    return out;
  };
  run_ordered(files.size(), jobs, work, [&](std::size_t, std::string out) {
    if (!quiet && !out.empty()) std::fwrite(out.data(), 1, out.size(), stdout);
  });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%zu files, %zu parsed, %zu with syntax errors, %zu not decodable, %zu round-trip "
      "failures; %.1f MB in %.2fs (%.1f MB/s)\n",
      counts.files.load(), counts.ok.load(), counts.syntax_errors.load(),
      counts.decode_errors.load(), counts.roundtrip_failures.load(),
      static_cast<double>(counts.bytes.load()) / 1e6, seconds,
      seconds > 0 ? static_cast<double>(counts.bytes.load()) / 1e6 / seconds : 0.0);
  bool bad = counts.syntax_errors + counts.decode_errors + counts.roundtrip_failures != 0;
  return bad ? 1 : 0;
}

int run_dump_spans(std::vector<std::string> files, bool stdin_list, int jobs) {
  if (stdin_list) {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) files.push_back(line);
    }
  }
  auto work = [&](std::size_t i) -> std::string {
    const std::string& path = files[i];
    std::optional<std::string> bytes = read_bytes(path);
    if (!bytes) {
      nlohmann::ordered_json j = {
          {"path", path},
          {"ok", false},
          {"error", {{"line", 0}, {"col", 0}, {"message", "cannot read file"}}}};
      return j.dump() + "\n";
    }
    return dump_spans_json(path, *bytes) + "\n";
  };
  run_ordered(files.size(), jobs, work,
              [](std::size_t, std::string out) { std::fwrite(out.data(), 1, out.size(), stdout); });
  std::fflush(stdout);
  return 0;
}

}  // namespace

void setup_dev_parse(CLI::App& app, int& exit_code) {
  {
    CLI::App* cmd = app.add_subcommand(
        "parse", "parse .py files, report syntax errors and check the round trip");
    auto paths = std::make_shared<std::vector<std::string>>();
    auto jobs = std::make_shared<int>(default_jobs());
    auto quiet = std::make_shared<bool>(false);
    auto stdin_list = std::make_shared<bool>(false);
    cmd->add_option("PATH", *paths, "files or directories");
    cmd->add_option("--jobs,-j", *jobs, "threads");
    cmd->add_flag("--quiet,-q", *quiet, "print only the counts");
    cmd->add_flag("--stdin-list", *stdin_list, "also read paths from stdin, one per line");
    cmd->callback([=, &exit_code] { exit_code = run_parse(*paths, *stdin_list, *jobs, *quiet); });
  }
  {
    CLI::App* cmd =
        app.add_subcommand("dump-spans", "node spans as JSON lines, for the conformance harness");
    auto files = std::make_shared<std::vector<std::string>>();
    auto jobs = std::make_shared<int>(1);
    auto stdin_list = std::make_shared<bool>(false);
    cmd->add_option("FILE", *files, "Python files");
    cmd->add_option("--jobs,-j", *jobs, "threads (output stays in input order)");
    cmd->add_flag("--stdin-list", *stdin_list, "read file paths from stdin, one per line");
    cmd->callback([=, &exit_code] { exit_code = run_dump_spans(*files, *stdin_list, *jobs); });
  }
}

}  // namespace torchport::cli
