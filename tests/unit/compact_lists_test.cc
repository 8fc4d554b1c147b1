// The instruction's compact members: PointerList (operands and users, two
// inline, then a tagged heap array) and InstructionName (15 characters
// inline, then the heap or the module's arena) and the common group
// (a call's called computations alone, then the whole group). Under
// AddressSanitizer a leaked or doubly freed array, name or group fails the
// test run.
#include <malloc.h>

#include <algorithm>
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
#include "hilo/ir/compact_string.h"
#include "hilo/ir/instruction_name.h"
#include "hilo/ir/order_and_metadata.h"
#include "hilo/ir/pointer_list.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/wire_split.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "hilo/text/text_flags.h"

namespace hilo {
namespace {

struct Node {
  int value;
};

template <typename List>  // PointerList<Node> or SmallPointerList<Node>
std::vector<int> Values(const List& list) {
  std::vector<int> values;
  for (Node* node : list) values.push_back(node->value);
  return values;
}

// span() and empty() decode the words their own way (once, and without the
// size): they must agree with data(), size() and size() == 0 in every state
// of `List`, the heap form emptied by pop_back included; it then has
// `heap_capacity` left.
template <typename List>
void CheckSpanAndEmptyAgree(size_t heap_capacity) {
  Node nodes[5] = {{0}, {1}, {2}, {3}, {4}};
  List list;
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
  EXPECT_EQ(list.capacity(), heap_capacity);  // still on the heap, and empty
  list.push_back(&nodes[2]);
  check();
  EXPECT_EQ(Values(list), (std::vector<int>{2}));
}

TEST(PointerListTest, SixteenBytes) { EXPECT_EQ(sizeof(PointerList<Node>), 16u); }

// Ten elements pushed to a `List` that keeps `inline_capacity` inline: in
// order through every form, 16 of room at the end (doubling), and inline
// again once cleared.
template <typename List>
void CheckInlineThenHeap(size_t inline_capacity) {
  Node nodes[10];
  for (int i = 0; i < 10; ++i) nodes[i].value = i;
  List list;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.size(), 0u);
  EXPECT_EQ(list.begin(), list.end());
  EXPECT_EQ(list.capacity(), inline_capacity);
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
  EXPECT_EQ(list.capacity(), 16u);
  EXPECT_EQ(list[7], &nodes[7]);
  list[7] = &nodes[0];
  EXPECT_EQ(list[7]->value, 0);
  list.clear();
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.capacity(), inline_capacity);
  // An inline element written through operator[].
  list.push_back(&nodes[3]);
  list[0] = &nodes[4];
  EXPECT_EQ(Values(list), (std::vector<int>{4}));
}

TEST(PointerListTest, InlineThenHeapKeepsOrder) { CheckInlineThenHeap<PointerList<Node>>(2); }

TEST(PointerListTest, SpanAndEmptyAgreeWithDataAndSize) {
  CheckSpanAndEmptyAgree<PointerList<Node>>(8);
  Node nodes[2] = {{0}, {1}};
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

// A module with two empty computations for calls to name, and a scalar
// shape for the calling instructions (the common-group tests' set-up).
struct CallTargets : ::testing::Test {
  HloModule module{"m"};
  HloComputation* add = module.AddComputation(std::make_unique<HloComputation>("add"));
  HloComputation* body = module.AddComputation(std::make_unique<HloComputation>("body"));
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});
};

// A call's called computations are a block of their own until the
// instruction gets dimensions or raw attributes, which move them into the
// whole group (HloInstruction::CommonGroup).
using CommonGroupCallTest = CallTargets;
TEST_F(CommonGroupCallTest, TheCalledListAloneThenInTheGroup) {
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
  call->AddCalledComputations("body", {body}, true);
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
  // Braced: a list, alone.
  size_t before = mallinfo2().uordblks;
  for (auto& call : calls) call->SetCalledComputations("to_apply", {add}, /*braced=*/true);
  const size_t per_call = (mallinfo2().uordblks - before) / kCalls;
  EXPECT_LE(per_call, 64u);
  EXPECT_NE(calls[0]->called_list_block(), nullptr);
  // Unbraced: inline, no heap at all (the lists above are freed).
  for (auto& call : calls) call->ClearCalledComputations();
  calls.clear();
  for (size_t i = 0; i < kCalls; ++i) {
    calls.push_back(HloInstruction::Create(HloOpcode::kCall, Shape::MakeArray(PrimitiveType::F32, {})));
  }
  before = mallinfo2().uordblks;
  for (auto& call : calls) call->SetCalledComputations("to_apply", {add});
  EXPECT_EQ(mallinfo2().uordblks, before);
  EXPECT_EQ(calls[0]->called_list_block(), nullptr);
  EXPECT_EQ(calls[kCalls - 1]->to_apply(), add);
}

// The entry's instruction `name` (a test failure and nullptr if none).
HloInstruction* FindInEntry(const HloModule& module, absl::string_view name) {
  for (HloInstruction* inst : module.entry_computation()->instructions()) {
    if (inst->name() == name) return inst;
  }
  ADD_FAILURE() << name;
  return nullptr;
}

// A single called computation kept inside the instruction
// (HloInstruction::CommonGroup's inline form): read as a one-element list,
// replaced in place, turned into a list by a second attribute, a braced or a
// null one, moved into the group by dimensions, cleared.
// The users' list: one word, one element inline, then a heap block whose
// header holds the size and the capacity.
TEST(SmallPointerListTest, EightBytesOneInlineThenHeapKeepsOrder) {
  EXPECT_EQ(sizeof(SmallPointerList<Node>), 8u);
  CheckInlineThenHeap<SmallPointerList<Node>>(1);
}

TEST(SmallPointerListTest, SpanAndEmptyAgreeWithDataAndSize) {
  CheckSpanAndEmptyAgree<SmallPointerList<Node>>(8);
}

// An arena's blocks (push_back with an arena): blocks of up to
// kArenaCapacity elements come from it and are never freed by the list,
// larger ones from the heap; the order holds across both, and a copy is on
// the heap.
// (Its storage is one buffer: Holds says whether a block is its.)
struct CountingArena {
  CountingArena() { sizes.reserve(16); }
  void* Allocate(size_t size, size_t alignment) {
    EXPECT_EQ(alignment, alignof(Node*));
    EXPECT_LE(used + size, sizeof(buffer));
    sizes.push_back(size);
    void* block = buffer + used;
    used += (size + 7) / 8 * 8;
    return block;
  }
  bool Holds(const void* p) const {
    const auto* byte = static_cast<const unsigned char*>(p);
    return byte >= buffer && byte < buffer + sizeof(buffer);
  }
  std::vector<size_t> sizes;
  alignas(8) unsigned char buffer[1024];
  size_t used = 0;
};

