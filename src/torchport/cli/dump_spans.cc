#include <torchport/cli/dump_spans.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/printer.h>
#include <torchport/text/source.h>

#include <nlohmann/json.hpp>

namespace torchport::cli {
namespace {

using syntax::Node;
using syntax::NodeKind;

// The kinds whose spans the harness compares with CPython's ast.
bool dumped(const Node& n) {
  switch (n.kind()) {
    case NodeKind::Call:
    case NodeKind::Attribute:
    case NodeKind::Name:
    case NodeKind::Import:
    case NodeKind::ImportFrom:
    case NodeKind::alias:
    case NodeKind::FunctionDef:
    case NodeKind::AsyncFunctionDef:
    case NodeKind::ClassDef:
    case NodeKind::Assign:
    case NodeKind::AnnAssign:
    case NodeKind::AugAssign:
    case NodeKind::With:
    case NodeKind::AsyncWith:
    case NodeKind::withitem:
    case NodeKind::For:
    case NodeKind::AsyncFor:
    case NodeKind::Lambda:
    case NodeKind::Subscript:
    case NodeKind::keyword:
    case NodeKind::Compare:
    case NodeKind::match_case:
      return true;
    case NodeKind::Constant:
      // Literals only, not the literal parts of f-strings.
      return n.role() != syntax::Role::Part &&
             (n.has(syntax::kString) || n.has(syntax::kBytes) || n.has(syntax::kNumber));
    case NodeKind::JoinedStr:
      return n.role() != syntax::Role::FormatSpec;
    default:
      return false;
  }
}

}  // namespace

std::string dump_spans_json(const std::string& path, std::string_view bytes) {
  text::DecodeResult decoded = text::decode(path, bytes);
  if (!decoded.source) {
    std::uint64_t off = decoded.error->byte_offset;
    std::uint32_t line = 1, col = 0;
    for (std::uint64_t i = 0; i < off && i < bytes.size(); ++i) {
      if (bytes[i] == '\n') {
        ++line;
        col = 0;
      } else {
        ++col;
      }
    }
    nlohmann::ordered_json j = {
        {"path", path},
        {"ok", false},
        {"error",
         {{"line", line},
          {"col", col},
          {"message", decoded.error->message + " (encoding " + decoded.error->encoding + ")"}}}};
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  syntax::Tree tree = syntax::parse(std::move(*decoded.source));
  if (!tree.ok()) {
    const text::Diagnostic& d = tree.diagnostics().front();
    text::LineCol lc = tree.lines().locate(d.offset);
    nlohmann::ordered_json j = {
        {"path", path},
        {"ok", false},
        {"error", {{"line", lc.line}, {"col", lc.column}, {"message", d.message}}}};
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  syntax::walk(tree.root(), [&](const Node& n) {
    if (!dumped(n)) return;
    syntax::ByteRange r = tree.byte_range(n);
    text::LineCol b = tree.lines().locate(r.begin);
    text::LineCol e = tree.lines().locate(r.end);
    nodes.push_back({syntax::node_kind_name(n.kind()), b.line, b.column, e.line, e.column});
  });
  nlohmann::ordered_json j = {{"path", path},
                              {"ok", true},
                              {"roundtrip", syntax::round_trips(tree)},
                              {"nodes", std::move(nodes)}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace torchport::cli
