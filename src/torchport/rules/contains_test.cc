// rules::contains(text, word, rare) answers text.find(word) != npos, whichever byte of the word
// it searches for: random texts over a small alphabet (many partial matches), every `rare`, the
// word at the very start and end, texts shorter than the word, texts of several 16-window blocks
// (the word in a block, across two, in the windows after the last block).
#include <gtest/gtest.h>
#include <torchport/rules/context.h>

#include <random>
#include <string>

namespace torchport::rules {
namespace {

TEST(Contains, AnswersAsFindForEveryRareByte) {
  std::mt19937 rng(35);
  std::uniform_int_distribution<int> pick(0, 3);
  const std::string alphabet = "ab_g";
  auto random_text = [&](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += alphabet[static_cast<std::size_t>(pick(rng))];
    return s;
  };
  std::size_t found = 0, checked = 0;
  for (int round = 0; round < 3000; ++round) {
    const std::string text = random_text(static_cast<std::size_t>(round % 40 + round % 3 * 40));
    const std::string word = random_text(1 + static_cast<std::size_t>(round % 5));
    const bool want = text.find(word) != std::string::npos;
    found += want ? 1 : 0;
    for (std::size_t rare = 0; rare <= word.size(); ++rare) {  // word.size(): no such byte
      ASSERT_EQ(contains(text, word, rare), want) << text << " / " << word << " / " << rare;
      ++checked;
    }
  }
  EXPECT_GT(found, 500u);
  EXPECT_GT(checked, 9000u);
  for (std::size_t rare = 0; rare < 12; ++rare) {
    EXPECT_TRUE(contains("add_argument", "add_argument", rare));
    EXPECT_TRUE(contains("x.add_argument", "add_argument", rare));
    EXPECT_TRUE(contains("add_argument(", "add_argument", rare));
    EXPECT_FALSE(contains("add_argumen", "add_argument", rare));
    EXPECT_FALSE(contains("dd_argument", "add_argument", rare));
    EXPECT_FALSE(contains("", "add_argument", rare));
  }
  EXPECT_TRUE(contains("", "", 0));
  // The word at every offset of a long text that says it once, and only almost elsewhere.
  const std::string filler = "add_argumen dd_argument add_argumend ";
  for (std::size_t at = 0; at < 80; ++at) {
    std::string text = filler + filler + filler;
    const std::string without = text;
    text.insert(at, "add_argument");
    for (std::size_t rare = 0; rare < 12; ++rare) {
      ASSERT_TRUE(contains(text, "add_argument", rare)) << at << " / " << rare;
      ASSERT_FALSE(contains(without, "add_argument", rare)) << rare;
      ASSERT_TRUE(contains(text.substr(0, at + 12), "add_argument", rare)) << at << " / " << rare;
      ASSERT_FALSE(contains(text.substr(0, at + 11), "add_argument", rare)) << at << " / " << rare;
    }
  }
}

}  // namespace
}  // namespace torchport::rules