TEST(SmallPointerListTest, SmallBlocksFromAnArenaLargerFromTheHeap) {
  constexpr size_t kArenaCapacity = SmallPointerList<Node>::kArenaCapacity;
  std::vector<Node> nodes(40);
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].value = static_cast<int>(i);
  CountingArena arena;
  std::vector<int> expected;
  expected.reserve(nodes.size());
  {
    SmallPointerList<Node> list;
    for (size_t i = 0; i <= kArenaCapacity; ++i) {
      list.push_back(&nodes[i], [&] { return &arena; });
      expected.push_back(static_cast<int>(i));
      if (i >= 1) {
        EXPECT_EQ(arena.Holds(list.data()), i < kArenaCapacity) << i;
      }
    }
    // Blocks of 2, 4, 8, 16 from the arena (header and elements), the 32
    // from the heap.
    EXPECT_EQ(arena.sizes, (std::vector<size_t>{24, 40, 72, 136}));
    EXPECT_EQ(Values(list), expected);
    for (size_t i = kArenaCapacity + 1; i < nodes.size(); ++i) {
      list.push_back(&nodes[i], [&] { return &arena; });
      expected.push_back(static_cast<int>(i));
    }
    EXPECT_EQ(arena.sizes.size(), 4u);
    EXPECT_EQ(Values(list), expected);
    SmallPointerList<Node> copy = list;
    EXPECT_FALSE(arena.Holds(copy.data()));
    EXPECT_EQ(Values(copy), expected);
  }
  {
    // Left in an arena block: destroyed without freeing it (a free of the
    // arena's buffer would abort).
    SmallPointerList<Node> small;
    for (size_t i = 0; i < 3; ++i) small.push_back(&nodes[i], [&] { return &arena; });
    EXPECT_TRUE(arena.Holds(small.data()));
    EXPECT_EQ(Values(small), (std::vector<int>{0, 1, 2}));
    small.erase(small.begin());
    EXPECT_EQ(Values(small), (std::vector<int>{1, 2}));
    // No arena: the heap, as push_back(value).
    SmallPointerList<Node> heap;
    const size_t before = arena.sizes.size();
    for (size_t i = 0; i < 3; ++i) {
      heap.push_back(&nodes[i], [] { return static_cast<CountingArena*>(nullptr); });
    }
    EXPECT_EQ(arena.sizes.size(), before);
    EXPECT_FALSE(arena.Holds(heap.data()));
    EXPECT_EQ(Values(heap), (std::vector<int>{0, 1, 2}));
  }
}

TEST(SmallPointerListTest, EraseReserveCopyAndMoveInBothForms) {
  Node nodes[4] = {{0}, {1}, {2}, {3}};
  SmallPointerList<Node> one;
  one.push_back(&nodes[0]);
  one.erase(one.begin());
  EXPECT_TRUE(one.empty());
  one.push_back(&nodes[1]);
  one.pop_back();
  EXPECT_TRUE(one.empty());
  EXPECT_EQ(one.capacity(), 1u);  // never left the word

  SmallPointerList<Node> big;
  for (Node& node : nodes) big.push_back(&node);
  big.erase(big.begin() + 1);
  EXPECT_EQ(Values(big), (std::vector<int>{0, 2, 3}));
  big.erase(big.end() - 1);
  EXPECT_EQ(Values(big), (std::vector<int>{0, 2}));

  SmallPointerList<Node> reserved;
  reserved.reserve(1);
  EXPECT_EQ(reserved.capacity(), 1u);
  reserved.push_back(&nodes[3]);
  reserved.reserve(5);  // the inline element moves to the block
  EXPECT_EQ(reserved.capacity(), 5u);
  EXPECT_EQ(Values(reserved), (std::vector<int>{3}));

  SmallPointerList<Node> copy(big);
  EXPECT_EQ(Values(copy), (std::vector<int>{0, 2}));
  SmallPointerList<Node> moved(std::move(copy));
  EXPECT_EQ(Values(moved), (std::vector<int>{0, 2}));
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): defined as empty
  SmallPointerList<Node> single;
  single.push_back(&nodes[1]);
  moved = single;  // a heap list assigned one element
  EXPECT_EQ(Values(moved), (std::vector<int>{1}));
  single = std::move(big);
  EXPECT_EQ(Values(single), (std::vector<int>{0, 2}));
  SmallPointerList<Node> inline_copy(moved);
  EXPECT_EQ(Values(inline_copy), (std::vector<int>{1}));
  EXPECT_EQ(inline_copy.capacity(), 1u);
}

// An instruction's users through the IR: none, one (inline), two and many
// (the heap block, and past 16 the position index), each user once, order
// kept, removal in both forms.
TEST(SmallPointerListTest, AnInstructionsUsersInEveryForm) {
  HloComputation comp("c");
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});
  HloInstruction* x = comp.AddInstruction(HloInstruction::CreateParameter(0, scalar, "x"));
  EXPECT_TRUE(x->users().empty());
  std::vector<HloInstruction*> users;
  for (int i = 0; i < 40; ++i) {
    auto add = HloInstruction::Create(HloOpcode::kAdd, scalar, {x, x});
    users.push_back(comp.AddInstruction(std::move(add)));
    ASSERT_EQ(x->user_count(), i + 1);
    ASSERT_EQ(std::vector<HloInstruction*>(x->users().begin(), x->users().end()), users);
    ASSERT_EQ(users.back()->user_count(), 0);
  }
  // Removed from the middle and the end: each user's edge goes with it.
  ASSERT_TRUE(comp.RemoveInstruction(users[5]).ok());
  ASSERT_TRUE(comp.RemoveInstruction(users.back()).ok());
  EXPECT_EQ(x->user_count(), 38);
  for (HloInstruction* user : x->users()) {
    EXPECT_NE(user, users[5]);
    EXPECT_NE(user, users.back());
  }
  // One user, inline, replaced by another.
  HloInstruction* y = comp.AddInstruction(HloInstruction::CreateParameter(1, scalar, "y"));
  HloInstruction* neg =
      comp.AddInstruction(HloInstruction::Create(HloOpcode::kNegate, scalar, {y}));
  ASSERT_EQ(y->user_count(), 1);
  EXPECT_EQ(y->users()[0], neg);
  neg->ReplaceOperandWith(0, x);
  EXPECT_TRUE(y->users().empty());
  EXPECT_EQ(x->users().back(), neg);
}

// A value with many users whose users have few operands: AddUser tells a
// repeated edge from the user's own operands and builds no position index
// while users are only added (HILO_USER_INDEX_LAZY); the first removal
// builds it. Every edge stays single through AppendOperand,
// ReplaceOperandWith and ReplaceOperandWithAll, with the index and without.
TEST(UserIndexTest, ManyUsersNoIndexUntilARemoval) {
  HloComputation comp("c");
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});
  HloInstruction* x = comp.AddInstruction(HloInstruction::CreateParameter(0, scalar, "x"));
  HloInstruction* y = comp.AddInstruction(HloInstruction::CreateParameter(1, scalar, "y"));
  constexpr int kUsers = 20000;
  std::vector<HloInstruction*> users;
  for (int i = 0; i < kUsers; ++i) {
    users.push_back(comp.AddInstruction(HloInstruction::Create(HloOpcode::kAdd, scalar, {})));
  }
  // The heap taken by the edges alone: the users' list (32,768 slots of 8
  // bytes) and, with an index, 32,768 slots of 5 bytes more.
  const struct mallinfo2 before = mallinfo2();
  for (HloInstruction* u : users) {
    u->AppendOperand(x);
    u->AppendOperand(x);
  }
  const struct mallinfo2 after = mallinfo2();
  const size_t taken = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
  EXPECT_LT(taken, size_t{32768} * 8 + (size_t{64} << 10)) << "a position index was built";
  ASSERT_EQ(x->user_count(), kUsers);
  EXPECT_EQ(std::vector<HloInstruction*>(x->users().begin(), x->users().end()), users);
  // A replaced operand slot: still one edge each way.
  users[0]->ReplaceOperandWith(0, y);
  EXPECT_EQ(x->user_count(), kUsers);  // users[0] still reads x in slot 1
  EXPECT_EQ(y->user_count(), 1);
  users[0]->ReplaceOperandWith(1, y);  // y in both slots: no second edge
  EXPECT_EQ(x->user_count(), kUsers - 1);
  EXPECT_EQ(y->user_count(), 1);
  // Both slots of users[1] replaced at once, then back.
  users[1]->ReplaceOperandWithAll(x, y);
  EXPECT_EQ(x->user_count(), kUsers - 2);
  EXPECT_EQ(y->user_count(), 2);
  users[1]->ReplaceOperandWithAll(y, x);
  EXPECT_EQ(x->user_count(), kUsers - 1);
  EXPECT_EQ(y->user_count(), 1);
  // users[2] reads x and y; replacing x by y leaves one edge to y.
  users[2]->ReplaceOperandWith(0, y);
  EXPECT_EQ(y->user_count(), 2);
  users[2]->ReplaceOperandWithAll(x, y);
  EXPECT_EQ(y->user_count(), 2);
  EXPECT_EQ(x->user_count(), kUsers - 2);
  // Removals (the index is built by the first), then more users added.
  for (int i = 3; i < kUsers; i += 2) ASSERT_TRUE(comp.RemoveInstruction(users[i]).ok());
  const int left = kUsers - 2 - (kUsers - 3 + 1) / 2;
  EXPECT_EQ(x->user_count(), left);
  for (int i = 0; i < 100; ++i) {
    HloInstruction* u = comp.AddInstruction(HloInstruction::Create(HloOpcode::kAdd, scalar, {x, x}));
    ASSERT_EQ(x->users().back(), u);
    u->ReplaceOperandWith(1, x);  // the same operand: nothing changes
  }
  EXPECT_EQ(x->user_count(), left + 100);
  std::vector<HloInstruction*> seen(x->users().begin(), x->users().end());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  for (HloInstruction* u : seen) EXPECT_TRUE(u->IsUserOf(x));
}

