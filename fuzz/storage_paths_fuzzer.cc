// libFuzzer target for `torchport dev storage-paths` (migrate --object-storage / --modelarts):
// decode -> parse -> scan_storage_paths on any input, with the invariants the generator relies on:
//   - every path found has a line within the file and a non-empty value;
//   - the import insertion line is at most one past the last line.
// Crashes, hangs, sanitizer reports and broken invariants are findings.
#include <torchport/rules/storage_paths.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

int one_input(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  torchport::text::DecodeResult decoded = torchport::text::decode("fuzz.py", bytes);
  if (!decoded.source) return 0;
  const torchport::syntax::Tree tree = torchport::syntax::parse(*decoded.source);
  if (!tree.ok()) return 0;
  const torchport::rules::StorageScan scan = torchport::rules::scan_storage_paths(tree);
  const std::uint32_t last =
      tree.lines().locate(static_cast<std::uint32_t>(tree.text().size())).line;
  for (const torchport::rules::StoragePath& p : scan.paths) {
    if (p.line < 1 || p.line > last || p.value.empty()) {
      std::fprintf(stderr, "bad storage path at line %u (file has %u lines)\n", p.line, last);
      std::abort();
    }
  }
  if (scan.insert_line < 1 || scan.insert_line > last + 1) {
    std::fprintf(stderr, "insert line %u outside 1..%u\n", scan.insert_line, last + 1);
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
