// `torchport dev ...`: developer tools for the front end.
#include <torchport/cli/cli.h>
#include <torchport/syntax/lexer.h>
#include <torchport/text/line_index.h>
#include <torchport/text/source.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

namespace torchport::cli {
namespace {

/// Escapes token text for one-line display, in the style of Python's repr().
std::string escape_token_text(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\f':
        out += "\\x0c";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

/// `torchport dev tokens FILE`: one token per line, `line:col-line:col Kind 'text'`.
int run_dev_tokens(const std::string& path) {
  text::DecodeResult decoded = text::decode_file(path);
  if (!decoded.source) {
    std::fprintf(stderr, "%s: %s (byte %llu, encoding %s)\n", path.c_str(),
                 decoded.error->message.c_str(),
                 static_cast<unsigned long long>(decoded.error->byte_offset),
                 decoded.error->encoding.empty() ? "-" : decoded.error->encoding.c_str());
    return 2;
  }
  const std::string& src = decoded.source->text;
  const syntax::LexResult lexed = syntax::tokenize(src);
  const text::LineIndex lines(src);
  std::string out;
  for (const syntax::Token& t : lexed.tokens) {
    const text::LineCol b = lines.locate(t.begin);
    // The end as CPython reports it: one past the last byte, on that byte's line.
    text::LineCol e = b;
    if (t.end > t.begin) {
      e = lines.locate(t.end - 1);
      ++e.column;
    }
    out += std::to_string(b.line) + ":" + std::to_string(b.column) + "-" + std::to_string(e.line) +
           ":" + std::to_string(e.column) + " " + std::string(syntax::token_kind_name(t.kind)) +
           " '" + escape_token_text(t.text(src)) + "'\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  int rc = 0;
  for (const text::Diagnostic& d : lexed.diagnostics) {
    const text::LineCol at = lines.locate(d.offset);
    const bool is_error = d.severity == text::Severity::Error;
    std::fprintf(stderr, "%s:%u:%u: %s: %s\n", path.c_str(), at.line, at.column + 1,
                 is_error ? "error" : "warning", d.message.c_str());
    if (is_error) rc = 1;
  }
  return rc;
}

/// `torchport dev tokens --summary FILE...`: decode and tokenize every file, print totals and
/// the lexing throughput (process CPU time of tokenize() alone).
int run_dev_tokens_summary(const std::vector<std::string>& paths) {
  std::uint64_t bytes = 0, tokens = 0, errors = 0, files = 0, undecodable = 0;
  double lex_seconds = 0;
  for (const std::string& path : paths) {
    const text::DecodeResult decoded = text::decode_file(path);
    if (!decoded.source) {
      ++undecodable;
      continue;
    }
    const std::clock_t c0 = std::clock();
    const syntax::LexResult lexed = syntax::tokenize(decoded.source->text);
    lex_seconds += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    ++files;
    bytes += decoded.source->text.size();
    tokens += lexed.tokens.size();
    for (const text::Diagnostic& d : lexed.diagnostics) {
      if (d.severity == text::Severity::Error) {
        ++errors;
        break;
      }
    }
  }
  std::printf(
      "files %llu undecodable %llu bytes %llu tokens %llu files_with_errors %llu "
      "lex_cpu_seconds %.4f MB_per_s %.1f\n",
      static_cast<unsigned long long>(files), static_cast<unsigned long long>(undecodable),
      static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(tokens),
      static_cast<unsigned long long>(errors), lex_seconds,
      lex_seconds > 0 ? static_cast<double>(bytes) / 1e6 / lex_seconds : 0.0);
  return 0;
}

}  // namespace

void setup_dev_parse(CLI::App& app, int& exit_code);    // cmd_dev_parse.cc
void setup_dev_storage(CLI::App& app, int& exit_code);  // cmd_dev_storage.cc

void setup_dev(CLI::App& app, int& exit_code) {
  app.require_subcommand(1);
  {
    CLI::App* tokens = app.add_subcommand("tokens", "print the lexer's tokens of Python files");
    auto paths = std::make_shared<std::vector<std::string>>();
    auto summary = std::make_shared<bool>(false);
    tokens->add_option("FILE", *paths, "Python source files")->required();
    tokens->add_flag("--summary", *summary,
                     "print only totals and the lexing speed (CPU time), for benchmarks");
    tokens->callback([paths, summary, &exit_code] {
      exit_code = *summary ? run_dev_tokens_summary(*paths) : 0;
      if (*summary) return;
      for (const std::string& path : *paths) exit_code = std::max(exit_code, run_dev_tokens(path));
    });
  }
  setup_dev_parse(app, exit_code);
  setup_dev_storage(app, exit_code);
}

}  // namespace torchport::cli
