// InstructionArena (ir/instruction_arena.h) and the instructions made in it:
// aligned, contiguous memory; small blocks first, then 2 MB blocks aligned
// to 2 MB and advised for huge pages (unless HILO_HUGE_PAGES=0 or the
// kernel gives advised memory none); instructions deleted like any other
// (under AddressSanitizer a wrong free or a leak fails the test run).
#include "hilo/ir/instruction_arena.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <unistd.h>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/text/parser.h"
#include "smaps.h"

namespace hilo {
namespace {

constexpr size_t kHuge = InstructionArena::kHugeBlock;

std::string VmFlagsOf(const void* address) { return testing::SmapsField(address, "VmFlags:"); }

TEST(InstructionArenaTest, ReadsTheKernelModeAndTheSwitch) {
  EXPECT_TRUE(InstructionArena::HugePagesEnabled("always [madvise] never\n", nullptr));
  EXPECT_TRUE(InstructionArena::HugePagesEnabled("[always] madvise never\n", nullptr));
  EXPECT_TRUE(InstructionArena::HugePagesEnabled("[always] madvise never\n", "1"));
  EXPECT_FALSE(InstructionArena::HugePagesEnabled("[always] madvise never\n", "0"));
  EXPECT_FALSE(InstructionArena::HugePagesEnabled("always madvise [never]\n", nullptr));
  EXPECT_FALSE(InstructionArena::HugePagesEnabled("", nullptr));  // no such file
  EXPECT_FALSE(InstructionArena::HugePagesEnabled("madvise", nullptr));
  EXPECT_FALSE(InstructionArena::HugePagesEnabled("always [madvise never", nullptr));
}

TEST(InstructionArenaTest, SmallBlocksFirstThenAlignedHugeBlocks) {
  InstructionArena arena;
  arena.Allocate(64, 16);
  ASSERT_EQ(arena.blocks().size(), 1u);
  EXPECT_EQ(arena.blocks()[0].size, InstructionArena::kFirstBlock);
  EXPECT_FALSE(arena.blocks()[0].huge_page_advised);
  // Filling it and the next ones: each block twice the last, up to 2 MB.
  while (arena.blocks().back().size < kHuge) arena.Allocate(1024, 16);
  for (size_t i = 1; i < arena.blocks().size(); ++i) {
    EXPECT_EQ(arena.blocks()[i].size, std::min(2 * arena.blocks()[i - 1].size, kHuge)) << i;
  }
  const InstructionArena::Block& huge = arena.blocks().back();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(huge.begin) % kHuge, 0u);
  EXPECT_EQ(huge.huge_page_advised, InstructionArena::HugePagesEnabled());
}

TEST(InstructionArenaTest, ALargeModuleGetsAdvisedHugeBlocksFromTheStart) {
  InstructionArena arena;
  arena.ExpectBytes(size_t{64} << 20);
  char* p = static_cast<char*>(arena.Allocate(224, 16));
  ASSERT_EQ(arena.blocks().size(), 1u);
  const InstructionArena::Block& block = arena.blocks()[0];
  EXPECT_EQ(block.begin, p);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block.begin) % kHuge, 0u);
  EXPECT_EQ(block.size, kHuge);
  const std::string flags = VmFlagsOf(p);
  ASSERT_FALSE(flags.empty());
  if (InstructionArena::HugePagesEnabled()) {
    EXPECT_TRUE(block.huge_page_advised);
    EXPECT_NE(flags.find(" hg "), std::string::npos) << flags;
  } else {
    EXPECT_FALSE(block.huge_page_advised);
    EXPECT_EQ(flags.find(" hg "), std::string::npos) << flags;
  }
  // A second block, also aligned.
  arena.Allocate(kHuge - 64, 16);
  ASSERT_EQ(arena.blocks().size(), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.blocks()[1].begin) % kHuge, 0u);
}

// HILO_HUGE_PAGES=0 turns the advice off (read once per process, so in a
// process of its own).
TEST(InstructionArenaDeathTest, TheSwitchTurnsTheAdviceOff) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("HILO_HUGE_PAGES", "0", 1);
        InstructionArena arena;
        arena.ExpectBytes(size_t{64} << 20);
        void* p = arena.Allocate(224, 16);
        const bool off = !InstructionArena::HugePagesEnabled() &&
                         !arena.blocks()[0].huge_page_advised &&
                         VmFlagsOf(p).find(" hg ") == std::string::npos;
        std::exit(off ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(InstructionArenaTest, AllocationsAreAlignedAndDoNotOverlap) {
  InstructionArena arena;
  std::vector<std::pair<uintptr_t, size_t>> blocks;
  for (size_t i = 0; i < 5000; ++i) {
    const size_t size = 1 + (i * 37) % 300;
    const size_t alignment = size_t{1} << (i % 5);  // 1..16
    auto at = reinterpret_cast<uintptr_t>(arena.Allocate(size, alignment));
    ASSERT_EQ(at % alignment, 0u) << i;
    blocks.emplace_back(at, size);
  }
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i) {
    ASSERT_LE(blocks[i - 1].first + blocks[i - 1].second, blocks[i].first) << i;
  }
  EXPECT_GT(arena.reserved_bytes(), 0u);
}

