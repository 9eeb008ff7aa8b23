// libFuzzer target for the device values that cross a project's modules (flow/project_values.h):
// the input is written as two modules of one package, pkg/a.py and pkg/b.py (and as the
// top-level module c.py), so that its imports (`from .b import X`, `from .. import y`,
// `import pkg.b as m`) and its argparse options resolve into files holding the same text. The
// value of every name, attribute and call of pkg/a.py is then asked for, with the project. Its
// first line also goes, as a path, through module_of and resolve_relative. A crash, a hang or a
// sanitizer report is a finding.
#include <torchport/flow/device_values.h>
#include <torchport/flow/project_values.h>
#include <torchport/syntax/limits.h>
#include <torchport/syntax/parser.h>
#include <torchport/text/source.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace {

namespace fs = std::filesystem;

const fs::path& root() {
  static const fs::path r = [] {
    fs::path p =
        fs::temp_directory_path() / ("tp_project_values_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(p / "pkg");
    std::ofstream(p / "pkg" / "__init__.py", std::ios::binary) << "";
    return p;
  }();
  return r;
}

int one_input(const std::uint8_t* data, std::size_t size) {
  using namespace torchport;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string_view first = bytes.substr(0, bytes.find('\n'));
  const std::string module = flow::ProjectValues::module_of(first);
  (void)flow::ProjectValues::resolve_relative(module, size % 2 == 0, size % 4, first);
  text::DecodeResult decoded = text::decode("pkg/a.py", bytes);
  if (!decoded.source) return 0;
  syntax::Tree tree = syntax::parse(*decoded.source);
  if (!tree.ok()) return 0;
  for (const char* rel : {"pkg/a.py", "pkg/b.py", "c.py"})
    std::ofstream(root() / rel, std::ios::binary | std::ios::trunc) << tree.text();
  const flow::ProjectValues project(root(), {"pkg/__init__.py", "pkg/a.py", "pkg/b.py", "c.py"});
  const flow::DeviceValues values(tree, {&project, "pkg.a", false});
  for (syntax::NodeKind kind :
       {syntax::NodeKind::Name, syntax::NodeKind::Attribute, syntax::NodeKind::Call}) {
    for (const syntax::Node* n : tree.find_all(kind)) (void)values.of(*n);
  }
  return 0;
}

}  // namespace

// Each input runs on a thread with the stack the driver gives every tree walk (syntax/limits.h).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  int rc = 0;
  torchport::syntax::run_on_walk_stack([&] { rc = one_input(data, size); });
  return rc;
}
