// A Draft is one site's finding, complete but for its code; its producer makes the Finding
// (context.h). What the draft says is what the finding says, field for field.
#include <gtest/gtest.h>
#include <torchport/rules/context.h>

namespace torchport::rules {
namespace {

TEST(Draft, TheFindingCarriesEveryFieldOfTheDraftAndItsCode) {
  Draft d = display(Operation::Unknown, "torch.cuda.x", "why", 3, 9, fix::Edit{3, 9, "y"})
                .labelled("changes behaviour: y", fix::Applicability::Unsafe)
                .dropping(2, 10);
  const Finding f = finding("TP700", std::move(d));
  EXPECT_EQ(f.code, "TP700");
  EXPECT_EQ(f.op, Operation::Unknown);
  EXPECT_EQ(f.api, "torch.cuda.x");
  EXPECT_EQ(f.message, "why");
  EXPECT_EQ(f.begin, 3u);
  EXPECT_EQ(f.end, 9u);
  ASSERT_TRUE(f.fix.has_value());
  ASSERT_EQ(f.fix->edits.size(), 1u);
  EXPECT_EQ(f.fix->edits[0].replacement, "y");
  EXPECT_EQ(f.fix->applicability, fix::Applicability::Unsafe);
  EXPECT_EQ(f.changes, "changes behaviour: y");
  EXPECT_EQ(f.drops, (std::pair<std::uint32_t, std::uint32_t>{2, 10}));
}

TEST(Draft, AReportHasNoFixAndALabelGivesItNone) {
  const Draft d = report(Operation::Unsupported, "nccl", "no backend", 0, 4)
                      .labelled("changes behaviour: z", fix::Applicability::Unsafe);
  EXPECT_FALSE(d.fix.has_value());
  EXPECT_EQ(d.changes, "changes behaviour: z");
  EXPECT_FALSE(d.changes_file);
}

TEST(Draft, ADisplayOnlyEditDoesNotChangeTheFile) {
  const Draft d = display(Operation::Unknown, "a", "b", 0, 1, fix::Edit{0, 1, "c"});
  ASSERT_TRUE(d.fix.has_value());
  EXPECT_EQ(d.fix->applicability, fix::Applicability::DisplayOnly);
  EXPECT_FALSE(d.changes_file);
}

}  // namespace
}  // namespace torchport::rules
