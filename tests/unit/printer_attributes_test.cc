// PrintHloAttributes: an instruction's attributes, one (name, text) pair each,
// exactly as PrintHloInstruction writes them (the Python `attributes` view).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr char kModule[] = R"(HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %p), metadata={op_name="a, b=c"}, unknown_attr={1, {2}}
  ROOT %ar = f32[4]{0} all-reduce(f32[4]{0} %n), replica_groups={{0,1}}, channel_id=7, to_apply=%add, frontend_attributes={k="v, w"}
}
)";

TEST(PrintHloAttributesTest, PairsInPrintOrderWithTheirText) {
  auto module = ParseHloModule(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  const HloComputation* entry = (*module)->entry_computation();
  const HloInstruction* ar = entry->root_instruction();
  EXPECT_THAT(PrintHloAttributes(*ar),
              ElementsAre(Pair("replica_groups", "{{0,1}}"), Pair("channel_id", "7"),
                          Pair("to_apply", "%add"), Pair("frontend_attributes", "{k=\"v, w\"}")));
  const HloInstruction* negate = ar->operand(0);
  EXPECT_THAT(PrintHloAttributes(*negate),
              ElementsAre(Pair("metadata", "{op_name=\"a, b=c\"}"), Pair("unknown_attr", "{1, {2}}")));
  EXPECT_TRUE(PrintHloAttributes(*negate->operand(0)).empty());
}

TEST(PrintHloAttributesTest, JoinedTheyAreWhatThePrinterWrites) {
  auto module = ParseHloModule(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  for (const HloComputation* computation : (*module)->computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      std::string joined;
      for (const auto& [name, value] : PrintHloAttributes(*instruction)) {
        absl::StrAppend(&joined, ", ", name, "=", value);
      }
      const std::string printed = PrintHloInstruction(*instruction);
      ASSERT_GE(printed.size(), joined.size());
      EXPECT_EQ(printed.substr(printed.size() - joined.size()), joined) << printed;
    }
  }
}

}  // namespace
}  // namespace hilo
