// InstructionNameIndex (the module's instructions by name): finds what was
// inserted, refuses a name twice, and erases by shifting entries back so
// that every entry left is still found, through growth and after many
// erasures (a broken shift loses entries that probed past the hole), at
// any number of slots (a run that wraps past the last slot).
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/instruction_name_index.h"
#include "hilo/ir/linear_probing.h"
#include "hilo/ir/name_hash.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

// A module of `n` instructions: a parameter and a chain of negates.
std::vector<HloInstruction*> Instructions(int n, std::unique_ptr<HloModule>* module) {
  std::string text = "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n";
  std::string last = "p";
  for (int i = 1; i < n; ++i) {
    std::string name = absl::StrCat("negate_with_some_length.", i);
    absl::StrAppend(&text, "  ", i + 1 == n ? "ROOT " : "", name, " = f32[] negate(", last, ")\n");
    last = name;
  }
  text += "}\n";
  auto parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  *module = std::move(*parsed);
  std::vector<HloInstruction*> out;
  for (HloInstruction* inst : (*module)->entry_computation()->instructions()) out.push_back(inst);
  return out;
}

TEST(InstructionNameIndexTest, InsertFindEraseThroughGrowth) {
  std::unique_ptr<HloModule> module;
  const std::vector<HloInstruction*> insts = Instructions(3000, &module);
  ASSERT_EQ(insts.size(), 3000u);
  InstructionNameIndex index;
  EXPECT_EQ(index.Find("p"), nullptr);
  EXPECT_EQ(index.Erase("p"), nullptr);
  for (HloInstruction* inst : insts) EXPECT_EQ(index.Insert(inst), nullptr);
  EXPECT_EQ(index.size(), insts.size());
  EXPECT_LE(index.size(), index.capacity() - index.capacity() / 8);
  for (HloInstruction* inst : insts) {
    EXPECT_EQ(index.Insert(inst), inst);  // the name is there: no second entry
    EXPECT_EQ(index.Find(inst->name()), inst);
    EXPECT_EQ(index.Find(inst->name(), HashName(inst->name())), inst);
    index.Prefetch(HashName(inst->name()));
  }
  EXPECT_EQ(index.size(), insts.size());
  EXPECT_EQ(index.Find("negate_with_some_length.3000"), nullptr);
  EXPECT_FALSE(index.contains("q"));
  // Erase two of every three: runs are cut in many places.
  for (size_t i = 0; i < insts.size(); ++i) {
    if (i % 3 != 0) {
      EXPECT_EQ(index.Erase(insts[i]->name()), insts[i]);
    }
  }
  EXPECT_EQ(index.size(), 1000u);
  for (size_t i = 0; i < insts.size(); ++i) {
    EXPECT_EQ(index.Find(insts[i]->name()), i % 3 == 0 ? insts[i] : nullptr) << i;
    EXPECT_EQ(index.Erase(insts[i]->name()) == nullptr, i % 3 != 0) << i;
  }
  EXPECT_TRUE(index.empty());
  for (HloInstruction* inst : insts) EXPECT_EQ(index.Insert(inst), nullptr);
  InstructionNameIndex moved = std::move(index);
  EXPECT_EQ(moved.size(), insts.size());
  for (HloInstruction* inst : insts) EXPECT_EQ(moved.Find(inst->name()), inst);
}

TEST(InstructionNameIndexTest, ReserveHoldsWithoutGrowing) {
  std::unique_ptr<HloModule> module;
  const std::vector<HloInstruction*> insts = Instructions(500, &module);
  InstructionNameIndex index;
  index.reserve(insts.size());
  const size_t capacity = index.capacity();
  for (HloInstruction* inst : insts) index.Insert(inst);
  EXPECT_EQ(index.capacity(), capacity);
  for (HloInstruction* inst : insts) EXPECT_EQ(index.Find(inst->name()), inst);
}

// HILO_NAME_INDEX_EXACT (linear_probing.h): reserve(n) takes about 4n/3
// slots, else the next power of two holding n at 7/8.
const bool kExact = !EnvSwitchIsZero("HILO_NAME_INDEX_EXACT");

TEST(InstructionNameIndexTest, CapacityForHoldsNAtThreeQuarters) {
  if (!kExact) GTEST_SKIP() << "HILO_NAME_INDEX_EXACT=0: powers of two";
  EXPECT_EQ(linear_probing::CapacityFor(0), 16u);
  EXPECT_EQ(linear_probing::CapacityFor(12), 16u);
  EXPECT_EQ(linear_probing::CapacityFor(13), 18u);
  EXPECT_EQ(linear_probing::CapacityFor(4000002), 5333336u);
  for (size_t n = 12; n < 100000; n = n * 3 / 2 + 1) {
    const size_t capacity = linear_probing::CapacityFor(n);
    EXPECT_LE(4 * n, 3 * capacity) << n;      // at most 3/4 full
    EXPECT_GT(4 * n, 3 * (capacity - 1)) << n;  // and no slot more
  }
}

