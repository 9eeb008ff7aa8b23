#include <torchport/project/parse.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

namespace torchport::project {

using report::Outcome;

namespace {

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

}  // namespace

std::optional<Parsed> parse_file(const ProjectFile& f, std::string bytes, FileWork& w) {
  text::DecodeResult dec = text::decode_owned(f.rel, std::move(bytes));
  if (!dec.source) {
    auto [line, col] = raw_line_col(bytes, dec.error ? dec.error->byte_offset : 0);
    w.entry.outcome = Outcome::Failure;
    w.entry.reason = f.rel + ":" + std::to_string(line) + ":" + std::to_string(col) +
                     ": cannot decode as " + (dec.error ? dec.error->encoding : "utf-8") + ": " +
                     (dec.error ? dec.error->message : "unknown error") + " (copied unchanged)";
    return std::nullopt;
  }
  std::string().swap(bytes);  // the raw bytes are not needed past decoding
  Parsed p{std::make_unique<syntax::Tree>(syntax::parse(std::move(*dec.source)))};
  if (!p.tree->ok()) {
    const syntax::Tree& t = *p.tree;
    w.entry.outcome = Outcome::Failure;
    w.entry.reason =
        (t.diagnostics().empty() ? f.rel + ": syntax error" : t.format(t.diagnostics().front())) +
        " (copied unchanged)";
    return std::nullopt;
  }
  return p;
}

Modelled build_model(Parsed parsed) {
  Modelled m;
  m.model = std::make_unique<const semantic::Model>(*parsed.tree);
  m.tree = std::move(parsed.tree);
  return m;
}

}  // namespace torchport::project
