// libFuzzer target for the project files migrate reads that are not Python: requirements*.txt,
// pyproject.toml, setup.cfg, shell launchers and C++/CUDA sources (rules::check_other), for
// every target. The first byte picks the file name (its low 3 bits) and the target (the rest),
// the rest of the input is the file's text.
// Invariants: no crash; every finding and every edit lies inside the text; the fixes apply.
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torchport;
  static const char* const kNames[] = {
      "requirements.txt", "requirements-dev.txt", "pyproject.toml", "setup.cfg",
      "run.sh",           "ops/kernel.cu",        "csrc/op.cpp",    "include/op.h"};
  if (size == 0) return 0;
  const std::string name = kNames[data[0] % (sizeof kNames / sizeof kNames[0])];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const catalogue::Catalogue& cat = catalogue::Catalogue::builtin();
  {
    const auto& targets = cat.targets();
    const catalogue::Target& target = targets[(data[0] >> 3) % targets.size()];
    rules::Options opts;
    opts.target = target.name;
    const rules::FileResult result = rules::check_other(name, text, opts);
    std::vector<fix::Fix> fixes;
    for (const rules::Finding& f : result.findings) {
      if (f.begin > f.end || f.end > text.size()) {
        std::fprintf(stderr, "%s %s: finding %s outside the text\n", target.name.c_str(),
                     name.c_str(), f.code.c_str());
        std::abort();
      }
      if (!f.fix) continue;
      for (const fix::Edit& e : f.fix->edits)
        if (e.begin > e.end || e.end > text.size()) {
          std::fprintf(stderr, "%s %s: edit of %s outside the text\n", target.name.c_str(),
                       name.c_str(), f.code.c_str());
          std::abort();
        }
      fixes.push_back(*f.fix);
    }
    (void)fix::apply_fixes(text, fixes);
  }
  return 0;
}
