// The instruction's compact members: PointerList (operands and users, two
// inline, then a tagged heap array) and InstructionName (15 characters
// inline, then the heap or the module's arena) and the common group
// (a call's called computations alone, then the whole group). Under
// AddressSanitizer a leaked or doubly freed array, name or group fails the
// test run.
#include <malloc.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/instruction_arena.h"
#include "hilo/ir/instruction_name.h"
#include "hilo/ir/pointer_list.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

struct Node {
  int value;
};

std::vector<int> Values(const PointerList<Node>& list) {
  std::vector<int> values;
  for (Node* node : list) values.push_back(node->value);
  return values;
}

TEST(PointerListTest, SixteenBytes) { EXPECT_EQ(sizeof(PointerList<Node>), 16u); }

TEST(PointerListTest, InlineThenHeapKeepsOrder) {
  Node nodes[10];
  for (int i = 0; i < 10; ++i) nodes[i].value = i;
  PointerList<Node> list;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.size(), 0u);
  EXPECT_EQ(list.begin(), list.end());
  std::vector<int> expected;
  for (int i = 0; i < 10; ++i) {
    list.push_back(&nodes[i]);
    expected.push_back(i);
    ASSERT_EQ(list.size(), expected.size());
    ASSERT_EQ(Values(list), expected);
    EXPECT_EQ(list.back(), &nodes[i]);
    EXPECT_EQ(list.front(), &nodes[0]);
    EXPECT_GE(list.capacity(), list.size());
  }
  EXPECT_EQ(list.capacity(), 16u);  // 2 inline, then 4, 8, 16
  EXPECT_EQ(list[7], &nodes[7]);
  list[7] = &nodes[0];
  EXPECT_EQ(list[7]->value, 0);
  list.clear();
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.capacity(), 2u);
}

// span() and empty() decode the two words their own way (once, and without
// the size): they must agree with data(), size() and size() == 0 in every
// state, the heap form emptied by pop_back included.
TEST(PointerListTest, SpanAndEmptyAgreeWithDataAndSize) {
  Node nodes[5] = {{0}, {1}, {2}, {3}, {4}};
  PointerList<Node> list;
  auto check = [&list] {
    ASSERT_EQ(list.span().data(), list.data());
    ASSERT_EQ(list.span().size(), list.size());
    ASSERT_EQ(list.empty(), list.size() == 0);
  };
  check();
  for (Node& node : nodes) {
    list.push_back(&node);
    check();
  }
  EXPECT_EQ(list.span()[4], &nodes[4]);
  while (list.size() > 0) {
    list.pop_back();
    check();
  }
  EXPECT_TRUE(list.empty());
  EXPECT_GT(list.capacity(), 2u);  // still on the heap, and empty
  PointerList<Node> small;
  small.push_back(&nodes[0]);
  small.push_back(&nodes[1]);
  small.erase(small.begin());
  EXPECT_FALSE(small.empty());
  EXPECT_EQ(small.span().size(), 1u);
  EXPECT_EQ(small.span()[0], &nodes[1]);
}

TEST(PointerListTest, EraseAndPopBackInBothForms) {
  Node nodes[4] = {{0}, {1}, {2}, {3}};
  PointerList<Node> small;
  small.push_back(&nodes[0]);
  small.push_back(&nodes[1]);
  small.erase(small.begin());
  EXPECT_EQ(Values(small), (std::vector<int>{1}));
  small.push_back(&nodes[2]);
  small.pop_back();
  EXPECT_EQ(Values(small), (std::vector<int>{1}));
  small.pop_back();
  EXPECT_TRUE(small.empty());

  PointerList<Node> big;
  for (Node& node : nodes) big.push_back(&node);
  big.erase(big.begin() + 1);
  EXPECT_EQ(Values(big), (std::vector<int>{0, 2, 3}));
  big.erase(big.end() - 1);
  EXPECT_EQ(Values(big), (std::vector<int>{0, 2}));
  big.pop_back();
  big.pop_back();
  // Still on the heap, and empty.
  EXPECT_TRUE(big.empty());
  EXPECT_EQ(big.size(), 0u);
  EXPECT_EQ(big.capacity(), 4u);
  big.push_back(&nodes[3]);
  EXPECT_EQ(Values(big), (std::vector<int>{3}));
}

