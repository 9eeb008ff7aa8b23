// libFuzzer target for everything that reads user Python files:
// decode -> tokenize -> parse -> print, and the two invariants that must hold for any input:
//   - decode followed by encode gives back the raw bytes;
//   - the printed tree is the decoded text, byte for byte.
// Crashes, hangs, sanitizer reports and broken invariants are findings.
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/syntax/printer.h>
#include <torchport/text/source.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

int one_input(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  torchport::text::DecodeResult decoded = torchport::text::decode("fuzz.py", bytes);
  if (!decoded.source) return 0;  // undecodable input is reported, not parsed
  const torchport::text::SourceFile& source = *decoded.source;
  if (torchport::text::encode(source, source.text) != bytes) {
    std::fprintf(stderr, "decode/encode round trip failed (encoding %s)\n",
                 source.encoding.c_str());
    std::abort();
  }
  const std::string text = source.text;
  torchport::syntax::Tree tree = torchport::syntax::parse(source);
  if (torchport::syntax::print(tree) != text) {
    std::fprintf(stderr, "print(parse(text)) != text\n");
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
