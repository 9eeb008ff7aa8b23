// libFuzzer target for what migrate does to a Python file, for every target:
// decode -> parse -> semantic model -> rules -> apply the safe fixes -> re-parse -> the second
// pass (TP310, the command line's device flags) -> apply -> re-parse.
// The invariants that must hold for any input that parses:
//   - the rules never crash, and every fix they produce has edits inside the text;
//   - the rewritten text parses again (a rewrite that breaks the file is a finding, even though
//     the driver would catch it and keep the original).
// Crashes, hangs, sanitizer reports and broken invariants are findings.
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

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
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  text::DecodeResult decoded = text::decode("fuzz.py", bytes);
  if (!decoded.source) return 0;
  syntax::Tree tree = syntax::parse(*decoded.source);
  if (!tree.ok()) return 0;  // reported and copied unchanged by migrate
  const semantic::Model model(tree);
  const catalogue::Catalogue& cat = catalogue::Catalogue::builtin();
  for (const catalogue::Target& target : cat.targets()) {
    rules::Options opts;
    opts.target = target.name;
    const rules::FileResult result = rules::check(tree, model, cat, opts);
    std::vector<fix::Fix> fixes;
    for (const rules::Finding& f : result.findings) {
      if (f.begin > f.end || f.end > tree.text().size()) {
        std::fprintf(stderr, "%s: finding %s outside the text\n", target.name.c_str(),
                     f.code.c_str());
        std::abort();
      }
      if (f.fix) fixes.push_back(*f.fix);
    }
    const fix::ApplyResult applied = fix::apply_fixes(tree.text(), fixes);
    const syntax::Tree again = syntax::parse("fuzz.py", applied.text);
    if (!again.ok()) {
      std::fprintf(stderr, "%s: the rewritten file does not parse: %s\n--- output ---\n%s\n",
                   target.name.c_str(),
                   again.diagnostics().empty() ? "?" : again.format(again.diagnostics()[0]).c_str(),
                   applied.text.c_str());
      std::abort();
    }
    const semantic::Model model2(again);
    std::vector<fix::Fix> fixes2;
    for (const rules::Finding& f : rules::port_device_idiom(again, model2, cat, opts)) {
      if (f.begin > f.end || f.end > again.text().size()) {
        std::fprintf(stderr, "%s: finding %s outside the text\n", target.name.c_str(),
                     f.code.c_str());
        std::abort();
      }
      if (f.fix) fixes2.push_back(*f.fix);
    }
    if (fixes2.empty()) continue;
    const fix::ApplyResult applied2 = fix::apply_fixes(again.text(), fixes2);
    const syntax::Tree third = syntax::parse("fuzz.py", applied2.text);
    if (!third.ok()) {
      std::fprintf(stderr, "%s: the second pass's output does not parse: %s\n--- output ---\n%s\n",
                   target.name.c_str(),
                   third.diagnostics().empty() ? "?" : third.format(third.diagnostics()[0]).c_str(),
                   applied2.text.c_str());
      std::abort();
    }
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
