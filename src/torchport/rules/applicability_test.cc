// Issue 32 §3: the applicability of representative codes. Numerics- and behaviour-changing
// rewrites are Unsafe, what cannot be rewritten mechanically is DisplayOnly, plain renames are
// Safe; and the one default (fix::kDefaultApplied) applies Unsafe fixes, never DisplayOnly ones.
#include <gtest/gtest.h>
#include <torchport/catalogue/catalogue.h>
#include <torchport/fix/apply.h>
#include <torchport/rules/engine.h>
#include <torchport/syntax/parser.h>

#include <string>
#include <vector>

namespace torchport::rules {
namespace {

using fix::Applicability;

struct Seen {
  std::string code;
  std::string api;
  std::optional<Applicability> applicability;  ///< nullopt: no fix
  std::string changes;
};

std::vector<Seen> findings(const std::string& src, const std::string& target) {
  syntax::Tree tree = syntax::parse("t.py", src);
  EXPECT_TRUE(tree.ok());
  Options o;
  o.target = target;
  std::vector<Seen> out;
  for (const Finding& f : check(tree, catalogue::Catalogue::builtin(), o).findings)
    out.push_back({f.code, f.api,
                   f.fix ? std::optional<Applicability>(f.fix->applicability) : std::nullopt,
                   f.changes});
  return out;
}

const Seen* find(const std::vector<Seen>& seen, std::string_view code) {
  for (const Seen& s : seen)
    if (s.code == code) return &s;
  return nullptr;
}

TEST(Applicability, TheAutocastDtypePinnedIsANumericsChangeAndUnsafe) {
  auto seen = findings("import torch\nwith torch.autocast(\"cuda\"):\n    pass\n", "cpu");
  const Seen* s = find(seen, "TP201");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->applicability, Applicability::Unsafe);
  EXPECT_EQ(s->changes,
            "numerics: autocast dtype pinned to CUDA's default float16 (not cpu's default "
            "bfloat16)");
  // The device type it needs is a plain rename: safe.
  const Seen* d = find(seen, "TP300");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->applicability, Applicability::Safe);
}

TEST(Applicability, AValueReplacedByAConstantIsUnsafe) {
  auto seen = findings("import torch\nprint(torch.cuda.max_memory_allocated())\n", "cpu");
  const Seen* s = find(seen, "TP100");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->applicability, Applicability::Unsafe);
  EXPECT_EQ(s->changes, "changes behaviour: a value replaced by a constant");
}

TEST(Applicability, DroppedDeviceIdsAreUnsafe) {
  auto seen = findings(
      "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
      "m = DDP(model, device_ids=[rank])\n",
      "cpu");
  const Seen* s = find(seen, "TP402");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->applicability, Applicability::Unsafe);
  EXPECT_EQ(s->changes, "changes behaviour: device_ids dropped");
}

TEST(Applicability, AnUnclearDeviceStringGetsADisplayOnlyFix) {
  const std::string src = "choices = (\"cuda:1\", \"cpu\")\n";
  syntax::Tree tree = syntax::parse("t.py", src);
  for (const auto& [target, shown] : std::vector<std::pair<std::string, std::string>>{
           {"npu", "choices = (\"npu:1\", \"cpu\")\n"},
           {"mps", "choices = (\"mps\", \"cpu\")\n"}}) {
    Options o;
    o.target = target;
    FileResult r = check(tree, catalogue::Catalogue::builtin(), o);
    ASSERT_EQ(r.findings.size(), 1u) << target;
    const Finding& f = r.findings[0];
    EXPECT_EQ(f.code, "TP700");
    EXPECT_EQ(f.op, Operation::Unknown);
    ASSERT_TRUE(f.fix.has_value());
    EXPECT_EQ(f.fix->applicability, Applicability::DisplayOnly);
    // What it would be, shown; never applied, whatever is allowed.
    EXPECT_EQ(fix::apply_fixes(src, {*f.fix}, Applicability::DisplayOnly).text, shown);
    const fix::ApplyResult applied = fix::apply_fixes(src, {*f.fix}, fix::kDefaultApplied);
    EXPECT_EQ(applied.text, src);
    EXPECT_EQ(applied.outcomes[0], fix::FixOutcome::NotApplicable);
  }
  // accelerator has no literal device to show.
  Options o;
  o.target = "accelerator";
  FileResult r = check(tree, catalogue::Catalogue::builtin(), o);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_FALSE(r.findings[0].fix.has_value());
}

TEST(Applicability, TheDefaultAppliesUnsafeFixesAndTheFixPrimitiveAgrees) {
  EXPECT_EQ(fix::kDefaultApplied, Applicability::Unsafe);
  const std::vector<fix::Fix> fixes = {{{fix::Edit{0, 1, "A"}}, Applicability::Unsafe},
                                       {{fix::Edit{1, 2, "B"}}, Applicability::DisplayOnly}};
  EXPECT_EQ(fix::apply_fixes("ab", fixes).text, "Ab");
}

}  // namespace
}  // namespace torchport::rules
