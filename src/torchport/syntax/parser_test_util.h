// Helpers shared by the parser tests: parse a snippet, render a subtree as a compact
// S-expression, show spans and errors. Test-only; not part of the library.
#pragma once

#include <gtest/gtest.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/tree.h>

#include <string>

namespace torchport::syntax::testing {

inline Tree parse_text(std::string src) { return parse("t.py", std::move(src)); }

/// `Kind` or `Kind name` (Name/Attribute/keyword/def/class/arg/alias) or `Constant <text>`,
/// followed by the children in parentheses.
inline std::string sexp(const Tree& t, const Node& n) {
  std::string s(node_kind_name(n.kind()));
  switch (n.kind()) {
    case NodeKind::Name:
    case NodeKind::Attribute:
    case NodeKind::keyword:
    case NodeKind::FunctionDef:
    case NodeKind::AsyncFunctionDef:
    case NodeKind::ClassDef:
    case NodeKind::arg:
    case NodeKind::MatchAs:
    case NodeKind::MatchStar:
    case NodeKind::TypeVar:
    case NodeKind::ParamSpec:
    case NodeKind::TypeVarTuple:
    case NodeKind::ExceptHandler:
      if (!t.name(n).empty()) s += " " + std::string(t.name(n));
      break;
    case NodeKind::alias:
      s += " " + t.alias_name(n);
      if (!t.name(n).empty()) s += " as " + std::string(t.name(n));
      break;
    case NodeKind::Constant:
      s += " " + std::string(t.text(n));
      break;
    default:
      break;
  }
  if (!n.children().empty()) {
    s += "(";
    bool first = true;
    for (const Node* c : n.children()) {
      if (!first) s += ", ";
      first = false;
      s += sexp(t, *c);
    }
    s += ")";
  }
  return s;
}

/// The S-expression of the first statement of `src` (which must parse).
inline std::string first_stmt(const std::string& src) {
  Tree t = parse_text(src);
  EXPECT_TRUE(t.ok()) << src << "\n" << (t.diagnostics().empty() ? "" : t.diagnostics()[0].message);
  if (!t.ok() || t.root().children().empty()) return "<error>";
  return sexp(t, *t.root().children()[0]);
}

/// `line:col-end_line:end_col` as CPython's ast reports it (col 0-based, bytes).
inline std::string span(const Tree& t, const Node& n) {
  text::LineCol b = t.start(n), e = t.end(n);
  return std::to_string(b.line) + ":" + std::to_string(b.column) + "-" + std::to_string(e.line) +
         ":" + std::to_string(e.column);
}

/// The spans of every node of `kind`, in source order, joined by spaces.
inline std::string spans(const std::string& src, NodeKind kind) {
  Tree t = parse_text(src);
  EXPECT_TRUE(t.ok()) << src;
  std::string out;
  for (const Node* n : t.find_all(kind)) {
    if (!out.empty()) out += " ";
    out += span(t, *n);
  }
  return out;
}

/// The formatted first error (`t.py:line:col: message`), or "" when `src` parses.
inline std::string error_of(const std::string& src) {
  Tree t = parse_text(src);
  if (t.ok()) return "";
  return t.format(t.diagnostics().front());
}

inline bool accepts(const std::string& src) { return parse_text(src).ok(); }

/// `s` n times: the generated deep files of the depth tests.
inline std::string repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

/// n copies of `term` with `sep` between them.
inline std::string joined(const std::string& term, const std::string& sep, int n) {
  std::string out = term;
  for (int i = 1; i < n; ++i) out += sep + term;
  return out;
}

}  // namespace torchport::syntax::testing
