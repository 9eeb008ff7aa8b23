// Printing a tree back to text. The tree is lossless: print(parse(src)) == src, byte for byte.
#pragma once

#include <torchport/syntax/tree.h>

#include <string>

namespace torchport::syntax {

/// The whole module, every token and every piece of trivia, in order.
std::string print(const Tree& tree);

/// The tokens of `node`'s span with the trivia between them (== tree.text(node)).
std::string print(const Tree& tree, const Node& node);

/// True when the tokens tile the text and print(tree) == tree.text().
bool round_trips(const Tree& tree);

}  // namespace torchport::syntax
