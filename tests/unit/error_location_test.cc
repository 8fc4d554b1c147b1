// ParseErrorLocation reads back what FormatErrorAt wrote (the Python
// package's errors carry the parts as file / line / column / message).
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "hilo/text/source_location.h"

namespace hilo {
namespace {

TEST(ParseErrorLocationTest, ReadsWhatFormatErrorAtWrote) {
  const std::string text = "line one\n  second line\n";
  const std::string error = FormatErrorAt("a.hlo", text, text.find("second"), "bad token");
  std::optional<ErrorLocation> location = ParseErrorLocation(error, "a.hlo");
  ASSERT_TRUE(location.has_value()) << error;
  EXPECT_EQ(location->line, 2);
  EXPECT_EQ(location->column, 3);
  EXPECT_EQ(location->message, "bad token");
}

TEST(ParseErrorLocationTest, OtherTextIsNotALocation) {
  EXPECT_FALSE(ParseErrorLocation("b.hlo:2:3: error: x", "a.hlo").has_value());
  EXPECT_FALSE(ParseErrorLocation("a.hlo:2: error: x", "a.hlo").has_value());
  EXPECT_FALSE(ParseErrorLocation("a.hlo:x:3: error: x", "a.hlo").has_value());
  EXPECT_FALSE(ParseErrorLocation("a.hlo:2:3: warning: x", "a.hlo").has_value());
  EXPECT_FALSE(ParseErrorLocation("a.hlo:2:3:", "a.hlo").has_value());
  EXPECT_FALSE(ParseErrorLocation("pass 'dce': failed", "a.hlo").has_value());
  // A file name holding a colon and digits is taken whole.
  std::optional<ErrorLocation> location = ParseErrorLocation("a:1:b.hlo:7:9: error: m\nx", "a:1:b.hlo");
  ASSERT_TRUE(location.has_value());
  EXPECT_EQ(location->line, 7);
  EXPECT_EQ(location->column, 9);
  EXPECT_EQ(location->message, "m");
}

}  // namespace
}  // namespace hilo