TEST(PointerListTest, ReserveCopyMoveAndReverse) {
  Node nodes[5] = {{0}, {1}, {2}, {3}, {4}};
  PointerList<Node> list;
  list.reserve(2);
  EXPECT_EQ(list.capacity(), 2u);
  list.reserve(5);
  EXPECT_EQ(list.capacity(), 5u);
  for (Node& node : nodes) list.push_back(&node);
  EXPECT_EQ(list.capacity(), 5u);
  const std::vector<int> all = {0, 1, 2, 3, 4};
  PointerList<Node> copy(list);
  EXPECT_EQ(Values(copy), all);
  PointerList<Node> moved(std::move(copy));
  EXPECT_EQ(Values(moved), all);
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): defined as empty
  PointerList<Node> small;
  small.push_back(&nodes[4]);
  small = list;
  EXPECT_EQ(Values(small), all);
  list = std::move(small);
  EXPECT_EQ(Values(list), all);
  std::vector<int> reversed;
  for (auto it = list.rbegin(); it != list.rend(); ++it) reversed.push_back((*it)->value);
  EXPECT_EQ(reversed, (std::vector<int>{4, 3, 2, 1, 0}));
}

TEST(InstructionNameTest, InlineHeapAndArena) {
  EXPECT_EQ(sizeof(InstructionName), 16u);
  InstructionName name;
  EXPECT_TRUE(name.empty());
  EXPECT_EQ(name.view(), "");
  for (absl::string_view text : {"p0", "fifteen_chars__", "sixteen_chars___", "a", "",
                                 "get-tuple-element.12345.clone"}) {
    name.Assign(text);
    EXPECT_EQ(name.view(), text);
    EXPECT_EQ(name.empty(), text.empty());
  }
  InstructionArena arena;
  name.AssignInArena("a_name_longer_than_fifteen", arena);
  EXPECT_EQ(name.view(), "a_name_longer_than_fifteen");
  EXPECT_GE(arena.used_bytes(), 26u);
  name.AssignInArena("short", arena);
  EXPECT_EQ(name.view(), "short");
  name.Assign("a heap name after an arena one");
  EXPECT_EQ(name.view(), "a heap name after an arena one");
}

TEST(InstructionNameTest, AssignsItsOwnBytes) {
  InstructionName name;
  name.Assign("a long name on the heap, then part of it");
  name.Assign(name.view().substr(2, 20));  // heap -> heap, from its own bytes
  EXPECT_EQ(name.view(), "long name on the hea");
  name.Assign(name.view().substr(5, 4));  // heap -> inline
  EXPECT_EQ(name.view(), "name");
  name.Assign(name.view().substr(1));  // inline -> inline
  EXPECT_EQ(name.view(), "ame");
}