// HILO_NAME_SLACK (linear_probing.h): with room to spare, reserve(n,
// max_slots) takes 2n slots (half full), within max_slots, never fewer than
// reserve(n)'s.
TEST(InstructionNameIndexTest, SlackHalvesTheLoadWithinTheBudget) {
  if (!kExact || EnvSwitchIsZero("HILO_NAME_SLACK")) GTEST_SKIP() << "switched off";
  EXPECT_EQ(linear_probing::CapacityFor(1000, 0), linear_probing::CapacityFor(1000));
  EXPECT_EQ(linear_probing::CapacityFor(1000, 1000), 1334u);  // 3/4 full: below it
  EXPECT_EQ(linear_probing::CapacityFor(1000, 1500), 1500u);
  EXPECT_EQ(linear_probing::CapacityFor(1000, 2000), 2000u);
  EXPECT_EQ(linear_probing::CapacityFor(1000, 1000000), 2000u);
  InstructionNameIndex index;
  index.reserve(374006, 69839565 / 64);  // the parser's, on hilo-gen -L 17000
  EXPECT_EQ(index.capacity(), 748012u);
  InstructionNameIndex dense;
  dense.reserve(400002, 13766761 / 64);  // 100,000 small computations
  EXPECT_EQ(dense.capacity(), linear_probing::CapacityFor(400002));
}

// A table of 18 slots filled to its 7/8 (16 entries): runs wrap past the
// last slot, and erasing in any order shifts entries back across the wrap.
TEST(InstructionNameIndexTest, RunsWrapAtAnyCapacity) {
  std::unique_ptr<HloModule> module;
  const std::vector<HloInstruction*> insts = Instructions(3200, &module);
  std::mt19937 rng(5);
  for (size_t first = 0; first + 16 <= insts.size(); first += 16) {
    std::vector<HloInstruction*> group(insts.begin() + first, insts.begin() + first + 16);
    InstructionNameIndex index;
    index.reserve(13);
    ASSERT_EQ(index.capacity(), kExact ? 18u : 16u);
    if (!kExact) group.resize(14);  // 7/8 of 16
    for (HloInstruction* inst : group) EXPECT_EQ(index.Insert(inst), nullptr);
    ASSERT_EQ(index.capacity(), kExact ? 18u : 16u);  // full, not grown
    std::shuffle(group.begin(), group.end(), rng);
    for (size_t k = 0; k < group.size(); ++k) {
      EXPECT_EQ(index.Erase(group[k]->name()), group[k]);
      for (size_t j = 0; j < group.size(); ++j) {
        EXPECT_EQ(index.Find(group[j]->name()), j > k ? group[j] : nullptr) << first << " " << k;
      }
    }
    EXPECT_TRUE(index.empty());
  }
}

// A table grown to millions of slots keeps its entries, a move frees the
// table it replaces, and Insert with a given hash is Insert.
TEST(InstructionNameIndexTest, LargeTablesGrowAndMove) {
  std::unique_ptr<HloModule> module;
  const std::vector<HloInstruction*> insts = Instructions(3000, &module);
  InstructionNameIndex index;
  for (size_t i = 0; i < insts.size(); ++i) {
    HloInstruction* inst = insts[i];
    EXPECT_EQ(i % 2 == 0 ? index.Insert(inst) : index.Insert(inst, HashName(inst->name())), nullptr);
  }
  EXPECT_EQ(index.capacity(), 4096u);  // grown by doubling from 16
  index.reserve(250000);
  EXPECT_EQ(index.capacity(), kExact ? 333334u : size_t{1} << 19);
  for (HloInstruction* inst : insts) {
    EXPECT_EQ(index.Find(inst->name()), inst);
    EXPECT_EQ(index.Insert(inst, HashName(inst->name())), inst);
  }
  index.reserve(600000);
  EXPECT_EQ(index.capacity(), kExact ? 800000u : size_t{1} << 20);
  for (size_t i = 0; i < insts.size(); i += 2) EXPECT_EQ(index.Erase(insts[i]->name()), insts[i]);
  EXPECT_EQ(index.size(), 1500u);
  InstructionNameIndex small;
  small.Insert(insts[0]);
  small = std::move(index);  // frees the small table, takes the large one
  EXPECT_EQ(index.capacity(), 0u);
  EXPECT_EQ(index.Find(insts[1]->name()), nullptr);
  for (size_t i = 0; i < insts.size(); ++i) {
    EXPECT_EQ(small.Find(insts[i]->name()), i % 2 == 1 ? insts[i] : nullptr) << i;
  }
  InstructionNameIndex& same = small;
  small = std::move(same);  // a move onto itself keeps the table
  EXPECT_EQ(small.size(), 1500u);
  EXPECT_EQ(small.Find(insts[1]->name()), insts[1]);
}

}  // namespace
}  // namespace hilo
