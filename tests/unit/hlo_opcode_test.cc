// Checks HloOpcode against the specification's opcode table: every value,
// text name and arity of shared/spec/hlo-opcodes.tsv.
#include "hilo/ir/hlo_opcode.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "shared_dir.h"

namespace hilo {
namespace {

TEST(HloOpcodeTest, MatchesSpecificationTable) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string table = test::SharedDir() + "/spec/hlo-opcodes.tsv";
  std::ifstream in(table);
  ASSERT_TRUE(in.good()) << "cannot open " << table;
  std::string line;
  std::getline(in, line);  // header
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string value, enumerator, text, arity;
    std::getline(fields, value, '\t');
    std::getline(fields, enumerator, '\t');
    std::getline(fields, text, '\t');
    std::getline(fields, arity, '\t');
    int byte = std::stoi(value, nullptr, 16);
    auto opcode = StringToHloOpcode(text);
    ASSERT_TRUE(opcode.has_value()) << text;
    EXPECT_EQ(HloOpcodeByte(*opcode), byte) << text;
    EXPECT_EQ(HloOpcodeString(static_cast<HloOpcode>(byte)), text);
    EXPECT_EQ(HloOpcodeArity(*opcode), arity == "variadic" ? kVariadic : std::stoi(arity)) << text;
    ++rows;
  }
  EXPECT_EQ(rows, kSpecOpcodeCount);
}

TEST(HloOpcodeTest, SpotValuesFromTheSeeds) {
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kAllGather), 0x04);
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kAllReduce), 0x07);
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kConvert), 0x25);
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kDot), 0x2e);
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kGetTupleElement), 0x3a);
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kParameter), 0x4c);
  EXPECT_EQ(HloOpcodeByte(HloOpcode::kReshape), 0x5b);
  EXPECT_FALSE(StringToHloOpcode("no-such-op").has_value());
}

TEST(HloOpcodeTest, NewerOpcodesFollowTheTable) {
  // Opcodes XLA added after the specification's table must not move any
  // table value: they are numbered from kSpecOpcodeCount on.
  for (absl::string_view name : {"acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh",
                                 "scan", "scaled-dot"}) {
    auto opcode = StringToHloOpcode(name);
    ASSERT_TRUE(opcode.has_value()) << name;
    EXPECT_GE(HloOpcodeByte(*opcode), kSpecOpcodeCount) << name;
    EXPECT_LT(HloOpcodeByte(*opcode), kHloOpcodeCount) << name;
  }
}

}  // namespace
}  // namespace hilo