TEST(InstructionArenaTest, ConsecutiveAllocationsAreAdjacent) {
  InstructionArena arena;
  auto* a = static_cast<char*>(arena.Allocate(64, 16));
  auto* b = static_cast<char*>(arena.Allocate(64, 16));
  EXPECT_EQ(b, a + 64);
}

TEST(InstructionArenaTest, AnAllocationLargerThanABlockGetsItsOwn) {
  InstructionArena arena;
  const size_t big = size_t{1} << 20;
  auto* p = static_cast<unsigned char*>(arena.Allocate(big, 16));
  for (size_t i = 0; i < big; i += 4096) p[i] = 1;  // all of it is usable
  p[big - 1] = 1;
  EXPECT_GE(arena.reserved_bytes(), big);
  EXPECT_NE(arena.Allocate(8, 8), nullptr);
}

TEST(InstructionArenaTest, InstructionsInTheArenaAreDeletedLikeOthers) {
  HloModule module("m");
  InstructionArena& arena = module.instruction_arena();
  const size_t before = arena.reserved_bytes();
  // Detached and dropped before the module: only the destructor runs.
  {
    auto dropped = HloInstruction::CreateInArena(arena, HloOpcode::kParameter,
                                                 SharedShape(Shape::MakeScalar(PrimitiveType::F32)),
                                                 "a_name_long_enough_to_allocate");
    dropped->set_parameter_number(0);
    EXPECT_EQ(dropped->name(), "a_name_long_enough_to_allocate");
  }
  EXPECT_GT(arena.reserved_bytes(), before);
  // In a computation, with a heap instruction beside it.
  auto comp = std::make_unique<HloComputation>("e");
  HloComputation* c = module.AddComputation(std::move(comp), /*is_entry=*/true);
  auto p = HloInstruction::CreateInArena(arena, HloOpcode::kParameter,
                                         SharedShape(Shape::MakeScalar(PrimitiveType::F32)), "p");
  p->set_parameter_number(0);
  HloInstruction* param = c->AddInstruction(std::move(p));
  HloInstruction* neg = c->AddInstruction(
      HloInstruction::Create(HloOpcode::kNegate, Shape::MakeScalar(PrimitiveType::F32), {param}));
  auto extra = HloInstruction::CreateInArena(arena, HloOpcode::kNegate,
                                             SharedShape(Shape::MakeScalar(PrimitiveType::F32)), "x");
  extra->AppendOperand(param);
  HloInstruction* removed = c->AddInstruction(std::move(extra));
  c->set_root_instruction(neg);
  ASSERT_TRUE(c->RemoveInstruction(removed).ok());
  EXPECT_EQ(neg->operand(0), param);
  EXPECT_EQ(param->users().size(), 1u);
}

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// The untouched pages at the end of the last block go back to the system;
// what was allocated stays, and the next allocation starts a new block.
TEST(InstructionArenaTest, ReleaseUnusedGivesBackTheLastBlocksUnusedPages) {
  if (InstructionArena::kBlocksFromHeap) GTEST_SKIP() << "heap blocks are not given back in part";
  InstructionArena arena;
  arena.ExpectBytes(size_t{64} << 20);
  char* p = static_cast<char*>(arena.Allocate(10000, 16));
  std::fill(p, p + 10000, 'x');
  ASSERT_EQ(arena.reserved_bytes(), kHuge);
  arena.ReleaseUnused();
  const size_t kept = (10000 + PageSize() - 1) / PageSize() * PageSize();
  EXPECT_EQ(arena.reserved_bytes(), kept);
  ASSERT_EQ(arena.blocks().size(), 1u);
  EXPECT_EQ(arena.blocks()[0].size, kept);
  EXPECT_TRUE(VmFlagsOf(p + kept).empty());  // no longer mapped
  EXPECT_EQ(std::count(p, p + 10000, 'x'), 10000);
  char* q = static_cast<char*>(arena.Allocate(64, 16));
  ASSERT_EQ(arena.blocks().size(), 2u);
  EXPECT_EQ(arena.blocks()[1].begin, q);
  arena.ReleaseUnused();
  arena.ReleaseUnused();  // nothing more to give back
  EXPECT_EQ(arena.reserved_bytes(), kept + PageSize());
}

