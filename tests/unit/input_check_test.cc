// CheckInput and CountSpacedEquals: the parser's sweeps (bad bytes, lines, " =").
#include "hilo/text/input_check.h"

#include <algorithm>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace hilo {
namespace {

size_t Newlines(absl::string_view text) { return std::count(text.begin(), text.end(), '\n'); }

size_t SpacedEquals(absl::string_view text) {
  size_t n = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) n += text[i] == ' ' && text[i + 1] == '=';
  return n;
}

TEST(InputCheckTest, CountsEveryNewlineAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  for (size_t size = 0; size < 300; ++size) {
    for (int round = 0; round < 4; ++round) {
      std::string text(size, 'a');
      for (char& c : text) c = rng() % 3 == 0 ? '\n' : static_cast<char>('a' + rng() % 26);
      const InputCheck check = CheckInput(text);
      EXPECT_EQ(check.problem, nullptr);
      EXPECT_EQ(check.lines, Newlines(text)) << "size " << size;
    }
  }
}

TEST(InputCheckTest, CountsEverySpacedEqualsAtEveryLengthAndAlignment) {
  // Pairs straddle the sixteen-byte blocks and the input's end.
  std::mt19937 rng(11);
  const char alphabet[] = {' ', '=', ' ', '=', 'a', '\n'};
  for (size_t size = 0; size < 300; ++size) {
    for (int round = 0; round < 4; ++round) {
      std::string text(size, 'a');
      for (char& c : text) c = alphabet[rng() % sizeof(alphabet)];
      EXPECT_EQ(CountSpacedEquals(text), SpacedEquals(text)) << "size " << size;
    }
  }
  // Past the lane counters' limit (255 blocks), and around non-ASCII bytes.
  std::string long_text;
  for (int i = 0; i < 20000; ++i) long_text += i % 13 == 0 ? "\xC3\xA9 =\n" : "  x = f32[] y()\n";
  EXPECT_EQ(CountSpacedEquals(long_text), SpacedEquals(long_text));
  std::string pairs;
  for (int i = 0; i < 255 * 16 * 3 + 7; ++i) pairs += " =";
  EXPECT_EQ(CountSpacedEquals(pairs), pairs.size() / 2);
  EXPECT_EQ(CountSpacedEquals(std::string(255 * 16 * 3 + 7, ' ') + "="), 1u);
  EXPECT_EQ(CountSpacedEquals(std::string(255 * 16 * 3 + 7, '=')), 0u);
}

TEST(InputCheckTest, CountsPastTheLaneCounterLimits) {
  // Byte lanes count at most 255 before they are summed: all newlines, long
  // enough for many sums, with an odd tail for the word and byte loops.
  const std::string text(255 * 16 * 5 + 13, '\n');
  EXPECT_EQ(CheckInput(text).lines, text.size());
  std::string mixed;
  for (int i = 0; i < 20000; ++i) mixed += i % 7 == 0 ? "\n" : "x\n";
  EXPECT_EQ(CheckInput(mixed).lines, Newlines(mixed));
}

TEST(InputCheckTest, CountsNewlinesAroundValidUtf8) {
  // Non-ASCII bytes leave the fast loops; the count must resume exactly.
  std::string text;
  for (int i = 0; i < 500; ++i) {
    text += i % 5 == 0 ? "\xC3\xA9\n" : i % 3 == 0 ? "\xE2\x82\xAC" : "abc\n";
    if (i % 11 == 0) text += "\xF0\x9F\x98\x80\n";
  }
  const InputCheck check = CheckInput(text);
  EXPECT_EQ(check.problem, nullptr);
  EXPECT_EQ(check.lines, Newlines(text));
}

TEST(InputCheckTest, FindsANulAtEveryOffset) {
  std::string clean;
  for (int i = 0; i < 100; ++i) clean += i % 9 == 0 ? '\n' : 'q';
  for (size_t at = 0; at < clean.size(); ++at) {
    std::string text = clean;
    text[at] = '\0';
    const InputCheck check = CheckInput(text);
    ASSERT_NE(check.problem, nullptr) << at;
    EXPECT_STREQ(check.problem, "NUL byte in input");
    EXPECT_EQ(check.problem_offset, at);
    EXPECT_EQ(check.lines, Newlines(absl::string_view(text).substr(0, at)));
  }
}

TEST(InputCheckTest, RejectsInvalidUtf8) {
  struct Case {
    std::string text;
    size_t offset;
  };
  const Case cases[] = {
      {"abc\x80", 3},                  // a lone continuation byte
      {"ab\xC0\x80", 2},               // an overlong encoding
      {"a\xE2\x82", 1},                // cut at the end
      {"\xF5\x80\x80\x80", 0},         // beyond U+10FFFF
      {"x\n\xC3(", 2},                 // a lead byte without its continuation
      {std::string(40, 'a') + "\xFF", 40},
  };
  for (const Case& c : cases) {
    const InputCheck check = CheckInput(c.text);
    ASSERT_NE(check.problem, nullptr) << c.text;
    EXPECT_STREQ(check.problem, "invalid UTF-8 in input");
    EXPECT_EQ(check.problem_offset, c.offset);
  }
}

}  // namespace
}  // namespace hilo