// The common group's word and the uncommon block share one word: the
// block, once made, holds the common word, which every form of the common
// group keeps across (inline call, list alone, the group), in both orders,
// on the heap and in the arena, and the instruction dies either way.
using UncommonWordCallTest = CallTargets;
TEST_F(UncommonWordCallTest, CommonAttributesSurviveTheUncommonBlock) {
  EXPECT_EQ(sizeof(HloInstruction), 88u);

  // Inline call, then a collective group: the call stays inline.
  auto call = HloInstruction::Create(HloOpcode::kCall, scalar);
  call->SetCalledComputations("to_apply", {add});
  EXPECT_FALSE(call->has_uncommon_block());
  call->set_channel_id(3);
  EXPECT_TRUE(call->has_uncommon_block());
  EXPECT_EQ(call->channel_id(), 3);
  EXPECT_EQ(call->called_list_block(), nullptr);
  EXPECT_EQ(call->to_apply(), add);
  // Changed after the block exists: a second attribute, dimensions, raw.
  call->SetCalledComputations("body", {body});
  EXPECT_NE(call->called_list_block(), nullptr);
  EXPECT_EQ(call->to_apply(), add);
  EXPECT_EQ(call->while_body(), body);
  call->set_dimensions({0, 1});
  call->SetRawAttribute("is_stable", "true");
  EXPECT_EQ(call->dimensions(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(*call->raw_attribute("is_stable"), "true");
  EXPECT_EQ(call->channel_id(), 3);
  EXPECT_EQ(call->attribute_groups(), HloInstruction::kCollectiveGroup);
  call->ClearCalledComputations();
  EXPECT_TRUE(call->called_computations().empty());
  EXPECT_EQ(call->dimensions(), (std::vector<int64_t>{0, 1}));

  // The uncommon block first, then each common form.
  auto reduce = HloInstruction::Create(HloOpcode::kReduce, scalar);
  reduce->mutable_frontend_attributes()->Set("k", "v");
  EXPECT_TRUE(reduce->dimensions() == std::nullopt);
  EXPECT_TRUE(reduce->called_computations().empty());
  reduce->SetCalledComputations("to_apply", {add});
  EXPECT_EQ(reduce->called_list_block(), nullptr);
  EXPECT_EQ(reduce->to_apply(), add);
  reduce->set_dimensions({1});
  EXPECT_EQ(reduce->to_apply(), add);
  EXPECT_EQ(reduce->dimensions(), std::vector<int64_t>{1});
  EXPECT_EQ(reduce->frontend_attributes().size(), 1u);
  EXPECT_EQ(reduce->attribute_groups(), HloInstruction::kFrontendGroup);

  // Neither: no block, every group at its default.
  auto plain = HloInstruction::Create(HloOpcode::kAdd, scalar);
  EXPECT_FALSE(plain->has_uncommon_block());
  EXPECT_EQ(plain->attribute_groups(), 0u);
  EXPECT_TRUE(plain->raw_attributes().empty());
  call.reset();
  reduce.reset();
}

// Parsed: the groups in the module's arena, a call with a channel and a
// control edge printed back, reparsed and through the proto unchanged.
TEST(UncommonWordTest, ParsedInstructionsWithBothGroupsRoundTrip) {
  constexpr absl::string_view kText = R"(HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[8] parameter(0)
  k = f32[8] all-reduce(p), channel_id=2, replica_groups={}, to_apply=add
  r = f32[] reduce(k, c), dimensions={0}, to_apply=add, frontend_attributes={x="y"}
  c = f32[] constant(0)
  ROOT t = (f32[8], f32[]) tuple(k, r), control-predecessors={c}
}
)";
  auto parsed = ParseHloModule(kText);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto check = [](const HloModule& m) {
    const HloInstruction* k = FindInEntry(m, "k");
    const HloInstruction* r = FindInEntry(m, "r");
    ASSERT_TRUE(k != nullptr && r != nullptr);
    EXPECT_TRUE(k->has_uncommon_block());
    EXPECT_EQ(k->channel_id(), 2);
    EXPECT_EQ(k->to_apply(), m.GetComputationWithName("add"));
    EXPECT_EQ(r->to_apply(), m.GetComputationWithName("add"));
    EXPECT_EQ(r->dimensions(), std::vector<int64_t>{0});
    EXPECT_EQ(r->frontend_attributes().size(), 1u);
    EXPECT_EQ(FindInEntry(m, "t")->control_predecessors().size(), 1u);
    EXPECT_EQ(FindInEntry(m, "c")->control_successors().size(), 1u);
  };
  check(**parsed);
  const std::string text = PrintHloModule(**parsed);
  auto reparsed = ParseHloModule(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  check(**reparsed);
  EXPECT_EQ(PrintHloModule(**reparsed), text);
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**parsed);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto read = HloModuleFromBytes(*bytes, DefaultProtoRecursionBudget());
  ASSERT_TRUE(read.ok()) << read.status();
  check(**read);
  EXPECT_EQ(PrintHloModule(**read), text);
  // An arena instruction with both groups removed (its block's destructor
  // runs, the arena keeps the memory), then the module dies.
  HloComputation* entry = (*parsed)->entry_computation();
  HloInstruction* k = FindInEntry(**parsed, "k");
  HloInstruction* r = FindInEntry(**parsed, "r");
  r->ReplaceOperandWith(0, FindInEntry(**parsed, "p"));
  FindInEntry(**parsed, "t")->ReplaceOperandWith(0, FindInEntry(**parsed, "p"));
  EXPECT_TRUE(k->users().empty());
  ASSERT_TRUE(entry->RemoveInstruction(k).ok());
  EXPECT_EQ(k->parent(), nullptr);
  parsed->reset();
}

