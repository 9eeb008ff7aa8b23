// libFuzzer target for migrate's self-check shortcut (project/selfcheck.h): the edited
// module-level statements of a file are parsed on their own instead of the whole output.
// Input: a Python file; its last bytes (up to 12) choose up to 4 edits (where, how much is
// replaced, and by which snippet: brackets, quotes, line breaks, backslashes, indentation,
// keywords). The invariant: whenever the shortcut says the edited text parses, the whole edited
// text parses. A broken invariant, a crash or a sanitizer report is a finding.
#include <torchport/fix/apply.h>
#include <torchport/project/selfcheck.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

int one_input(const std::uint8_t* data, std::size_t size) {
  using namespace torchport;
  constexpr std::size_t kSpec = 3;  // bytes per edit: position, length, snippet
  const std::size_t spec = size >= 4 * kSpec ? 4 * kSpec : size - size % kSpec;
  std::string_view bytes(reinterpret_cast<const char*>(data), size - spec);
  text::DecodeResult decoded = text::decode("fuzz.py", bytes);
  if (!decoded.source) return 0;
  syntax::Tree tree = syntax::parse(*decoded.source);
  if (!tree.ok()) return 0;
  const std::string_view text = tree.text();
  static constexpr std::array<std::string_view, 24> kSnippets = {
      "(",    ")", "[",      "'",  "\"\"\"",    "\\\n",    "\n",      "\r\n",
      ":",    "x", "    ",   "\t", "#",         "@d\n",    "else:\n", "\n  y\n",
      "f\"{", "}", "lambda", "\\", "\nz = 1\n", "if x:\n", "'''",     ""};
  std::vector<fix::Fix> fixes;
  for (std::size_t k = size - spec; k + kSpec <= size; k += kSpec) {
    const std::uint32_t at =
        static_cast<std::uint32_t>(data[k] * text.size() / 256);  // spread over the text
    const std::uint32_t len =
        std::min<std::uint32_t>(data[k + 1] % 8, static_cast<std::uint32_t>(text.size() - at));
    fixes.push_back(fix::Fix{
        {fix::Edit{at, at + len, std::string(kSnippets[data[k + 2] % kSnippets.size()])}}});
  }
  if (fixes.empty()) return 0;
  const fix::ApplyResult r = fix::apply_fixes(text, fixes);
  if (r.edits.empty()) return 0;
  const std::vector<std::uint32_t> cuts = project::statement_cuts(tree);
  if (project::edited_statements_parse("fuzz.py", text, r.text, cuts, r.edits) &&
      !syntax::parse("fuzz.py", r.text).ok()) {
    std::fprintf(stderr, "proven by the shortcut, but does not parse:\n%s\n", r.text.c_str());
    std::abort();
  }
  return 0;
}

}  // namespace

// Each input runs on a thread with the stack the driver gives every tree walk (syntax/limits.h):
// a file nested up to the parser's limit must not overflow the fuzzer's own main stack.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  int rc = 0;
  torchport::syntax::run_on_walk_stack([&] { rc = one_input(data, size); });
  return rc;
}