// Huge blocks only while a whole one more is expected; the rest in a block
// of small pages (resident only as used), not advised, never huge.
TEST(InstructionArenaTest, TheEndOfTheExpectedBytesGoesToSmallPages) {
  InstructionArena arena;
  arena.ExpectBytes(kHuge + kHuge / 2);  // 3 MB: one huge block, then 1 MB
  arena.Allocate(kHuge - 64, 16);
  ASSERT_EQ(arena.blocks().size(), 1u);
  EXPECT_EQ(arena.blocks()[0].huge_page_advised, InstructionArena::HugePagesEnabled());
  EXPECT_EQ(arena.used_bytes(), kHuge - 64);
  char* p = static_cast<char*>(arena.Allocate(128, 16));
  ASSERT_EQ(arena.blocks().size(), 2u);
  const InstructionArena::Block& tail = arena.blocks()[1];
  EXPECT_EQ(tail.begin, p);
  EXPECT_FALSE(tail.huge_page_advised);
  EXPECT_EQ(VmFlagsOf(p).find(" hg "), std::string::npos) << VmFlagsOf(p);
  EXPECT_EQ(arena.used_bytes(), kHuge - 64 + 128);  // the first block's last 64 bytes unused
  // A new, larger announcement: huge blocks again.
  arena.ExpectBytes(size_t{64} << 20);
  arena.Allocate(kHuge, 16);
  ASSERT_EQ(arena.blocks().size(), 3u);
  EXPECT_EQ(arena.blocks()[2].huge_page_advised, InstructionArena::HugePagesEnabled());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.blocks()[2].begin) % kHuge, 0u);
}

TEST(InstructionArenaTest, WithoutAnAnnouncementHugeBlocksStay) {
  InstructionArena arena;
  arena.ExpectBytes(size_t{3} << 20);
  arena.Allocate(100, 16);
  arena.ReleaseUnused();  // the parse is over: what follows was not announced
  arena.Allocate(kHuge, 16);
  ASSERT_EQ(arena.blocks().size(), 2u);
  EXPECT_EQ(arena.blocks()[1].huge_page_advised, InstructionArena::HugePagesEnabled());
}

// HILO_ARENA_TAIL=0 keeps huge blocks to the end (read once per process).
TEST(InstructionArenaDeathTest, TheTailSwitchKeepsHugeBlocks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("HILO_ARENA_TAIL", "0", 1);
        InstructionArena arena;
        arena.ExpectBytes(kHuge + kHuge / 2);
        arena.Allocate(kHuge - 64, 16);
        arena.Allocate(128, 16);
        const bool huge = !InstructionArena::SmallPageTailEnabled() && arena.blocks().size() == 2 &&
                          arena.blocks()[1].huge_page_advised == InstructionArena::HugePagesEnabled() &&
                          reinterpret_cast<uintptr_t>(arena.blocks()[1].begin) % kHuge == 0;
        std::exit(huge ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The parser announces what the rest of its text will take (from what it
// made of the text so far): its instructions fill huge blocks, and the last
// part, under 2 MB, goes to small pages.
TEST(InstructionArenaTest, TheParsersLastInstructionsGoToSmallPages) {
  std::string text = "HloModule m\n\nENTRY e {\n  p = f32[] parameter(0)\n";
  // 30,000 instructions: more than one huge block's worth (3.6 MB at 120 bytes each).
  for (int i = 0; i < 30000; ++i) absl::StrAppend(&text, "  n", i, " = f32[] negate(p)\n");
  absl::StrAppend(&text, "  ROOT r = f32[] negate(p)\n}\n");
  auto parsed = ParseHloModule(text, "<input>", [](size_t) {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const InstructionArena& arena = (*parsed)->instruction_arena();
  ASSERT_GT(arena.used_bytes(), 30000 * sizeof(HloInstruction));
  const std::vector<InstructionArena::Block>& blocks = arena.blocks();
  ASSERT_GE(blocks.size(), 2u);
  EXPECT_EQ(blocks.front().huge_page_advised, InstructionArena::HugePagesEnabled());
  EXPECT_FALSE(blocks.back().huge_page_advised);
  size_t huge = 0;
  for (const InstructionArena::Block& block : blocks) huge += block.huge_page_advised ? block.size : 0;
  if (InstructionArena::HugePagesEnabled()) {
    EXPECT_LE(huge, arena.used_bytes());  // no huge page partly unused
    EXPECT_GT(huge + kHuge, arena.used_bytes());
  }
}

TEST(InstructionArenaTest, TheParserMakesInstructionsInTheModulesArena) {
  auto parsed = ParseHloModule(R"(HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] negate(a)
  ROOT c = f32[2] negate(b)
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  HloModule& module = **parsed;
  // Three instructions: the first block's pages after the first were given back.
  if (!InstructionArena::kBlocksFromHeap) {
    EXPECT_EQ(module.instruction_arena().reserved_bytes(), PageSize());
  }
  EXPECT_GT(module.instruction_arena().reserved_bytes(), 0u);
  const HloComputation* e = module.entry_computation();
  // Made one after the other: next to each other.
  const auto* a = e->parameter_instruction(0);
  const auto* b = e->root_instruction()->operand(0);
  EXPECT_EQ(reinterpret_cast<const char*>(b) - reinterpret_cast<const char*>(a),
            static_cast<std::ptrdiff_t>(sizeof(HloInstruction)));
}

}  // namespace
}  // namespace hilo