// A computation's parameters in a PointerList: inline while numbered
// 0, 1, ... with no hole; a hole (a number added out of order, a removed
// parameter) moves them to the heap form, where an element may be null.
TEST(ParameterListTest, HolesOutOfOrderRemovalAndCopies) {
  EXPECT_EQ(sizeof(HloComputation), 88u);
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});
  HloComputation in_order("in_order");
  HloInstruction* a0 = in_order.AddInstruction(HloInstruction::CreateParameter(0, scalar, "a0"));
  HloInstruction* a1 = in_order.AddInstruction(HloInstruction::CreateParameter(1, scalar, "a1"));
  EXPECT_EQ(in_order.parameter_instructions().capacity(), 2u);  // inline
  EXPECT_EQ(std::vector<HloInstruction*>(in_order.parameter_instructions().begin(),
                                         in_order.parameter_instructions().end()),
            (std::vector<HloInstruction*>{a0, a1}));
  HloInstruction* a2 = in_order.AddInstruction(HloInstruction::CreateParameter(2, scalar, "a2"));
  EXPECT_EQ(in_order.num_parameters(), 3);
  EXPECT_EQ(in_order.parameter_instruction(2), a2);

  HloComputation holes("holes");
  HloInstruction* p1 = holes.AddInstruction(HloInstruction::CreateParameter(1, scalar, "p1"));
  EXPECT_EQ(holes.num_parameters(), 2);
  EXPECT_EQ(holes.parameter_instruction(0), nullptr);
  EXPECT_EQ(holes.parameter_instruction(1), p1);
  EXPECT_EQ(holes.parameter_instructions().size(), 2u);
  EXPECT_EQ(holes.parameter_instructions()[0], nullptr);
  // A copy keeps the hole.
  HloComputation::ParameterList copy(holes.parameter_instructions());
  ASSERT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy[0], nullptr);
  EXPECT_EQ(copy[1], p1);
  HloComputation::ParameterList assigned;
  assigned = holes.parameter_instructions();
  ASSERT_EQ(assigned.size(), 2u);
  EXPECT_EQ(assigned[0], nullptr);
  // The hole filled; a second parameter of one number is not listed.
  HloInstruction* p0 = holes.AddInstruction(HloInstruction::CreateParameter(0, scalar, "p0"));
  holes.AddInstruction(HloInstruction::CreateParameter(0, scalar, "again"));
  EXPECT_EQ(holes.num_parameters(), 2);
  EXPECT_EQ(holes.parameter_instruction(0), p0);
  // Removed: the count stays, the number yields nullptr.
  ASSERT_TRUE(in_order.RemoveInstruction(a1).ok());
  EXPECT_EQ(in_order.num_parameters(), 3);
  EXPECT_EQ(in_order.parameter_instruction(1), nullptr);
  EXPECT_EQ(in_order.parameter_instruction(0), a0);
  EXPECT_EQ(in_order.parameter_instruction(2), a2);
  HloComputation two("two");
  HloInstruction* b0 = two.AddInstruction(HloInstruction::CreateParameter(0, scalar, "b0"));
  HloInstruction* b1 = two.AddInstruction(HloInstruction::CreateParameter(1, scalar, "b1"));
  ASSERT_TRUE(two.RemoveInstruction(b0).ok());  // inline, the hole first
  EXPECT_EQ(two.num_parameters(), 2);
  EXPECT_EQ(two.parameter_instruction(0), nullptr);
  EXPECT_EQ(two.parameter_instruction(1), b1);
}

// The module and the extra block share a word: parent() is the module
// before and after the block is made, for a computation given its module
// before or after, and instructions removed (kept in the block) die with
// the computation.
TEST(ComputationWordTest, TheModuleSurvivesTheExtraBlock) {
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});
  HloModule module("m");
  HloComputation* before = module.AddComputation(std::make_unique<HloComputation>("before"));
  EXPECT_EQ(before->parent(), &module);
  EXPECT_TRUE(before->execution_thread().empty());
  before->set_execution_thread("host");
  EXPECT_EQ(before->parent(), &module);
  EXPECT_EQ(before->execution_thread(), "host");
  HloInstruction* p = before->AddInstruction(HloInstruction::CreateParameter(0, scalar, "p"));
  HloInstruction* neg = before->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, scalar, {p}));
  EXPECT_EQ(neg->parent(), before);
  EXPECT_TRUE(module.IsInstructionNameUsed("p"));
  ASSERT_TRUE(before->RemoveInstruction(neg).ok());  // kept in the block
  EXPECT_EQ(neg->parent(), nullptr);
  EXPECT_EQ(before->parent(), &module);

  // The block made before the computation joins a module.
  auto after_owned = std::make_unique<HloComputation>("after");
  after_owned->set_written_signature("(x: f32[]) -> f32[]", "(x: f32[]) -> f32[]");
  EXPECT_EQ(after_owned->parent(), nullptr);
  HloComputation* after = module.AddComputation(std::move(after_owned));
  EXPECT_EQ(after->parent(), &module);
  EXPECT_EQ(after->written_signature(), "(x: f32[]) -> f32[]");
  HloInstruction* q = after->AddInstruction(HloInstruction::CreateParameter(0, scalar, "q"));
  EXPECT_EQ(q->unique_id() >= 0, true);
  EXPECT_TRUE(module.IsInstructionNameUsed("q"));
  // Without a block: the word is the module.
  HloComputation* plain = module.AddComputation(std::make_unique<HloComputation>("plain"));
  EXPECT_EQ(plain->parent(), &module);
  EXPECT_TRUE(plain->written_signature().empty());
}

// Written out of order, printed back as written.
TEST(ParameterListTest, ParametersOutOfOrderRoundTrip) {
  constexpr absl::string_view kText = R"(HloModule m

ENTRY e {
  b = f32[] parameter(1)
  a = f32[] parameter(0)
  ROOT s = f32[] subtract(a, b)
}
)";
  auto parsed = ParseHloModule(kText);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const HloComputation* entry = (*parsed)->entry_computation();
  EXPECT_EQ(entry->parameter_instruction(0)->name(), "a");
  EXPECT_EQ(entry->parameter_instruction(1)->name(), "b");
  const std::string text = PrintHloModule(**parsed);
  EXPECT_NE(text.find("b = f32[] parameter(1)\n  a = f32[] parameter(0)"), std::string::npos) << text;
  auto reparsed = ParseHloModule(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(PrintHloModule(**reparsed), text);
}

