// text/source_location.h: the parser's error form, and finding where a
// computation or instruction of a module is written.
#include "hilo/text/source_location.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

TEST(FormatErrorAtTest, PointsAtLineAndColumn) {
  EXPECT_EQ(FormatErrorAt("m.hlo", "HloModule m\n  ROOT\tx = y\n", 14, "bad"),
            "m.hlo:2:3: error: bad\n  ROOT x = y\n  ^");
  // At the very end of the text, and past it.
  EXPECT_EQ(FormatErrorAt("m.hlo", "ab", 2, "end"), "m.hlo:1:3: error: end\nab\n  ^");
  EXPECT_EQ(FormatErrorAt("m.hlo", "ab", 99, "end"), "m.hlo:1:3: error: end\nab\n  ^");
}

TEST(FormatErrorAtTest, ShowsAWindowOfALongLineAndCutsLongMessages) {
  const std::string line = std::string(1000, 'a') + "X" + std::string(1000, 'b');
  const std::string error = FormatErrorAt("m.hlo", line, 1000, std::string(5000, 'm'));
  EXPECT_EQ(error.find("m.hlo:1:1001: error: "), 0u);
  EXPECT_NE(error.find(std::string(1024, 'm') + "...\n"), std::string::npos);
  EXPECT_EQ(error.find(std::string(1025, 'm')), std::string::npos);
  const std::string shown = "..." + std::string(50, 'a') + "X" + std::string(149, 'b') + "...";
  EXPECT_NE(error.find("\n" + shown + "\n" + std::string(53, ' ') + "^"), std::string::npos) << error;
}

TEST(FormatErrorAtTest, EscapesControlBytesAndInvalidUtf8) {
  // A binary input is quoted with its bytes escaped; the caret stays under
  // the offending byte; valid UTF-8 is shown as is.
  const std::string text = std::string("\x7f" "ELF\x02\x01", 6) + std::string(1, '\0') + "caf\xc3\xa9 \xff";
  EXPECT_EQ(FormatErrorAt("b.bin", text, 6, "NUL byte in input"),
            "b.bin:1:7: error: NUL byte in input\n"
            "\\x7fELF\\x02\\x01\\x00caf\xc3\xa9 \\xff\n"
            "               ^");
  // A long binary line is cut after the caret like a text line.
  const std::string binary(5000, '\x01');
  const std::string error = FormatErrorAt("b.bin", binary, 0, "bad");
  EXPECT_LT(error.size(), 200u + 150u) << error;
  EXPECT_NE(error.find("...\n^"), std::string::npos) << error;
}

constexpr const char* kModule = R"(HloModule m

%add.1 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

helper {
  x = f32[] parameter(0)
  // s = f32[] negate(x), a comment
  s1 = f32[] negate(x)
  ROOT s = f32[] negate(s1)
}

ENTRY %main (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  ROOT %s = f32[] call(%p), to_apply=helper
}
)";

// The line and column of an offset in kModule.
std::string LineColumn(size_t offset) {
  const std::string text = kModule;
  size_t line = 1, start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') ++line, start = i + 1;
  }
  return absl::StrCat(line, ":", offset - start + 1);
}

TEST(FindDefinitionTest, FindsInstructionsInTheirComputation) {
  auto at = [](const char* computation, const char* instruction) {
    std::optional<size_t> offset = FindDefinition(kModule, computation, instruction);
    return offset.has_value() ? LineColumn(*offset) : std::string("none");
  };
  EXPECT_EQ(at("add.1", "y"), "5:3");
  EXPECT_EQ(at("add.1", "s"), "6:8");   // after ROOT, past the '%'
  EXPECT_EQ(at("helper", "s"), "13:8");  // not the commented line, nor s1
  EXPECT_EQ(at("helper", "s1"), "12:3");
  EXPECT_EQ(at("main", "s"), "18:8");
  EXPECT_EQ(at("main", "p"), "17:3");
  // Computations: their name in the header.
  EXPECT_EQ(at("add.1", ""), "3:1");
  EXPECT_EQ(at("helper", ""), "9:1");
  EXPECT_EQ(at("main", ""), "16:7");
  // Not there.
  EXPECT_EQ(at("main", "x"), "none");
  EXPECT_EQ(at("nope", ""), "none");
  EXPECT_EQ(at("m", ""), "none");  // the module's name is not a computation
}

TEST(FindDefinitionTest, PointsAtWhatTheVerifierReports) {
  const std::string text =
      "HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[7] reshape(p)\n}\n";
  auto module = ParseHloModule(text, "m.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::Status verified = VerifyHloModule(**module);
  ASSERT_FALSE(verified.ok());
  std::optional<VerifierLocation> location = GetVerifierLocation(verified);
  ASSERT_TRUE(location.has_value());
  EXPECT_EQ(location->computation, "e");
  EXPECT_EQ(location->instruction, "r");
  std::optional<size_t> offset = FindDefinition(text, location->computation, location->instruction);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(FormatErrorAt("m.hlo", text, *offset, "invalid"),
            "m.hlo:5:8: error: invalid\n  ROOT r = f32[7] reshape(p)\n       ^");
  EXPECT_FALSE(GetVerifierLocation(absl::OkStatus()).has_value());
  EXPECT_FALSE(GetVerifierLocation(absl::InvalidArgumentError("x")).has_value());
}

}  // namespace
}  // namespace hilo
