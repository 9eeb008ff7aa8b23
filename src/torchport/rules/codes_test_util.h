// The codes of the findings the rules give on a snippet, and the snippet migrated: the rule
// tests' one-line checks.
// Test code only.
#pragma once

#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
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

/// `src` (which must parse) with every fix the rules give for `target` applied, unsafe ones too.
inline std::string migrated(const std::string& src, const std::string& target) {
  const syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = target;
  std::vector<fix::Fix> fixes;
  for (const Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings)
    if (f.fix) fixes.push_back(*f.fix);
  return fix::apply_fixes(src, fixes, fix::Applicability::Unsafe).text;
}

}  // namespace torchport::rules::testing
