// apply_findings: each finding becomes a row (its strings moved in), with what became of its fix.
#include <gtest/gtest.h>
#include <torchport/project/apply.h>

namespace torchport::project {
namespace {

rules::Finding finding(std::string code, std::uint32_t begin, std::uint32_t end,
                       std::string replacement, fix::Applicability a) {
  rules::Finding f;
  f.code = std::move(code);
  f.op = rules::Operation::Modify;
  f.api = "torch.cuda.synchronize_for_a_long_name";
  f.message = "change it for the target, a message longer than a short string";
  f.changes = a == fix::Applicability::Unsafe ? "changes behaviour: a value replaced" : "";
  f.begin = begin;
  f.end = end;
  fix::Fix fx;
  fx.edits.push_back(fix::Edit{begin, end, std::move(replacement)});
  fx.applicability = a;
  f.fix = std::move(fx);
  return f;
}

TEST(ApplyFindings, EachRowSaysWhatBecameOfItsFixAndKeepsTheFindingsWords) {
  const std::string text = "a = x.cuda()\nb = y.cuda()\nc = z.cuda()\nd = w.cuda()\n";
  std::vector<rules::Finding> fs;
  fs.push_back(finding("TP100", 6, 10, "npu", fix::Applicability::Safe));     // applied
  fs.push_back(finding("TP101", 19, 23, "npu", fix::Applicability::Unsafe));  // left out
  fs.push_back(finding("TP102", 32, 36, "npu", fix::Applicability::DisplayOnly));
  fs.push_back(finding("TP103", 45, 49, "npu", fix::Applicability::Safe));
  fs.push_back(finding("TP104", 45, 49, "xpu", fix::Applicability::Safe));  // overlaps TP103
  Options opts;
  opts.fixes = fix::Applicability::Safe;  // --no-unsafe-fixes
  FileWork w;
  const Applied a = apply_findings("m.py", text, fs, opts, w);
  ASSERT_TRUE(a.text.has_value());
  EXPECT_EQ(*a.text, "a = x.npu()\nb = y.cuda()\nc = z.cuda()\nd = w.npu()\n");
  ASSERT_EQ(w.rows.size(), 5u);
  const std::string msg = "change it for the target, a message longer than a short string";
  const report::Row& safe = w.rows[0];
  EXPECT_EQ(safe.file, "m.py");
  EXPECT_EQ(safe.code, "TP100");
  EXPECT_EQ(safe.api, "torch.cuda.synchronize_for_a_long_name");
  EXPECT_EQ(safe.message, msg);
  EXPECT_TRUE(safe.applied);
  EXPECT_EQ(safe.applicability, "safe");
  EXPECT_EQ(safe.start_line, 1u);
  EXPECT_EQ(safe.column, 7u);
  const report::Row& unsafe = w.rows[1];
  EXPECT_FALSE(unsafe.applied);
  EXPECT_EQ(unsafe.applicability, "unsafe");
  EXPECT_EQ(unsafe.changes, "changes behaviour: a value replaced");
  EXPECT_EQ(unsafe.message, "not applied (unsafe fix, left out by --no-unsafe-fixes): " + msg);
  EXPECT_EQ(w.rows[2].message, "not applied (display-only fix): " + msg);
  EXPECT_EQ(w.rows[2].applicability, "display-only");
  EXPECT_TRUE(w.rows[3].applied);
  EXPECT_EQ(w.rows[3].message, msg);
  const report::Row& overlap = w.rows[4];
  EXPECT_FALSE(overlap.applied);
  EXPECT_EQ(overlap.op, rules::Operation::Unsupported);
  EXPECT_EQ(overlap.code, "TP104");
  EXPECT_EQ(overlap.message, "not applied (overlaps another change): " + msg);
}

}  // namespace
}  // namespace torchport::project
