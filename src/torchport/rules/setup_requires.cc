// Rule family TP902: the requirements a setup.py declares.
//
// What it does:
//   The string literals of the install_requires / extras_require / setup_requires /
//   tests_require arguments of setuptools' (or distutils') setup() call, and of a module-level
//   name passed there (`install_requires=REQUIREMENTS`), are judged as requirements*.txt lines
//   are (other_files.cc): CUDA-only packages, NVIDIA's CUDA wheels, CUDA builds pinned by a local
//   version, with the target's alternative from the catalogue.
// Why:
//   setup.py is a Python file, so it comes through check(), not check_other(); a CUDA-only
//   requirement there breaks `pip install .` on the target as one in requirements.txt does.
// Example:
//   setup(name="x", install_requires=["torch", "flash-attn>=2"])
// Becomes (npu):
//   setup(name="x", install_requires=["torch", "flash-attn>=2"])
//   (flash-attn reported UNSUPPORTED: use torch_npu.npu_fusion_attention)
// Safety:
//   Reported only; setup.py is never rewritten. The keys of extras_require (the extras' names)
//   are not requirements and are skipped.
#include <torchport/rules/context.h>

namespace torchport::rules {
namespace {

/// The requirement strings of tokens [first, last], dict keys (extras names) excepted.
void requirement_strings(Context& ctx, semantic::TokenIndex first, semantic::TokenIndex last) {
  const semantic::Model& m = ctx.m;
  for (semantic::TokenIndex t = first; t <= last; ++t) {
    if (m.kind(t) != syntax::TokenKind::String) continue;
    if (auto nx = m.next(t); nx && m.kind(*nx) == syntax::TokenKind::Colon) continue;
    if (auto sv = semantic::string_value(m.text(), m.tokens()[t]))
      scan_requirement_string(ctx, sv->value, sv->value_begin);
  }
}

/// True when the call whose `(` is `lpar` is setuptools' or distutils' setup() (or a bare
/// `setup(` the file does not import).
bool setup_call(const semantic::Model& m, semantic::TokenIndex lpar) {
  if (m.kind(lpar) != syntax::TokenKind::LPar || callee_last_name(m, lpar) != "setup") return false;
  const semantic::Reference* callee = callee_of(m, lpar);
  const std::string q = callee ? callee->qualified : std::string();
  const bool bare = callee && callee->names.size() == 1;
  return q == "setuptools.setup" || q == "distutils.core.setup" || (q.empty() && bare);
}

}  // namespace

void run_setup_requires(Context& ctx) {
  const semantic::Model& m = ctx.m;
  // A setup() call's `(` follows a Name token `setup`: those, not every token.
  for (const semantic::TokenIndex name : m.identifier_tokens()) {
    if (m.token_text(name) != "setup") continue;
    const std::optional<semantic::TokenIndex> i = m.next(name);
    if (!i || !setup_call(m, *i)) continue;
    for (const Arg& a : call_args(m, *i)) {
      if (a.keyword != "install_requires" && a.keyword != "extras_require" &&
          a.keyword != "setup_requires" && a.keyword != "tests_require") {
        continue;
      }
      const semantic::TokenIndex v = *m.next(*m.next(a.first));
      requirement_strings(ctx, v, a.last);
      if (v != a.last || m.kind(v) != syntax::TokenKind::Name) continue;
      // install_requires=REQUIREMENTS: the module-level assignments of that name.
      for (const semantic::Line& line : m.lines()) {
        if (line.scope == 0 && line.tokens.size() >= 3 &&
            m.kind(line.tokens[0]) == syntax::TokenKind::Name &&
            m.token_text(line.tokens[0]) == m.token_text(v) &&
            m.kind(line.tokens[1]) == syntax::TokenKind::Equal) {
          requirement_strings(ctx, line.tokens[2], line.tokens.back());
        }
      }
    }
  }
}

}  // namespace torchport::rules
