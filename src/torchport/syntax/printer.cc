#include <torchport/syntax/printer.h>

namespace torchport::syntax {

std::string print(const Tree& tree) {
  std::string out;
  out.reserve(tree.text().size());
  for (const Token& t : tree.tokens()) out += t.text(tree.text());
  return out;
}

std::string print(const Tree& tree, const Node& node) {
  std::string out;
  for (std::uint32_t i = node.first_token(); i <= node.last_token(); ++i)
    out += tree.tokens()[i].text(tree.text());
  return out;
}

bool round_trips(const Tree& tree) {
  std::uint32_t at = 0;
  for (const Token& t : tree.tokens()) {
    if (t.begin != at || t.end < t.begin || t.end > tree.text().size()) return false;
    at = t.end;
  }
  return at == tree.text().size() && print(tree) == tree.text();
}

}  // namespace torchport::syntax