TEST(InstructionNameTest, ParsedLongNamesLiveInTheArena) {
  auto module = ParseHloModule(
      "HloModule m\n"
      "ENTRY e {\n"
      "  a_parameter_with_a_long_name = f32[] parameter(0)\n"
      "  ROOT n = f32[] negate(a_parameter_with_a_long_name)\n"
      "}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  const HloInstruction* root = (*module)->entry_computation()->root_instruction();
  EXPECT_EQ(root->name(), "n");
  const HloInstruction* parameter = root->operand(0);
  EXPECT_EQ(parameter->name(), "a_parameter_with_a_long_name");
  bool in_arena = false;
  for (const InstructionArena::Block& block : (*module)->instruction_arena().blocks()) {
    const char* data = parameter->name().data();
    in_arena |= data >= block.begin && data < block.begin + block.size;
  }
  EXPECT_TRUE(in_arena);
}

// Whether `data` lies in one of `arena`'s blocks.
bool InArena(const InstructionArena& arena, const void* data) {
  const char* at = static_cast<const char*>(data);
  for (const InstructionArena::Block& block : arena.blocks()) {
    if (at >= block.begin && at < block.begin + block.size) return true;
  }
  return false;
}

// The opcode, the arena bit, the text flags and the 32-bit parameter number
// or tuple index share one word: each keeps its value whatever the others
// hold, and an instruction made in an arena is still deleted as one (a
// heap instruction whose arena bit a flag had set would leak, one in an
// arena whose bit a flag had cleared would be freed: AddressSanitizer
// reports either).
TEST(PackedWordTest, IndexTextFlagsAndArenaBitAreIndependent) {
  constexpr uint32_t kAllFlags = (1u << HloInstruction::kTextFlagBits) - 1;
  InstructionArena arena;
  for (bool in_arena : {false, true}) {
    for (HloOpcode opcode : {HloOpcode::kParameter, HloOpcode::kGetTupleElement}) {
      SharedShape shape(Shape::MakeArray(PrimitiveType::F32, {}));
      std::unique_ptr<HloInstruction> inst =
          in_arena ? HloInstruction::CreateInArena(arena, opcode, shape, "x")
                   : HloInstruction::Create(opcode, shape, {}, "x");
      const bool parameter = opcode == HloOpcode::kParameter;
      auto index = [&] { return parameter ? inst->parameter_number() : inst->tuple_index(); };
      auto set_index = [&](int64_t n) {
        parameter ? inst->set_parameter_number(n) : inst->set_tuple_index(n);
      };
      set_index(INT32_MAX);
      inst->set_text_flags(kAllFlags);
      EXPECT_EQ(index(), INT32_MAX);
      EXPECT_EQ(inst->text_flags(), kAllFlags);
      EXPECT_EQ(inst->opcode(), opcode);
      inst->set_text_flags(0xffffffffu);  // higher bits are not kept
      EXPECT_EQ(inst->text_flags(), kAllFlags);
      set_index(0);
      EXPECT_EQ(inst->text_flags(), kAllFlags);
      inst->set_text_flags(0);
      EXPECT_EQ(index(), 0);
      set_index(INT32_MIN);
      EXPECT_EQ(index(), INT32_MIN);
      EXPECT_EQ(inst->text_flags(), 0u);
      EXPECT_EQ(inst->opcode(), opcode);
      EXPECT_EQ(InArena(arena, inst.get()), in_arena);
    }
  }
  EXPECT_TRUE(HloInstruction::IndexFits(INT32_MAX));
  EXPECT_TRUE(HloInstruction::IndexFits(INT32_MIN));
  EXPECT_FALSE(HloInstruction::IndexFits(int64_t{INT32_MAX} + 1));
  EXPECT_FALSE(HloInstruction::IndexFits(int64_t{INT32_MIN} - 1));
}

// The largest parameter number and tuple index the parser takes read back
// as written.
TEST(PackedWordTest, LargestIndexRoundTrips) {
  auto module = ParseHloModule(
      "HloModule m\n"
      "ENTRY e {\n"
      "  t = (f32[]) parameter(2147483647)\n"
      "  ROOT g = f32[] get-tuple-element(t), index=2147483647\n"
      "}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  const HloInstruction* g = (*module)->entry_computation()->root_instruction();
  EXPECT_EQ(g->tuple_index(), 2147483647);
  EXPECT_EQ(g->operand(0)->parameter_number(), 2147483647);
}

// A computation made in an arena: its memory and a long name there, a
// short one inline; renamed by the module when its name is taken; deleted
// as one whether in the arena or on the heap.
TEST(ComputationInArenaTest, NamesAndDeletion) {
  HloModule module("m");
  InstructionArena& arena = module.instruction_arena();
  HloComputation* a = module.AddComputation(HloComputation::CreateInArena(arena, "c"));
  HloComputation* b = module.AddComputation(HloComputation::CreateInArena(arena, "c"));
  HloComputation* long_name = module.AddComputation(
      HloComputation::CreateInArena(arena, "a_computation_with_a_long_name"));
  HloComputation* heap = module.AddComputation(std::make_unique<HloComputation>("c"));
  EXPECT_EQ(a->name(), "c");
  EXPECT_EQ(b->name(), "c.1");
  EXPECT_EQ(heap->name(), "c.2");
  EXPECT_EQ(long_name->name(), "a_computation_with_a_long_name");
  EXPECT_TRUE(InArena(arena, a));
  EXPECT_TRUE(InArena(arena, long_name));
  EXPECT_TRUE(InArena(arena, long_name->name().data()));
  EXPECT_FALSE(InArena(arena, heap));
  EXPECT_EQ(module.GetComputationWithName("c.1"), b);
  module.RemoveComputation(b);
  module.RemoveComputation(heap);
  EXPECT_EQ(module.GetComputationWithName("c.1"), nullptr);
  EXPECT_EQ(module.computation_count(), 2);
  // Never added: deleted by its unique_ptr.
  HloComputation::CreateInArena(arena, "an_unadded_computation_with_a_long_name").reset();
}

// The parser makes its computations in the module's arena.
TEST(ComputationInArenaTest, ParsedComputationsLiveInTheArena) {
  auto module = ParseHloModule(
      "HloModule m\n"
      "add_with_a_long_name {\n"
      "  a = f32[] parameter(0)\n"
      "  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n"
      "}\n"
      "ENTRY e {\n"
      "  x = f32[] parameter(0)\n"
      "  ROOT c = f32[] call(x, x), to_apply=add_with_a_long_name\n"
      "}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  for (const HloComputation* comp : (*module)->computations()) {
    EXPECT_TRUE(InArena((*module)->instruction_arena(), comp)) << comp->name();
  }
  const HloComputation* add = (*module)->GetComputationWithName("add_with_a_long_name");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(InArena((*module)->instruction_arena(), add->name().data()));
}

// A call's called computations are a block of their own until the
// instruction gets dimensions or raw attributes, which move them into the
// whole group (HloInstruction::CommonGroup).
TEST(CommonGroupTest, TheCalledListAloneThenInTheGroup) {
  HloModule module("m");
  HloComputation* add = module.AddComputation(std::make_unique<HloComputation>("add"));
  HloComputation* body = module.AddComputation(std::make_unique<HloComputation>("body"));
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});
  auto call = HloInstruction::Create(HloOpcode::kCall, scalar);
  call->SetCalledComputations("to_apply", {add});
  EXPECT_EQ(call->to_apply(), add);
  EXPECT_TRUE(call->raw_attributes().empty());
  EXPECT_FALSE(call->dimensions().has_value());
  EXPECT_FALSE(call->RemoveRawAttribute("is_stable"));
  call->SetRawAttribute("is_stable", "true");
  EXPECT_EQ(call->to_apply(), add);
  ASSERT_NE(call->raw_attribute("is_stable"), nullptr);
  call->set_dimensions({0});
  call->mutable_called_computation_attributes()->push_back({AttributeName("body"), {body}, true});
  ASSERT_EQ(call->called_computation_attributes().size(), 2u);
  EXPECT_EQ(call->to_apply(), add);
  EXPECT_EQ(call->while_body(), body);
  EXPECT_TRUE(call->called_computation_attributes()[1].braced);
  EXPECT_EQ(call->dimensions(), std::vector<int64_t>{0});
  EXPECT_TRUE(call->RemoveRawAttribute("is_stable"));

  // Dimensions first: the group from the start.
  auto reduce = HloInstruction::Create(HloOpcode::kReduce, scalar);
  reduce->set_dimensions({1});
  reduce->SetCalledComputations("to_apply", {add});
  EXPECT_EQ(reduce->to_apply(), add);
  EXPECT_EQ(reduce->dimensions(), std::vector<int64_t>{1});
  // Deleted with the list alone.
  auto alone = HloInstruction::Create(HloOpcode::kCall, scalar);
  alone->SetCalledComputations("to_apply", {add});
  alone.reset();
}

// The list alone is the point: 48 bytes of heap a call where the whole
// group took 112 (glibc's accounting; a sanitizer's allocator has its own).
TEST(CommonGroupTest, ACallsCalledListAloneIsSmall) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "glibc's heap accounting";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "glibc's heap accounting";
#endif
#endif
  HloModule module("m");
  HloComputation* add = module.AddComputation(std::make_unique<HloComputation>("add"));
  constexpr size_t kCalls = 1000;
  std::vector<std::unique_ptr<HloInstruction>> calls;
  for (size_t i = 0; i < kCalls; ++i) {
    calls.push_back(HloInstruction::Create(HloOpcode::kCall, Shape::MakeArray(PrimitiveType::F32, {})));
  }
  const size_t before = mallinfo2().uordblks;
  for (auto& call : calls) call->SetCalledComputations("to_apply", {add});
  const size_t per_call = (mallinfo2().uordblks - before) / kCalls;
  EXPECT_LE(per_call, 64u);
}

}  // namespace
}  // namespace hilo
