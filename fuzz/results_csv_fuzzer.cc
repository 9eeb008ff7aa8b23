// libFuzzer target for the CSV that `analyze --third-party --api FILE` reads back
// (full_unsupported_results.csv, Ascend's or ours).
// Invariants: no crash; a refused file has an error located as `path:line: reason`.
#include <torchport/callgraph/callgraph.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto known = torchport::callgraph::read_results("results.csv", text, &error);
  if (!known && !error.starts_with("results.csv:")) {
    std::fprintf(stderr, "refused without a location: '%s'\n", error.c_str());
    std::abort();
  }
  return 0;
}