TEST(CommonGroupTest, OneCalledComputationInline) {
  HloModule module("m");
  HloComputation* add = module.AddComputation(std::make_unique<HloComputation>("add"));
  HloComputation* mul = module.AddComputation(std::make_unique<HloComputation>("mul"));
  HloComputation* body = module.AddComputation(std::make_unique<HloComputation>("body"));
  const Shape scalar = Shape::MakeArray(PrimitiveType::F32, {});

  // Set: inline, read through every accessor.
  auto call = HloInstruction::Create(HloOpcode::kCall, scalar);
  EXPECT_TRUE(call->called_computation_attributes().empty());
  call->SetCalledComputations("to_apply", {add});
  EXPECT_EQ(call->called_list_block(), nullptr);
  ASSERT_EQ(call->called_computation_attributes().size(), 1u);
  const CalledAttributeView view = call->called_computation_attributes()[0];
  EXPECT_EQ(view.name, "to_apply");
  EXPECT_FALSE(view.braced);
  ASSERT_EQ(view.computations.size(), 1u);
  EXPECT_EQ(view.computations[0], add);
  EXPECT_EQ(call->to_apply(), add);
  EXPECT_EQ(call->called_computations(), std::vector<HloComputation*>{add});
  EXPECT_TRUE(call->called_computations("calls").empty());
  size_t seen = 0;
  for (const CalledAttributeView& attr : call->called_computation_attributes()) {
    EXPECT_EQ(attr.computations[0], add);
    ++seen;
  }
  EXPECT_EQ(seen, 1u);

  // Replace: still inline.
  call->SetCalledComputations("to_apply", {mul});
  EXPECT_EQ(call->called_list_block(), nullptr);
  EXPECT_EQ(call->to_apply(), mul);

  // A second attribute: both in a list, the inline one first.
  call->SetCalledComputations("body", {body});
  EXPECT_NE(call->called_list_block(), nullptr);
  ASSERT_EQ(call->called_computation_attributes().size(), 2u);
  EXPECT_EQ(call->called_computation_attributes()[0].name, "to_apply");
  EXPECT_EQ(call->to_apply(), mul);
  EXPECT_EQ(call->while_body(), body);
  EXPECT_EQ(call->called_computations(), (std::vector<HloComputation*>{mul, body}));

  // Another name, braced, two computations, a null one: each a list.
  auto fusion = HloInstruction::Create(HloOpcode::kFusion, scalar);
  fusion->SetCalledComputations("calls", {add});
  EXPECT_EQ(fusion->called_list_block(), nullptr);
  EXPECT_EQ(fusion->called_computation_attributes()[0].name, "calls");
  fusion->SetCalledComputations("calls", {add}, /*braced=*/true);
  EXPECT_NE(fusion->called_list_block(), nullptr);
  EXPECT_TRUE(fusion->called_computation_attributes()[0].braced);
  auto other_name = HloInstruction::Create(HloOpcode::kCall, scalar);
  other_name->SetCalledComputations("calls", {add});
  EXPECT_NE(other_name->called_list_block(), nullptr);
  EXPECT_EQ(other_name->called_computation("calls"), add);
  auto two = HloInstruction::Create(HloOpcode::kCustomCall, scalar);
  two->SetCalledComputations("to_apply", {add, mul});
  EXPECT_NE(two->called_list_block(), nullptr);
  EXPECT_EQ(two->called_computations("to_apply").size(), 2u);
  auto null = HloInstruction::Create(HloOpcode::kCall, scalar);
  null->SetCalledComputations("to_apply", {nullptr});
  EXPECT_NE(null->called_list_block(), nullptr);
  ASSERT_EQ(null->called_computations("to_apply").size(), 1u);
  EXPECT_EQ(null->called_computations("to_apply")[0], nullptr);

  // Append (the proto reader's way) on an inline one keeps both, even of one name.
  auto appended = HloInstruction::Create(HloOpcode::kCall, scalar);
  appended->AddCalledComputations("to_apply", {add});
  EXPECT_EQ(appended->called_list_block(), nullptr);
  appended->AddCalledComputations("to_apply", {mul});
  ASSERT_EQ(appended->called_computation_attributes().size(), 2u);
  EXPECT_EQ(appended->called_computation_attributes()[1].computations[0], mul);

  // Dimensions then raw attributes after an inline computation: moved into the group.
  auto reduce = HloInstruction::Create(HloOpcode::kReduce, scalar);
  reduce->SetCalledComputations("to_apply", {add});
  EXPECT_EQ(reduce->called_list_block(), nullptr);
  reduce->set_dimensions({0});
  EXPECT_NE(reduce->called_list_block(), nullptr);
  EXPECT_EQ(reduce->to_apply(), add);
  EXPECT_EQ(reduce->dimensions(), std::vector<int64_t>{0});
  auto sorted = HloInstruction::Create(HloOpcode::kSort, scalar);
  sorted->SetCalledComputations("to_apply", {mul});
  sorted->SetRawAttribute("is_stable", "true");
  EXPECT_EQ(sorted->to_apply(), mul);
  ASSERT_NE(sorted->raw_attribute("is_stable"), nullptr);

  // Clear: none, then inline again.
  call->ClearCalledComputations();
  EXPECT_TRUE(call->called_computation_attributes().empty());
  auto cleared = HloInstruction::Create(HloOpcode::kCall, scalar);
  cleared->SetCalledComputations("to_apply", {add});
  cleared->ClearCalledComputations();
  EXPECT_TRUE(cleared->called_computation_attributes().empty());
  EXPECT_EQ(cleared->to_apply(), nullptr);
  cleared->SetCalledComputations("to_apply", {mul});
  EXPECT_EQ(cleared->to_apply(), mul);
  EXPECT_EQ(cleared->called_list_block(), nullptr);
}

