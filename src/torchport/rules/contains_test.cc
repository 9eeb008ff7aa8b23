// rules::contains(text, word, rare) answers text.find(word) != npos, whichever byte of the word
// it searches for: random texts over a small alphabet (many partial matches), every `rare`, the
// word at the very start and end, texts shorter than the word.
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
    const std::string text = random_text(static_cast<std::size_t>(round % 40));
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
}

}  // namespace
}  // namespace torchport::rules
