// libFuzzer target for the custom rules files of `migrate -r FILE` (Ascend's JSON rule format),
// read into the catalogue. The first byte picks the target and specify_device, the rest is the
// file (one catalogue copy an input: every target an input ran 3 inputs a second).
// Invariants: no crash and no exception; a refused file has an error that names the file.
#include <torchport/catalogue/catalogue.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torchport;
  if (size == 0) return 0;
  const catalogue::Catalogue& cat = catalogue::Catalogue::builtin();
  const auto& targets = cat.targets();
  const catalogue::Target& target = targets[(data[0] >> 1) % targets.size()];
  const bool specify_device = (data[0] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  auto with = cat.with_rules("rules.json", text, target.name, specify_device, &error);
  if (!with && !error.starts_with("rules.json")) {
    std::fprintf(stderr, "refused without naming the file: '%s'\n", error.c_str());
    std::abort();
  }
  return 0;
}
