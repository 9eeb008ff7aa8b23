// Phases 3 and 4 of the driver for a Python file, parse and model: the bytes decoded (PEP 263,
// BOM) and parsed into the lossless tree, then the tree's semantic model (imports, aliases,
// scopes, qualified names). A file that does not decode or parse ends here, copied unchanged.
#pragma once

#include <torchport/project/files.h>
#include <torchport/project/work.h>
#include <torchport/semantic/model.h>
#include <torchport/syntax/tree.h>

#include <memory>
#include <optional>
#include <string>

namespace torchport::project {

/// Output of parse_file: the tree of a file that parses.
struct Parsed {
  std::unique_ptr<syntax::Tree> tree;
};

/// Input: the file's bytes (freed once decoded). nullopt when the file does not decode or parse;
/// `w`'s entry then says why.
std::optional<Parsed> parse_file(const ProjectFile& f, std::string bytes, FileWork& w);

/// Output of build_model: the tree and its model (which refers to the tree).
struct Modelled {
  std::unique_ptr<syntax::Tree> tree;
  std::unique_ptr<const semantic::Model> model;
};

/// Input: the parsed file.
Modelled build_model(Parsed parsed);

}  // namespace torchport::project
