// The text format's character classes and the identifier scan.
#include "hilo/text/char_class.h"

#include <string>

#include "gtest/gtest.h"

namespace hilo {
namespace {

bool IsIdentCharBySpec(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '$';
}

TEST(CharClassTest, IdentifierCharactersAreExactlyTheSpecifiedOnes) {
  for (int c = 0; c < 256; ++c) {
    EXPECT_EQ(IsIdentChar(static_cast<char>(c)), IsIdentCharBySpec(c)) << c;
  }
}

TEST(CharClassTest, IdentifierEndsAtEveryNonIdentifierByteAtEveryPosition) {
  // Positions on both sides of the 16-byte blocks, every byte value as the
  // one after the identifier.
  for (size_t length = 0; length < 40; ++length) {
    for (int c = 0; c < 256; ++c) {
      std::string text(length, 'a');
      for (size_t i = 0; i < length; ++i) text[i] = "aZ09_.-$"[i % 8];
      text += static_cast<char>(c);
      text += "!" + std::string(40, '#');
      const size_t expected = IsIdentCharBySpec(c) ? length + 1 : length;
      ASSERT_EQ(IdentifierLength(text), expected) << "length " << length << " byte " << c;
    }
  }
}

TEST(CharClassTest, IdentifierRunningToTheEndOfTheText) {
  for (size_t length = 0; length < 70; ++length) {
    const std::string text(length, 'q');
    EXPECT_EQ(IdentifierLength(text), length);
    // A view that stops inside a longer buffer: nothing past it is read as
    // part of the identifier.
    const std::string longer = text + "tail";
    EXPECT_EQ(IdentifierLength(absl::string_view(longer.data(), length)), length);
  }
}

}  // namespace
}  // namespace hilo
