// The codes of the findings the rules give on a snippet: the rule tests' one-line check.
// Test code only.
#pragma once

#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules::testing {

/// Parses `src` (which must parse), runs every rule for `target`, and gives the findings' codes
/// in the order the rules report them.
inline std::vector<std::string> codes(const std::string& src, const std::string& target = "npu") {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = target;
  std::vector<std::string> out;
  for (const Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings)
    out.push_back(f.code);
  return out;
}

}  // namespace torchport::rules::testing