// Inline and listed called computations side by side, through the printer
// and the proto: a call (one computation, inline) next to a while (two
// attributes), a conditional (braced), a fusion (`calls` beside `kind`), a reduce
// (with dimensions, the group) and a custom call whose `to_apply` is braced.
constexpr absl::string_view kCallsModule =
    "HloModule m\n"
    "add {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "cond {\n"
    "  p = f32[] parameter(0)\n"
    "  ROOT l = pred[] compare(p, p), direction=LT\n"
    "}\n"
    "body {\n"
    "  p = f32[] parameter(0)\n"
    "  ROOT n = f32[] negate(p)\n"
    "}\n"
    "fused {\n"
    "  p = f32[] parameter(0)\n"
    "  ROOT n = f32[] negate(p)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[] parameter(0)\n"
    "  v = f32[4]{0} parameter(1)\n"
    "  i = s32[] parameter(2)\n"
    "  k = f32[] call(x, x), to_apply=add\n"
    "  w = f32[] while(k), condition=cond, body=body\n"
    "  f = f32[] fusion(w), kind=kLoop, calls=fused\n"
    "  z = f32[] constant(0)\n"
    "  r = f32[] reduce(v, z), dimensions={0}, to_apply=add\n"
    "  br = f32[] conditional(i, f, r), branch_computations={body, body}\n"
    "  ROOT cc = f32[] custom-call(br, k), custom_call_target=\"t\", to_apply={add}\n"
    "}\n";

TEST(CommonGroupTest, InlineAndListedCallsPrintAndRoundTrip) {
  auto parsed = ParseHloModule(kCallsModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  HloModule& module = **parsed;
  auto find = FindInEntry;
  auto check = [&](const HloModule& m) {
    EXPECT_EQ(find(m, "k")->called_list_block(), nullptr);
    EXPECT_EQ(find(m, "k")->to_apply(), m.GetComputationWithName("add"));
    // `kind=` is a raw attribute: the fusion's `calls` is in the group.
    EXPECT_NE(find(m, "f")->called_list_block(), nullptr);
    EXPECT_EQ(find(m, "f")->called_computation("calls"), m.GetComputationWithName("fused"));
    EXPECT_NE(find(m, "w")->called_list_block(), nullptr);
    EXPECT_EQ(find(m, "w")->while_body(), m.GetComputationWithName("body"));
    EXPECT_EQ(find(m, "w")->while_condition(), m.GetComputationWithName("cond"));
    EXPECT_NE(find(m, "r")->called_list_block(), nullptr);
    EXPECT_EQ(find(m, "br")->called_computations("branch_computations").size(), 2u);
    EXPECT_NE(find(m, "cc")->called_list_block(), nullptr);
    EXPECT_TRUE(find(m, "cc")->called_computation_attributes()[0].braced);
  };
  check(module);
  const std::string text = PrintHloModule(module);
  EXPECT_NE(text.find("to_apply=add\n"), std::string::npos) << text;
  EXPECT_NE(text.find("calls=fused"), std::string::npos) << text;
  EXPECT_NE(text.find("to_apply={add}"), std::string::npos) << text;
  EXPECT_NE(text.find("condition=cond, body=body"), std::string::npos) << text;
  auto reparsed = ParseHloModule(text);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  check(**reparsed);
  EXPECT_EQ(PrintHloModule(**reparsed), text);
  absl::StatusOr<std::string> bytes = HloModuleToBytes(module);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto read = HloModuleFromBytes(*bytes, DefaultProtoRecursionBudget());
  ASSERT_TRUE(read.ok()) << read.status();
  check(**read);
  EXPECT_EQ(PrintHloModule(**read), text);
}

// HILO_CALLED_INLINE=0: a call's one computation in a list block, printed
// the same.
TEST(CommonGroupDeathTest, TheSwitchKeepsTheCallInAList) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("HILO_CALLED_INLINE", "0", 1);
        auto parsed = ParseHloModule(kCallsModule);
        if (!parsed.ok()) std::exit(2);
        bool listed = true;
        for (const HloInstruction* inst : (*parsed)->entry_computation()->instructions()) {
          if (inst->name() == "k") listed = inst->called_list_block() != nullptr && inst->to_apply() != nullptr;
        }
        std::string again = PrintHloModule(**ParseHloModule(PrintHloModule(**parsed)));
        std::exit(listed && again == PrintHloModule(**parsed) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A CompactString's text in an arena: read as any, replaced (the arena
// block is not freed, a heap one is), moved, and empty again.
TEST(CompactStringTest, TextInTheArena) {
  InstructionArena arena;
  CompactString text;
  text.AssignInArena("op_name=\"model/layers.0/attn\"", arena);
  EXPECT_EQ(text.view(), "op_name=\"model/layers.0/attn\"");
  EXPECT_TRUE(InArena(arena, text.view().data()));
  CompactString moved = std::move(text);
  EXPECT_TRUE(text.empty());
  EXPECT_EQ(moved.view(), "op_name=\"model/layers.0/attn\"");
  CompactString copy = moved;  // a copy is the copy's own, on the heap
  EXPECT_FALSE(InArena(arena, copy.view().data()));
  moved.Assign("on the heap now");
  EXPECT_EQ(moved.view(), "on the heap now");
  moved.AssignInArena("back in the arena", arena);
  EXPECT_EQ(moved.view(), "back in the arena");
  moved.AssignInArena("", arena);
  EXPECT_TRUE(moved.empty());
  copy = std::move(moved);
  EXPECT_TRUE(copy.empty());
}

// OrderAndMetadata: the attribute order alone in the word, then in the
// metadata's block (heap or arena) and back; each side of a TakeMetadata
// keeps its own order. Under AddressSanitizer a leaked or doubly freed
// heap block fails the test run.
std::vector<std::string> Names(const AttributeOrder& order) {
  return std::vector<std::string>(order.begin(), order.end());
}
TEST(OrderAndMetadataTest, OrderSurvivesEveryChangeOfTheText) {
  InstructionArena arena;
  for (InstructionArena* where : {static_cast<InstructionArena*>(nullptr), &arena}) {
    OrderAndMetadata a;
    EXPECT_TRUE(a.order().empty());
    EXPECT_TRUE(a.metadata().empty());
    a.mutable_order()->Append("dimensions");
    a.SetMetadata("op_name=\"x\"", where);
    EXPECT_EQ(a.metadata(), "op_name=\"x\"");
    EXPECT_EQ(InArena(arena, a.metadata().data()), where != nullptr);
    EXPECT_EQ(Names(a.order()), (std::vector<std::string>{"dimensions"}));
    a.mutable_order()->Append("to_apply");  // written into the block
    a.SetMetadata("op_name=\"a longer text than before\"", where);  // a new block, same order
    EXPECT_EQ(a.metadata(), "op_name=\"a longer text than before\"");
    EXPECT_EQ(Names(a.order()), (std::vector<std::string>{"dimensions", "to_apply"}));

    OrderAndMetadata b;
    b.mutable_order()->Append("direction");
    b.TakeMetadata(a);
    EXPECT_EQ(b.metadata(), "op_name=\"a longer text than before\"");
    EXPECT_EQ(Names(b.order()), (std::vector<std::string>{"direction"}));
    EXPECT_TRUE(a.metadata().empty());
    EXPECT_EQ(Names(a.order()), (std::vector<std::string>{"dimensions", "to_apply"}));
    // b has metadata: nothing moves.
    a.SetMetadata("kept", where);
    b.TakeMetadata(a);
    EXPECT_EQ(a.metadata(), "kept");
    EXPECT_EQ(b.metadata(), "op_name=\"a longer text than before\"");
    // Removing the text keeps the order, in the word again.
    b.SetMetadata("", where);
    EXPECT_TRUE(b.metadata().empty());
    EXPECT_EQ(Names(b.order()), (std::vector<std::string>{"direction"}));
    b.mutable_order()->Erase(0);
    EXPECT_TRUE(b.order().empty());
    b.SetMetadata("", where);  // nothing to remove
    EXPECT_TRUE(b.metadata().empty());
  }
}

// Through the instruction: a parsed instruction's metadata is in the
// arena, printed back with its attributes in their written order, and
// TakeMetadataIfAbsent moves it without touching either order.
TEST(OrderAndMetadataTest, ParsedMetadataAndOrderPrintBack) {
  constexpr absl::string_view kText =
      "HloModule m, entry_computation_layout={(f32[8]{0})->f32[8]{0}}\n"
      "\n"
      "ENTRY e {\n"
      "  x = f32[8]{0} parameter(0)\n"
      "  n = f32[8]{0} negate(x), metadata={op_type=\"neg\" op_name=\"a/long/op_name\"}\n"
      "  ROOT t = f32[8]{0} transpose(n), dimensions={0}, "
      "metadata={op_name=\"t\"}, frontend_attributes={k=\"v\"}\n"
      "}\n\n";
  auto module = ParseHloModule(kText);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string printed = PrintHloModule(**module);
  EXPECT_NE(printed.find("  n = f32[8]{0} negate(x), metadata={op_type=\"neg\" "
                         "op_name=\"a/long/op_name\"}\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("  ROOT t = f32[8]{0} transpose(n), dimensions={0}, "
                         "metadata={op_name=\"t\"}, frontend_attributes={k=\"v\"}\n"),
            std::string::npos)
      << printed;
  HloInstruction* t = (*module)->entry_computation()->root_instruction();
  HloInstruction* n = t->mutable_operand(0);
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(InArena((*module)->instruction_arena(), n->metadata().data()));
  EXPECT_EQ(Names(t->attribute_order()),
            (std::vector<std::string>{"dimensions", "metadata", "frontend_attributes"}));
  t->set_metadata("");
  EXPECT_EQ(Names(t->attribute_order()),
            (std::vector<std::string>{"dimensions", "metadata", "frontend_attributes"}));
  t->TakeMetadataIfAbsent(*n);
  EXPECT_EQ(t->metadata(), "op_type=\"neg\" op_name=\"a/long/op_name\"");
  EXPECT_TRUE(n->metadata().empty());
  EXPECT_EQ(Names(t->attribute_order()),
            (std::vector<std::string>{"dimensions", "metadata", "frontend_attributes"}));
  EXPECT_EQ(Names(n->attribute_order()), (std::vector<std::string>{"metadata"}));
}

// A computation's text info shares a word with its live count and arena
// bit: each keeps its value whatever the others hold.
TEST(ComputationTextInfoTest, FlagsCountAndArenaBitAreIndependent) {
  HloModule module("m");
  InstructionArena& arena = module.instruction_arena();
  for (bool in_arena : {false, true}) {
    std::unique_ptr<HloComputation> owned =
        in_arena ? HloComputation::CreateInArena(arena, "c") : std::make_unique<HloComputation>("c");
    HloComputation* comp = owned.get();
    const uint32_t all = (1u << HloInstruction::kTextFlagBits) - 1;
    comp->mutable_text_info()->flags = all;
    comp->mutable_text_info()->has_signature = true;
    for (int i = 0; i < 3; ++i) {
      comp->AddInstruction(HloInstruction::CreateParameter(i, Shape::MakeArray(PrimitiveType::F32, {})));
    }
    EXPECT_EQ(comp->instruction_count(), 3);
    EXPECT_EQ(comp->text_info().flags, all);
    EXPECT_TRUE(comp->text_info().has_signature);
    EXPECT_EQ(InArena(arena, comp), in_arena);
    comp->mutable_text_info()->flags = kTextFlagsSet | kTextClosingNameComment;
    comp->mutable_text_info()->has_signature = false;
    EXPECT_EQ(comp->instruction_count(), 3);
    EXPECT_EQ(comp->text_info().flags, kTextFlagsSet | kTextClosingNameComment);
    EXPECT_FALSE(comp->text_info().has_signature);
    owned.reset();  // an arena computation runs its destructor only
  }
}

// The parser's (and proto reader's) attribute groups: in the module's arena
// (HloInstruction::GroupArena), every attribute kept.
constexpr absl::string_view kGroupsModule =
    "HloModule m\n"
    "add {\n"
    "  a = f32[] parameter(0)\n"
    "  b = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(a, b)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[4,8]{1,0} parameter(0)\n"
    "  ag = f32[8,8]{1,0} all-gather(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}, "
    "frontend_attributes={collective_type=\"AllGather\"}\n"
    "  t = f32[8,8]{1,0} transpose(ag), dimensions={1,0}, "
    "metadata={op_type=\"transpose\" op_name=\"model/layers.0/a_long_op_name\"}\n"
    "  d = f32[8,8]{1,0} dot(t, ag), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  c = f32[] constant(0)\n"
    "  r = f32[] reduce(d, c), dimensions={0,1}, to_apply=add\n"
    "  k = f32[] call(r, r), to_apply=add\n"
    "  cmp = pred[] compare(k, r), direction=LT\n"
    "  ROOT cc = f32[8,8]{1,0} custom-call(d), custom_call_target=\"foo\", "
    "backend_config=\"a config\"\n"
    "}\n";

TEST(ArenaGroupsTest, TheParsersGroupsLiveInTheArena) {
  auto parsed = ParseHloModule(kGroupsModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  HloModule& module = **parsed;
  const InstructionArena& arena = module.instruction_arena();
  auto find = [&](absl::string_view name) { return FindInEntry(module, name); };
  const bool on = HloInstruction::ArenaGroupsEnabled();
  const HloInstruction* ag = find("ag");
  EXPECT_EQ(InArena(arena, &ag->replica_groups()), on);
  EXPECT_EQ(InArena(arena, &ag->frontend_attributes()), on);
  EXPECT_EQ(InArena(arena, &ag->dimensions()), on);
  const HloInstruction* t = find("t");
  EXPECT_EQ(InArena(arena, &t->dimensions()), on);
  EXPECT_EQ(InArena(arena, t->metadata().data()), on);
  EXPECT_EQ(InArena(arena, &find("d")->dot_dimension_numbers()), on);
  EXPECT_EQ(InArena(arena, find("r")->called_list_block()), on);
  // A call's one computation: inside the instruction, no block.
  EXPECT_EQ(find("k")->called_list_block(), nullptr);
  EXPECT_EQ(find("k")->to_apply(), module.GetComputationWithName("add"));
  EXPECT_EQ(InArena(arena, &find("cmp")->raw_attributes()), on);
  EXPECT_EQ(InArena(arena, &find("cc")->custom_call_target()), on);
  EXPECT_EQ(InArena(arena, &find("c")->literal_text()), on);
  // Nothing lost.
  EXPECT_EQ(PrintHloModule(module), PrintHloModule(**ParseHloModule(PrintHloModule(module))));
  EXPECT_NE(PrintHloModule(module).find("op_name=\"model/layers.0/a_long_op_name\""),
            std::string::npos);
}

// Attributes of arena groups set, changed, copied and removed; instructions
// removed and the module destroyed (under AddressSanitizer a group freed
// to the heap from the arena, or a heap group leaked, fails the test).
TEST(ArenaGroupsTest, ArenaGroupsChangeAndDieLikeHeapOnes) {
  auto parsed = ParseHloModule(kGroupsModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::unique_ptr<HloModule> module = *std::move(parsed);
  HloComputation* entry = module->entry_computation();
  HloComputation* add = module->GetComputationWithName("add");
  HloInstruction* ag = nullptr;
  HloInstruction* t = nullptr;
  HloInstruction* k = nullptr;
  HloInstruction* cmp = nullptr;
  HloInstruction* d = nullptr;
  for (HloInstruction* inst : entry->instructions()) {
    if (inst->name() == "ag") ag = inst;
    if (inst->name() == "t") t = inst;
    if (inst->name() == "k") k = inst;
    if (inst->name() == "cmp") cmp = inst;
    if (inst->name() == "d") d = inst;
  }
  ASSERT_TRUE(ag != nullptr && t != nullptr && k != nullptr && cmp != nullptr && d != nullptr);
  // Changed.
  ag->set_dimensions({1});
  EXPECT_EQ(ag->dimensions(), std::vector<int64_t>{1});
  ag->mutable_frontend_attributes()->Set("stream_id", "3");
  ag->mutable_frontend_attributes()->Set("zz_a_key_longer_than_sso", "a value longer than sso");
  EXPECT_EQ(ag->frontend_attributes().size(), 3u);
  ag->set_channel_id(7);
  EXPECT_EQ(ag->channel_id(), 7);
  d->mutable_dot_dimension_numbers()->lhs_batch_dimensions = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  // An arena text moves to another instruction of the module.
  const std::string written(t->metadata());
  k->TakeMetadataIfAbsent(*t);
  EXPECT_EQ(k->metadata(), written);
  EXPECT_TRUE(t->metadata().empty());
  t->set_metadata("a new metadata text on the heap");
  EXPECT_EQ(t->metadata(), "a new metadata text on the heap");
  // The list alone moves into a (heap) group when the call gets a raw
  // attribute: the arena list is destroyed, not freed.
  k->SetRawAttribute("is_stable", "true");
  EXPECT_EQ(k->to_apply(), add);
  k->SetCalledComputations("to_apply", {add, add}, true);
  EXPECT_EQ(k->called_computations("to_apply").size(), 2u);
  // Removed.
  EXPECT_TRUE(cmp->RemoveRawAttribute("direction"));
  EXPECT_TRUE(ag->mutable_frontend_attributes()->Remove("collective_type"));
  // Copied to an instruction on the heap.
  auto copy = HloInstruction::Create(HloOpcode::kAllGather, ag->shape());
  copy->set_frontend_attributes(ag->frontend_attributes());
  copy->set_replica_groups(ag->replica_groups());
  copy->set_dimensions(*ag->dimensions());
  copy->TakeMetadataIfAbsent(*t);
  EXPECT_EQ(copy->frontend_attributes(), ag->frontend_attributes());
  EXPECT_EQ(copy->dimensions(), ag->dimensions());
  EXPECT_EQ(copy->metadata(), "a new metadata text on the heap");
  copy.reset();
  // An arena instruction removed (its groups' destructors run), then the
  // module destroyed.
  ASSERT_TRUE(entry->RemoveInstruction(cmp).ok());
  module.reset();
}

// While a module is loaded (BeginBulkLoad to EndBulkLoad), an ordinary
// setter on one of its arena instructions makes the group in the module's
// arena, with no call of its own (HloInstruction::GroupArena), each group
// once; after the load (a pass) new groups go to the heap and arena groups
// change in place. Under AddressSanitizer an arena group freed to the heap,
// or a heap group leaked, fails the test.
TEST(ArenaGroupsTest, SettersOfALoadedInstructionUseTheArena) {
  if (!HloInstruction::ArenaGroupsEnabled()) GTEST_SKIP() << "HILO_ARENA_GROUPS=0";
  HloModule module("m");
  InstructionArena& arena = module.instruction_arena();
  HloComputation* add = module.AddComputation(std::make_unique<HloComputation>("add"));
  const SharedShape scalar(Shape::MakeArray(PrimitiveType::F32, {}));
  module.BeginBulkLoad();
  EXPECT_EQ(InstructionArena::Loading(), &arena);
  std::unique_ptr<HloInstruction> ar =
      HloInstruction::CreateInArena(arena, HloOpcode::kAllReduce, scalar, "ar");
  ar->set_channel_id(5);
  ar->SetCalledComputations("to_apply", {add});
  ar->set_custom_call_target("a target longer than fifteen characters");
  ar->mutable_frontend_attributes()->Set("collective_type", "AllReduce");
  ar->set_metadata("op_name=\"model/layers.0/a_long_op_name\"");
  EXPECT_TRUE(InArena(arena, &ar->channel_id()));
  EXPECT_EQ(ar->called_list_block(), nullptr);  // inline
  EXPECT_EQ(ar->to_apply(), add);
  ar->SetCalledComputations("to_apply", {add}, /*braced=*/true);  // a list now
  EXPECT_TRUE(InArena(arena, ar->called_list_block()));
  EXPECT_TRUE(InArena(arena, &ar->custom_call_target()));
  EXPECT_TRUE(InArena(arena, &ar->frontend_attributes()));
  EXPECT_TRUE(InArena(arena, ar->metadata().data()));
  // Each group made once: a second setter of a group uses it.
  const void* collective = &ar->channel_id();
  const size_t used = arena.used_bytes();
  ar->set_use_global_device_ids(true);
  ar->set_api_version(2);
  EXPECT_EQ(arena.used_bytes(), used);
  EXPECT_EQ(&ar->channel_id(), collective);
  // The called list alone moves into the whole group, in the arena too.
  ar->set_dimensions({0});
  EXPECT_TRUE(InArena(arena, &ar->dimensions()));
  EXPECT_EQ(ar->to_apply(), add);
  // A heap instruction's groups stay on the heap while loading.
  std::unique_ptr<HloInstruction> heap = HloInstruction::Create(HloOpcode::kAllReduce, scalar);
  heap->set_channel_id(1);
  heap->set_metadata("op_name=\"a heap text\"");
  EXPECT_FALSE(InArena(arena, &heap->channel_id()));
  EXPECT_FALSE(InArena(arena, heap->metadata().data()));
  module.EndBulkLoad();
  EXPECT_EQ(InstructionArena::Loading(), nullptr);

  // After the load: a new group on the heap, an arena group changed in place.
  ar->mutable_dot_dimension_numbers()->lhs_batch_dimensions = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_FALSE(InArena(arena, &ar->dot_dimension_numbers()));
  ar->set_channel_id(7);
  EXPECT_EQ(ar->channel_id(), 7);
  EXPECT_EQ(&ar->channel_id(), collective);
  ar->mutable_frontend_attributes()->Set("zz_a_key_longer_than_sso", "a value longer than sso");
  EXPECT_EQ(ar->frontend_attributes().size(), 2u);
  ar->set_metadata("a new metadata text on the heap");
  EXPECT_FALSE(InArena(arena, ar->metadata().data()));
  ar->AddControlDependencyTo(heap.get());  // vectors of the arena's rare group
  EXPECT_EQ(ar->control_successors().size(), 1u);
  ar->DropAllControlDependencies();
  heap.reset();
  ar.reset();  // before the arena
}

// A loader that fails half-way leaves no loading arena behind (the
// module's destructor clears it): the next instruction's groups would go to
// a dead arena (AddressSanitizer: use after free).
TEST(ArenaGroupsTest, AFailedLoadLeavesNoLoadingArena) {
  auto bad = ParseHloModule("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
                            "  y = f32[] negate(x), channel_id=3\n  ROOT z = f32[] bogus(y)\n}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(InstructionArena::Loading(), nullptr);
  auto good = ParseHloModule(kGroupsModule);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(InstructionArena::Loading(), nullptr);
  // A pass's change of a parsed instruction after the load: on the heap.
  HloInstruction* root = (*good)->entry_computation()->root_instruction();
  root->set_channel_id(9);
  EXPECT_FALSE(InArena((*good)->instruction_arena(), &root->channel_id()));
}

// A module loaded while another is (a loader's callback parsing one): its
// groups go to its own arena; once it is loaded no arena is in force, so
// the outer module's later groups go to the heap, never to the inner
// module's arena (which may die first).
TEST(ArenaGroupsTest, ALoadInsideALoadUsesNoOtherModulesArena) {
  if (!HloInstruction::ArenaGroupsEnabled()) GTEST_SKIP() << "HILO_ARENA_GROUPS=0";
  const SharedShape scalar(Shape::MakeArray(PrimitiveType::F32, {}));
  auto outer = std::make_unique<HloModule>("outer");
  outer->BeginBulkLoad();
  std::unique_ptr<HloInstruction> inst =
      HloInstruction::CreateInArena(outer->instruction_arena(), HloOpcode::kAllReduce, scalar, "ar");
  auto parsed = ParseHloModule(kGroupsModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (const HloInstruction* parsed_inst : (*parsed)->entry_computation()->instructions()) {
    if (parsed_inst->name() == "ag") {
      EXPECT_TRUE(InArena((*parsed)->instruction_arena(), &parsed_inst->replica_groups()));
    }
  }
  EXPECT_EQ(InstructionArena::Loading(), nullptr);
  parsed->reset();
  inst->set_channel_id(2);
  EXPECT_FALSE(InArena(outer->instruction_arena(), &inst->channel_id()));
  EXPECT_EQ(inst->channel_id(), 2);
  outer->EndBulkLoad();
  inst.reset();
  outer.reset();
}

// The proto reader's groups: in the arena through the same setters.
TEST(ArenaGroupsTest, TheProtoReadersGroupsLiveInTheArena) {
  auto parsed = ParseHloModule(kGroupsModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::string> bytes = HloModuleToBytes(**parsed);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto read = HloModuleFromBytes(*bytes, DefaultProtoRecursionBudget());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(InstructionArena::Loading(), nullptr);
  const bool on = HloInstruction::ArenaGroupsEnabled();
  const InstructionArena& arena = (*read)->instruction_arena();
  for (const HloInstruction* inst : (*read)->entry_computation()->instructions()) {
    if (inst->name() == "ag") {
      EXPECT_EQ(InArena(arena, &inst->frontend_attributes()), on);
      EXPECT_EQ(InArena(arena, &inst->dimensions()), on);
    }
    if (inst->name() == "d") {
      EXPECT_EQ(InArena(arena, &inst->dot_dimension_numbers()), on);
    }
    if (inst->name() == "t") {
      EXPECT_EQ(InArena(arena, inst->metadata().data()), on);
    }
  }
  EXPECT_EQ(PrintHloModule(**read), PrintHloModule(**parsed));
}

// HILO_ARENA_GROUPS=0: every group on the heap.
TEST(ArenaGroupsDeathTest, TheSwitchKeepsGroupsOnTheHeap) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("HILO_ARENA_GROUPS", "0", 1);
        auto parsed = ParseHloModule(kGroupsModule);
        if (!parsed.ok()) std::exit(2);
        bool on_heap = !HloInstruction::ArenaGroupsEnabled();
        for (const HloInstruction* inst : (*parsed)->entry_computation()->instructions()) {
          on_heap = on_heap &&
                    !InArena((*parsed)->instruction_arena(), &inst->dimensions()) &&
                    !InArena((*parsed)->instruction_arena(), inst->called_list_block()) &&
                    (inst->metadata().empty() ||
                     !InArena((*parsed)->instruction_arena(), inst->metadata().data()));
        }
        std::exit(on_heap ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace hilo
