// libFuzzer target for the notebook reader and writer (notebook/notebook.h): any bytes are read
// as a .ipynb file, with these invariants:
//   - the JSON scanner accepts exactly what nlohmann::json accepts (deeper than its nesting
//     limit aside): an independent oracle of what JSON is. nlohmann's lexer takes a NUL byte
//     between tokens for the end of the input (for C strings), so `""\0junk` passes there; a NUL
//     byte can never be part of a JSON text, so an input holding one must be refused instead;
//   - no edits (and no --clear-outputs) give back the same bytes;
//   - a line inserted at the top of the module maps into a cell, and the rewritten notebook,
//     read again, is that edited module (the self-check migrate relies on);
//   - clearing the outputs keeps the module as it was.
// Crashes, hangs, sanitizer reports and broken invariants are findings.
#include <torchport/notebook/notebook.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace {

namespace nb = torchport::notebook;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "notebook invariant broken: %s\n", what);
  std::abort();
}

int one_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  nb::Value v;
  nb::ScanError se;
  const bool ours = nb::scan(bytes, v, se);
  if (bytes.find('\0') != std::string_view::npos) {
    if (ours) broken("the scanner accepted a NUL byte");
  } else if (ours || se.message != "nested too deeply") {
    if (ours != nlohmann::json::accept(bytes)) broken("the scanner and nlohmann::json disagree");
  }
  nb::ReadError err;
  const std::optional<nb::Notebook> book = nb::read(bytes, err);
  if (!book) return 0;
  if (nb::rewrite(*book, bytes, {}, false).bytes != bytes) broken("no edits changed the bytes");
  const nb::Rewritten cleared = nb::rewrite(*book, bytes, {}, true);
  if (!cleared.error.empty()) broken("clearing the outputs failed");
  const std::optional<nb::Notebook> again = nb::read(cleared.bytes, err);
  if (!again || again->module != book->module) broken("clearing the outputs changed the module");
  if (book->module.empty()) return 0;
  const std::string line = "import torch_npu  # \xC3\xA9\n";
  const nb::Rewritten top = nb::rewrite(*book, bytes, {{book->top, book->top, line}}, false);
  if (!top.error.empty()) {
    std::fprintf(stderr, "%s\n", top.error.c_str());
    broken("an insertion at the top of the module was refused");
  }
  std::string expected = book->module;
  expected.insert(book->top, line);
  const std::optional<nb::Notebook> edited = nb::read(top.bytes, err);
  if (!edited) broken("the rewritten notebook cannot be read");
  if (edited->module != expected) broken("the rewritten notebook is not the edited module");
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return one_input(data, size);
}
