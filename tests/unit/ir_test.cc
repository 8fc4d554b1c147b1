// Unit tests of the IR in src/hilo/ir/: primitive types, shapes, replica
// groups, operand/user bookkeeping, computation mutators, post order, names
// and frontend attributes.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/ir/attribute_names.h"
#include "hilo/ir/compact_string.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/name_table.h"
#include "hilo/ir/primitive_type.h"
#include "hilo/ir/replica_groups.h"
#include "hilo/ir/shape.h"

namespace hilo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

Shape F32(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::F32, std::move(dims)); }

// Checks that operands and users agree in both directions for every live
// instruction of `comp`, and that every user appears once.
void ExpectConsistent(const HloComputation& comp) {
  for (HloInstruction* inst : comp.instructions()) {
    for (HloInstruction* operand : inst->operands()) {
      const auto& users = operand->users();
      EXPECT_EQ(std::count(users.begin(), users.end(), inst), 1)
          << inst->name() << " is not exactly once among the users of " << operand->name();
    }
    absl::flat_hash_set<const HloInstruction*> seen;
    for (HloInstruction* user : inst->users()) {
      EXPECT_TRUE(seen.insert(user).second) << user->name() << " listed twice";
      EXPECT_TRUE(user->IsUserOf(inst)) << user->name() << " listed as user of " << inst->name();
    }
    for (HloInstruction* succ : inst->control_successors()) {
      const auto& preds = succ->control_predecessors();
      EXPECT_EQ(std::count(preds.begin(), preds.end(), inst), 1);
    }
  }
}

// A module with one entry computation, for building graphs by hand.
struct Builder {
  std::unique_ptr<HloModule> module = std::make_unique<HloModule>("m");
  HloComputation* comp =
      module->AddComputation(std::make_unique<HloComputation>("main"), /*is_entry=*/true);

  HloInstruction* Param(int64_t n, Shape shape, std::string name = "") {
    return comp->AddInstruction(HloInstruction::CreateParameter(n, std::move(shape), std::move(name)));
  }
  HloInstruction* Op(HloOpcode op, Shape shape, std::vector<HloInstruction*> operands,
                     std::string name = "") {
    return comp->AddInstruction(HloInstruction::Create(op, std::move(shape), operands, std::move(name)));
  }
};

// ---------------------------------------------------------------------------
// Primitive types

TEST(PrimitiveTypeTest, NamesRoundTrip) {
  const char* names[] = {"pred",     "s2",           "s4",         "s8",         "s16",
                         "s32",      "s64",          "u2",         "u4",         "u8",
                         "u16",      "u32",          "u64",        "f16",        "bf16",
                         "f32",      "f64",          "c64",        "c128",       "f8e5m2",
                         "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz", "f8e4m3",
                         "f8e3m4",   "f4e2m1fn",     "f8e8m0fnu",  "token",      "opaque"};
  for (const char* name : names) {
    auto type = StringToPrimitiveType(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(PrimitiveTypeName(*type), name);
  }
  EXPECT_FALSE(StringToPrimitiveType("tuple").has_value());
  EXPECT_FALSE(StringToPrimitiveType("f33").has_value());
  EXPECT_FALSE(StringToPrimitiveType("").has_value());
}

TEST(PrimitiveTypeTest, Sizes) {
  EXPECT_EQ(ByteWidth(PrimitiveType::PRED), 1);
  EXPECT_EQ(ByteWidth(PrimitiveType::S2), 1);
  EXPECT_EQ(BitWidth(PrimitiveType::S4), 4);
  EXPECT_EQ(ByteWidth(PrimitiveType::S4), 1);
  EXPECT_EQ(ByteWidth(PrimitiveType::BF16), 2);
  EXPECT_EQ(ByteWidth(PrimitiveType::F32), 4);
  EXPECT_EQ(ByteWidth(PrimitiveType::U64), 8);
  EXPECT_EQ(ByteWidth(PrimitiveType::C64), 8);
  EXPECT_EQ(ByteWidth(PrimitiveType::C128), 16);
  EXPECT_EQ(ByteWidth(PrimitiveType::F8E4M3FN), 1);
  EXPECT_EQ(BitWidth(PrimitiveType::F4E2M1FN), 4);
  EXPECT_EQ(ByteWidth(PrimitiveType::TOKEN), 0);
  EXPECT_EQ(ByteWidth(PrimitiveType::OPAQUE_TYPE), 0);
  EXPECT_EQ(ByteWidth(PrimitiveType::TUPLE), 0);
}

TEST(PrimitiveTypeTest, Kinds) {
  EXPECT_TRUE(IsArrayType(PrimitiveType::PRED));
  EXPECT_FALSE(IsArrayType(PrimitiveType::TOKEN));
  EXPECT_FALSE(IsArrayType(PrimitiveType::OPAQUE_TYPE));
  EXPECT_FALSE(IsArrayType(PrimitiveType::TUPLE));
  EXPECT_TRUE(IsIntegralType(PrimitiveType::S8));
  EXPECT_TRUE(IsIntegralType(PrimitiveType::U2));
  EXPECT_FALSE(IsIntegralType(PrimitiveType::PRED));
  EXPECT_TRUE(IsSignedIntegralType(PrimitiveType::S64));
  EXPECT_FALSE(IsSignedIntegralType(PrimitiveType::U64));
  EXPECT_TRUE(IsUnsignedIntegralType(PrimitiveType::U4));
  EXPECT_TRUE(IsFloatingPointType(PrimitiveType::BF16));
  EXPECT_TRUE(IsFloatingPointType(PrimitiveType::F8E8M0FNU));
  EXPECT_FALSE(IsFloatingPointType(PrimitiveType::C64));
  EXPECT_TRUE(IsComplexType(PrimitiveType::C128));
}

// ---------------------------------------------------------------------------
// Shapes

TEST(ShapeTest, ArrayToString) {
  EXPECT_EQ(F32({}).ToString(), "f32[]");
  EXPECT_EQ(F32({2, 3}).ToString(), "f32[2,3]");
  EXPECT_EQ(Shape::MakeArrayWithLayout(PrimitiveType::BF16, {2, 3}, {1, 0}).ToString(),
            "bf16[2,3]{1,0}");
  EXPECT_EQ(Shape::MakeArrayWithLayout(PrimitiveType::BF16, {2, 3}, {1, 0}).ToString(false),
            "bf16[2,3]");
  EXPECT_EQ(Shape::MakeToken().ToString(), "token[]");
  EXPECT_EQ(Shape::MakeOpaque().ToString(), "opaque[]");
}

TEST(ShapeTest, DynamicAndUnboundedDims) {
  Shape s = F32({2});
  s.add_dimension(3, /*dynamic=*/true);
  s.add_dimension(kUnboundedSize, /*dynamic=*/true);
  EXPECT_EQ(s.ToString(), "f32[2,<=3,?]");
  EXPECT_FALSE(s.is_dynamic_dimension(0));
  EXPECT_TRUE(s.is_dynamic_dimension(1));
  EXPECT_FALSE(s.is_unbounded_dimension(1));
  EXPECT_TRUE(s.is_unbounded_dimension(2));
  EXPECT_FALSE(s.is_static());
  EXPECT_TRUE(F32({2, 3}).is_static());
  // An unbounded dimension counts as 0 elements.
  EXPECT_EQ(s.elements(), 0);
  // A tuple is static only if every element is.
  EXPECT_FALSE(Shape::MakeTuple({F32({1}), s}).is_static());
  EXPECT_TRUE(Shape::MakeTuple({F32({1})}).is_static());
}

TEST(ShapeTest, LayoutTailIsKeptVerbatim) {
  Shape s = Shape::MakeArrayWithLayout(PrimitiveType::BF16, {8, 128}, {1, 0});
  s.mutable_layout()->tail.set("T(8,128)(2,1)S(1)");
  EXPECT_EQ(s.ToString(), "bf16[8,128]{1,0:T(8,128)(2,1)S(1)}");
  // A tail with an empty minor_to_major still prints the colon.
  Shape t = F32({});
  Layout tail_only;
  tail_only.tail.set("S(5)");
  t.set_layout(tail_only);
  EXPECT_EQ(t.ToString(), "f32[]{:S(5)}");
  t.clear_layout();
  EXPECT_FALSE(t.has_layout());
  EXPECT_EQ(t.ToString(), "f32[]");
}

// Dynamic flags of the first 32 dimensions live in the shape, the others
// out of line; both read, write, compare and copy alike.
TEST(ShapeTest, DynamicFlagsPastTheThirtySecondDimension) {
  Shape wide = F32({});
  for (int i = 0; i < 40; ++i) wide.add_dimension(i + 1, /*dynamic=*/i == 3 || i == 35);
  ASSERT_EQ(wide.rank(), 40);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(wide.is_dynamic_dimension(i), i == 3 || i == 35) << i;
  EXPECT_FALSE(wide.is_static());
  Shape copy = wide;
  EXPECT_EQ(copy, wide);
  copy.set_dynamic_dimension(35, false);
  EXPECT_FALSE(copy.is_dynamic_dimension(35));
  EXPECT_TRUE(wide.is_dynamic_dimension(35));  // the copy is deep
  EXPECT_NE(copy, wide);
  EXPECT_FALSE(copy.Compatible(wide));
  copy.set_dynamic_dimension(3, false);
  EXPECT_TRUE(copy.is_static());
  std::vector<int64_t> dims(40);
  for (int i = 0; i < 40; ++i) dims[i] = i + 1;
  EXPECT_EQ(copy, Shape::MakeArray(PrimitiveType::F32, dims));
  copy.set_dynamic_dimension(31, true);
  EXPECT_TRUE(copy.is_dynamic_dimension(31));
  EXPECT_FALSE(copy.is_dynamic_dimension(30));
  EXPECT_FALSE(copy.is_dynamic_dimension(32));
  EXPECT_THAT(copy.ToString(), HasSubstr(",31,<=32,33,"));
}

// Most shapes have no tuple elements, no layout tail and at most 32
// dimensions; those parts stay out of line so that a shape stays small.
TEST(ShapeTest, CommonShapesAreCompact) {
  static_assert(sizeof(Shape) <= 112, "a Shape grew: every instruction holds one");
  Shape a = Shape::MakeArrayWithLayout(PrimitiveType::F32, {2, 3}, {1, 0});
  EXPECT_TRUE(a.tuple_shapes().empty());
  EXPECT_TRUE(a.layout().tail.get().empty());
  Shape none = F32({2});
  EXPECT_FALSE(none.has_layout());
  none.mutable_layout()->minor_to_major.push_back(0);
  EXPECT_TRUE(none.has_layout());
  EXPECT_EQ(none.ToString(), "f32[2]{0}");
}

TEST(ShapeTest, Tuples) {
  Shape empty = Shape::MakeTuple({});
  EXPECT_TRUE(empty.IsTuple());
  EXPECT_EQ(empty.ToString(), "()");
  Shape nested = Shape::MakeTuple(
      {Shape::MakeTuple({F32({}), Shape::MakeArray(PrimitiveType::S32, {2})}), empty,
       Shape::MakeToken()});
  EXPECT_EQ(nested.ToString(), "((f32[], s32[2]), (), token[])");
  EXPECT_EQ(nested.tuple_shapes_size(), 3);
  EXPECT_EQ(nested.tuple_shapes(0).tuple_shapes(1).dimensions(0), 2);
  EXPECT_FALSE(nested.IsArray());
  EXPECT_EQ(nested.byte_size(), 0);
}

TEST(ShapeTest, CompatibleIgnoresLayoutButEqualityDoesNot) {
  Shape a = Shape::MakeArrayWithLayout(PrimitiveType::F32, {2, 3}, {1, 0});
  Shape b = Shape::MakeArrayWithLayout(PrimitiveType::F32, {2, 3}, {0, 1});
  Shape c = F32({2, 3});
  EXPECT_TRUE(a.Compatible(b));
  EXPECT_TRUE(a.Compatible(c));
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_TRUE(a == Shape::MakeArrayWithLayout(PrimitiveType::F32, {2, 3}, {1, 0}));
  Shape tail = a;
  tail.mutable_layout()->tail.set("T(8,128)");
  EXPECT_TRUE(tail.Compatible(a));
  EXPECT_NE(tail, a);
  // Element type, dims and dynamic flags matter to both.
  EXPECT_FALSE(c.Compatible(Shape::MakeArray(PrimitiveType::BF16, {2, 3})));
  EXPECT_FALSE(c.Compatible(F32({3, 2})));
  Shape dyn = F32({2});
  dyn.add_dimension(3, true);
  EXPECT_FALSE(c.Compatible(dyn));
  EXPECT_NE(c, dyn);
  // Tuples compare element by element, layouts ignored only by Compatible.
  Shape ta = Shape::MakeTuple({a, Shape::MakeToken()});
  Shape tb = Shape::MakeTuple({b, Shape::MakeToken()});
  EXPECT_TRUE(ta.Compatible(tb));
  EXPECT_NE(ta, tb);
  EXPECT_FALSE(ta.Compatible(Shape::MakeTuple({a})));
  EXPECT_FALSE(Shape::MakeTuple({}).Compatible(F32({})));
}

TEST(ShapeTest, ElementAndByteSizes) {
  EXPECT_EQ(F32({}).elements(), 1);
  EXPECT_EQ(F32({2, 3}).elements(), 6);
  EXPECT_EQ(F32({2, 3}).byte_size(), 24);
  EXPECT_EQ(F32({0, 5}).elements(), 0);
  EXPECT_EQ(Shape::MakeArray(PrimitiveType::BF16, {4096, 8192}).byte_size(), 4096 * 8192 * 2);
  EXPECT_EQ(Shape::MakeArray(PrimitiveType::PRED, {7}).byte_size(), 7);
  EXPECT_EQ(Shape::MakeArray(PrimitiveType::S4, {3}).byte_size(), 3);
  EXPECT_EQ(Shape::MakeToken().byte_size(), 0);
}

TEST(ShapeTest, OverflowSaturates) {
  Shape huge = F32({int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_FALSE(huge.checked_elements().has_value());
  EXPECT_EQ(huge.elements(), INT64_MAX);
  EXPECT_EQ(huge.byte_size(), INT64_MAX);
  // Elements fit but bytes do not.
  Shape big = Shape::MakeArray(PrimitiveType::F64, {int64_t{1} << 61});
  ASSERT_TRUE(big.checked_elements().has_value());
  EXPECT_EQ(*big.checked_elements(), int64_t{1} << 61);
  EXPECT_EQ(big.byte_size(), INT64_MAX);
  // Exactly representable.
  EXPECT_EQ(Shape::MakeArray(PrimitiveType::S8, {int64_t{1} << 62}).byte_size(), int64_t{1} << 62);
}

TEST(ShapeTest, AreAllLeavesIntegers) {
  EXPECT_TRUE(Shape::MakeArray(PrimitiveType::S32, {2}).AreAllLeavesIntegers());
  EXPECT_FALSE(Shape::MakeArray(PrimitiveType::PRED, {2}).AreAllLeavesIntegers());
  EXPECT_FALSE(Shape::MakeTuple({Shape::MakeArray(PrimitiveType::U8, {}), F32({})})
                   .AreAllLeavesIntegers());
  EXPECT_TRUE(Shape::MakeTuple({Shape::MakeArray(PrimitiveType::U8, {}), Shape::MakeToken()})
                  .AreAllLeavesIntegers());
  EXPECT_TRUE(Shape::MakeTuple({}).AreAllLeavesIntegers());
}

// ---------------------------------------------------------------------------
// Replica groups

TEST(ReplicaGroupsTest, ExplicitAndEmpty) {
  ReplicaGroups empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.ToString(), "{}");
  ASSERT_TRUE(empty.Expand().ok());
  EXPECT_TRUE(empty.Expand()->empty());

  ReplicaGroups g = ReplicaGroups::Explicit({{0, 1}, {2, 3}});
  EXPECT_FALSE(g.empty());
  EXPECT_EQ(g.form(), ReplicaGroups::Form::kExplicit);
  EXPECT_EQ(g.ToString(), "{{0,1},{2,3}}");
  auto expanded = g.Expand();
  ASSERT_TRUE(expanded.ok());
  EXPECT_THAT(*expanded, ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3)));
  // A single empty group is not "no groups".
  ReplicaGroups one_empty = ReplicaGroups::Explicit({{}});
  EXPECT_FALSE(one_empty.empty());
  EXPECT_EQ(one_empty.ToString(), "{{}}");
}

TEST(ReplicaGroupsTest, IotaWithoutTranspose) {
  ReplicaGroups g = ReplicaGroups::Iota({2, 4, {8}, {}});
  EXPECT_EQ(g.form(), ReplicaGroups::Form::kIota);
  EXPECT_FALSE(g.empty());
  EXPECT_EQ(g.ToString(), "[2,4]<=[8]");
  auto expanded = g.Expand();
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  EXPECT_THAT(*expanded, ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
}

TEST(ReplicaGroupsTest, IotaWithTranspose) {
  ReplicaGroups g = ReplicaGroups::Iota({2, 4, {4, 2}, {1, 0}});
  EXPECT_EQ(g.ToString(), "[2,4]<=[4,2]T(1,0)");
  auto expanded = g.Expand();
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  EXPECT_THAT(*expanded, ElementsAre(ElementsAre(0, 2, 4, 6), ElementsAre(1, 3, 5, 7)));
  // A 3-d reshape with a non-trivial permutation: ids of [2,2,2] transposed
  // by (2,0,1) read in row-major order.
  auto three = ReplicaGroups::Iota({4, 2, {2, 2, 2}, {2, 0, 1}}).Expand();
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_THAT(*three, ElementsAre(ElementsAre(0, 2), ElementsAre(4, 6), ElementsAre(1, 3),
                                  ElementsAre(5, 7)));
  // Identity permutation written explicitly equals no permutation.
  auto identity = ReplicaGroups::Iota({2, 4, {4, 2}, {0, 1}}).Expand();
  ASSERT_TRUE(identity.ok());
  EXPECT_THAT(*identity, ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
}

TEST(ReplicaGroupsTest, BadIotaListsAreErrors) {
  // Group count times size does not match the number of ids.
  EXPECT_FALSE(ReplicaGroups::Iota({2, 3, {8}, {}}).Expand().ok());
  EXPECT_FALSE(ReplicaGroups::Iota({-2, -4, {8}, {}}).Expand().ok());
  // Transpose of the wrong rank, or not a permutation.
  EXPECT_FALSE(ReplicaGroups::Iota({2, 4, {4, 2}, {0}}).Expand().ok());
  EXPECT_FALSE(ReplicaGroups::Iota({2, 4, {4, 2}, {0, 0}}).Expand().ok());
  EXPECT_FALSE(ReplicaGroups::Iota({2, 4, {4, 2}, {0, 2}}).Expand().ok());
  EXPECT_FALSE(ReplicaGroups::Iota({2, 4, {4, 2}, {-1, 0}}).Expand().ok());
  // Negative and overflowing reshape dims.
  EXPECT_FALSE(ReplicaGroups::Iota({1, 8, {-2, -4}, {}}).Expand().ok());
  EXPECT_FALSE(
      ReplicaGroups::Iota({1, 1, {int64_t{1} << 40, int64_t{1} << 40}, {}}).Expand().ok());
  // Too many devices to expand, even though consistent.
  EXPECT_FALSE(ReplicaGroups::Iota({1, int64_t{1} << 40, {int64_t{1} << 40}, {}}).Expand().ok());
  // Raw form never expands.
  ReplicaGroups raw = ReplicaGroups::Raw("mesh[a=2]");
  EXPECT_EQ(raw.ToString(), "mesh[a=2]");
  EXPECT_FALSE(raw.Expand().ok());
}

TEST(ReplicaGroupsTest, EqualAcrossForms) {
  ReplicaGroups iota = ReplicaGroups::Iota({2, 4, {4, 2}, {1, 0}});
  ReplicaGroups expl = ReplicaGroups::Explicit({{0, 2, 4, 6}, {1, 3, 5, 7}});
  EXPECT_FALSE(iota == expl);  // different forms
  EXPECT_TRUE(ReplicaGroupsEqual(iota, expl));
  EXPECT_TRUE(ReplicaGroupsEqual(expl, iota));
  EXPECT_TRUE(ReplicaGroupsEqual(ReplicaGroups::Iota({2, 4, {8}, {}}),
                                 ReplicaGroups::Explicit({{0, 1, 2, 3}, {4, 5, 6, 7}})));
  // Order of groups and of ids within a group matters.
  EXPECT_FALSE(ReplicaGroupsEqual(iota, ReplicaGroups::Explicit({{1, 3, 5, 7}, {0, 2, 4, 6}})));
  EXPECT_FALSE(ReplicaGroupsEqual(iota, ReplicaGroups::Explicit({{0, 2, 6, 4}, {1, 3, 5, 7}})));
  EXPECT_FALSE(ReplicaGroupsEqual(iota, ReplicaGroups()));
  // A bad iota list equals nothing but itself.
  ReplicaGroups bad = ReplicaGroups::Iota({2, 3, {8}, {}});
  EXPECT_TRUE(ReplicaGroupsEqual(bad, bad));
  EXPECT_FALSE(ReplicaGroupsEqual(bad, ReplicaGroups::Explicit({{0, 1, 2}, {3, 4, 5}})));
  // Raw forms compare by text.
  EXPECT_TRUE(ReplicaGroupsEqual(ReplicaGroups::Raw("mesh[a=2]"), ReplicaGroups::Raw("mesh[a=2]")));
  EXPECT_FALSE(ReplicaGroupsEqual(ReplicaGroups::Raw("mesh[a=2]"), ReplicaGroups::Raw("mesh[b=2]")));
}

// ---------------------------------------------------------------------------
// Operands and users

TEST(InstructionTest, AppendOperandRegistersUser) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({2}), "x");
  HloInstruction* y = b.Param(1, F32({2}), "y");
  HloInstruction* t = b.Op(HloOpcode::kTuple, Shape::MakeTuple({}), {}, "t");
  t->AppendOperand(x);
  t->AppendOperand(y);
  t->AppendOperand(x);
  EXPECT_THAT(t->operands(), ElementsAre(x, y, x));
  EXPECT_THAT(x->users(), ElementsAre(t));
  EXPECT_THAT(y->users(), ElementsAre(t));
  EXPECT_TRUE(t->IsUserOf(x));
  EXPECT_FALSE(x->IsUserOf(t));
  ExpectConsistent(*b.comp);
}

TEST(InstructionTest, UserOfTheSameOperandTwice) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({2}), "x");
  HloInstruction* y = b.Param(1, F32({2}), "y");
  HloInstruction* add = b.Op(HloOpcode::kAdd, F32({2}), {x, x}, "add");
  EXPECT_THAT(x->users(), ElementsAre(add));
  // Replacing one of the two uses keeps add a user of x.
  add->ReplaceOperandWith(0, y);
  EXPECT_THAT(add->operands(), ElementsAre(y, x));
  EXPECT_THAT(x->users(), ElementsAre(add));
  EXPECT_THAT(y->users(), ElementsAre(add));
  ExpectConsistent(*b.comp);
  // Replacing the other one removes it.
  add->ReplaceOperandWith(1, y);
  EXPECT_TRUE(x->users().empty());
  EXPECT_THAT(y->users(), ElementsAre(add));
  ExpectConsistent(*b.comp);
  // Replacing with the same operand is a no-op.
  add->ReplaceOperandWith(1, y);
  EXPECT_THAT(add->operands(), ElementsAre(y, y));
  // ReplaceOperandWithAll replaces both at once.
  add->ReplaceOperandWithAll(y, x);
  EXPECT_THAT(add->operands(), ElementsAre(x, x));
  EXPECT_TRUE(y->users().empty());
  EXPECT_THAT(x->users(), ElementsAre(add));
  ExpectConsistent(*b.comp);
  add->DetachFromOperands();
  EXPECT_TRUE(add->operands().empty());
  EXPECT_TRUE(x->users().empty());
}

// `n` scalar negations of `operand`, added to `b`'s computation.
std::vector<HloInstruction*> NegationsOf(Builder& b, HloInstruction* operand, int n) {
  std::vector<HloInstruction*> negations;
  for (int i = 0; i < n; ++i) negations.push_back(b.Op(HloOpcode::kNegate, F32({}), {operand}));
  return negations;
}

TEST(InstructionTest, HighFanoutStaysConsistent) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({}), "x");
  HloInstruction* y = b.Param(1, F32({}), "y");
  constexpr int kUsers = 5000;
  std::vector<HloInstruction*> users = NegationsOf(b, x, kUsers);
  EXPECT_EQ(x->user_count(), kUsers);
  // Move every third user to y, and make every fifth use x twice.
  for (int i = 0; i < kUsers; ++i) {
    if (i % 3 == 0) users[i]->ReplaceOperandWith(0, y);
    if (i % 5 == 0) users[i]->AppendOperand(x);
  }
  int64_t expect_x = 0, expect_y = 0;
  for (int i = 0; i < kUsers; ++i) {
    if (i % 3 != 0 || i % 5 == 0) ++expect_x;
    if (i % 3 == 0) ++expect_y;
  }
  EXPECT_EQ(x->user_count(), expect_x);
  EXPECT_EQ(y->user_count(), expect_y);
  ExpectConsistent(*b.comp);
  // Everything to y, through ReplaceAllUsesWith.
  ASSERT_TRUE(x->ReplaceAllUsesWith(y).ok());
  EXPECT_EQ(x->user_count(), 0);
  EXPECT_EQ(y->user_count(), kUsers);
  ExpectConsistent(*b.comp);
  // Remove half of the users.
  for (int i = 0; i < kUsers; i += 2) ASSERT_TRUE(b.comp->RemoveInstruction(users[i]).ok());
  EXPECT_EQ(y->user_count(), kUsers / 2);
  for (HloInstruction* u : y->users()) EXPECT_EQ(u->parent(), b.comp);
  ExpectConsistent(*b.comp);
}

// A value with more than 16 users keeps an index of their positions (a set
// of positions hashed through the users): after any sequence of adds and
// removes its list is exactly what swap-and-pop removal gives (before the
// index, a removal keeps the order), and every user is found.
TEST(InstructionTest, UserIndexFollowsSwapAndPop) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({}), "x");
  HloInstruction* y = b.Param(1, F32({}), "y");
  constexpr int kUsers = 300;
  const std::vector<HloInstruction*> users = NegationsOf(b, y, kUsers);
  std::vector<HloInstruction*> model;  // x's users as they should be
  bool indexed = false;
  uint32_t state = 12345;
  for (int step = 0; step < 20000; ++step) {
    state = state * 1103515245u + 12345u;
    HloInstruction* u = users[(state >> 8) % kUsers];
    auto it = std::find(model.begin(), model.end(), u);
    if (it == model.end()) {
      u->ReplaceOperandWith(0, x);  // u becomes a user of x
      model.push_back(u);
      indexed = indexed || model.size() > 16;
    } else {
      u->ReplaceOperandWith(0, y);  // and stops being one
      if (indexed) {
        *it = model.back();
        model.pop_back();
      } else {
        model.erase(it);
      }
    }
    ASSERT_EQ(std::vector<HloInstruction*>(x->users().begin(), x->users().end()), model)
        << "step " << step;
  }
  EXPECT_TRUE(indexed);
  // A user that uses x twice is listed once; every user leaves through the
  // index.
  for (HloInstruction* u : std::vector<HloInstruction*>(model)) u->AppendOperand(x);
  EXPECT_EQ(x->user_count(), static_cast<int64_t>(model.size()));
  ExpectConsistent(*b.comp);
  for (HloInstruction* u : users) u->DetachFromOperands();
  EXPECT_EQ(x->user_count(), 0);
  EXPECT_EQ(y->user_count(), 0);
}

TEST(InstructionTest, ReplaceAllUsesWith) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({2}), "x");
  HloInstruction* n1 = b.Op(HloOpcode::kNegate, F32({2}), {x}, "n1");
  HloInstruction* n2 = b.Op(HloOpcode::kNegate, F32({2}), {x}, "n2");
  HloInstruction* add = b.Op(HloOpcode::kAdd, F32({2}), {n1, n2}, "add");
  b.comp->set_root_instruction(add);
  // A user of both old and new: add uses n1 and n2.
  ASSERT_TRUE(n1->ReplaceAllUsesWith(n2).ok());
  EXPECT_THAT(add->operands(), ElementsAre(n2, n2));
  EXPECT_TRUE(n1->users().empty());
  EXPECT_THAT(n2->users(), ElementsAre(add));
  ExpectConsistent(*b.comp);
  // The replacement using the old instruction keeps that use.
  HloInstruction* c = b.Op(HloOpcode::kCopy, F32({2}), {add}, "c");
  ASSERT_TRUE(add->ReplaceAllUsesWith(c).ok());
  EXPECT_EQ(b.comp->root_instruction(), c);
  EXPECT_THAT(c->operands(), ElementsAre(add));
  EXPECT_THAT(add->users(), ElementsAre(c));
  ExpectConsistent(*b.comp);
  // Shapes must be compatible; nothing changes on error.
  HloInstruction* other = b.Op(HloOpcode::kNegate, F32({3}), {}, "other");
  absl::Status st = c->ReplaceAllUsesWith(other);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("c"));
  EXPECT_EQ(b.comp->root_instruction(), c);
  // Layout differences are compatible.
  HloInstruction* laid = b.Op(HloOpcode::kCopy,
                              Shape::MakeArrayWithLayout(PrimitiveType::F32, {2}, {0}), {x}, "laid");
  EXPECT_TRUE(c->ReplaceAllUsesWith(laid).ok());
  EXPECT_EQ(b.comp->root_instruction(), laid);
}

// ---------------------------------------------------------------------------
// Computation mutators

TEST(ComputationTest, ReplaceInstructionChecksShapes) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({2}), "x");
  HloInstruction* n = b.Op(HloOpcode::kNegate, F32({2}), {x}, "n");
  HloInstruction* bad = b.Op(HloOpcode::kBroadcast, F32({2, 2}), {x}, "bad");
  b.comp->set_root_instruction(n);
  absl::Status st = b.comp->ReplaceInstruction(n, bad);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("not compatible"));
  EXPECT_EQ(b.comp->root_instruction(), n);
  EXPECT_EQ(n->parent(), b.comp);
}

TEST(ComputationTest, ReplaceInstructionCarriesMetadataWhenAbsent) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({2}), "x");
  HloInstruction* e = b.Op(HloOpcode::kExp, F32({2}), {x}, "e");
  HloInstruction* n = b.Op(HloOpcode::kNegate, F32({2}), {e}, "n");
  HloInstruction* r = b.Op(HloOpcode::kCopy, F32({2}), {n}, "r");
  b.comp->set_root_instruction(r);
  n->set_metadata("op_name=\"neg\"");
  n->mutable_frontend_attributes()->Set("k", "v");

  HloInstruction* repl = b.Op(HloOpcode::kAbs, F32({2}), {x}, "repl");
  ASSERT_TRUE(b.comp->ReplaceInstruction(n, repl).ok());
  EXPECT_EQ(repl->metadata(), "op_name=\"neg\"");
  ASSERT_NE(repl->frontend_attributes().Find("k"), nullptr);
  EXPECT_EQ(*repl->frontend_attributes().Find("k"), "v");
  EXPECT_THAT(r->operands(), ElementsAre(repl));
  EXPECT_EQ(n->parent(), nullptr);
  // e was only used by n: removed with it.
  EXPECT_EQ(e->parent(), nullptr);
  EXPECT_EQ(b.comp->instruction_count(), 3);  // x, r, repl
  ExpectConsistent(*b.comp);

  // A replacement with its own metadata keeps it.
  HloInstruction* repl2 = b.Op(HloOpcode::kSign, F32({2}), {x}, "repl2");
  repl2->set_metadata("op_name=\"own\"");
  FrontendAttributes own;
  own.Set("mine", "1");
  repl2->set_frontend_attributes(own);
  ASSERT_TRUE(b.comp->ReplaceInstruction(repl, repl2).ok());
  EXPECT_EQ(repl2->metadata(), "op_name=\"own\"");
  EXPECT_EQ(repl2->frontend_attributes(), own);
  // Replacing the root moves the root.
  HloInstruction* root2 = b.Op(HloOpcode::kCopy, F32({2}), {repl2}, "root2");
  ASSERT_TRUE(b.comp->ReplaceInstruction(r, root2).ok());
  EXPECT_EQ(b.comp->root_instruction(), root2);
  // Replacing with itself is a no-op.
  EXPECT_TRUE(b.comp->ReplaceInstruction(root2, root2).ok());
  EXPECT_EQ(root2->parent(), b.comp);
}

TEST(ComputationTest, RemoveInstructionErrors) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({2}), "x");
  HloInstruction* n = b.Op(HloOpcode::kNegate, F32({2}), {x}, "n");
  b.comp->set_root_instruction(n);
  absl::Status with_users = b.comp->RemoveInstruction(x);
  EXPECT_FALSE(with_users.ok());
  EXPECT_THAT(std::string(with_users.message()), HasSubstr("user"));
  absl::Status root = b.comp->RemoveInstruction(n);
  EXPECT_FALSE(root.ok());
  EXPECT_THAT(std::string(root.message()), HasSubstr("root"));
  EXPECT_EQ(b.comp->instruction_count(), 2);
  // An instruction of another computation.
  HloComputation* other = b.module->AddComputation(std::make_unique<HloComputation>("other"));
  HloInstruction* o = other->AddInstruction(HloInstruction::CreateParameter(0, F32({}), "o"));
  EXPECT_FALSE(b.comp->RemoveInstruction(o).ok());
  EXPECT_EQ(o->parent(), other);
}

TEST(ComputationTest, RemoveInstructionRelaysControlDependencies) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({}), "x");
  HloInstruction* a = b.Op(HloOpcode::kNegate, F32({}), {x}, "a");
  HloInstruction* a2 = b.Op(HloOpcode::kNegate, F32({}), {x}, "a2");
  HloInstruction* mid = b.Op(HloOpcode::kExp, F32({}), {x}, "mid");
  HloInstruction* c = b.Op(HloOpcode::kAbs, F32({}), {x}, "c");
  HloInstruction* c2 = b.Op(HloOpcode::kAbs, F32({}), {x}, "c2");
  HloInstruction* t = b.Op(HloOpcode::kTuple, Shape::MakeTuple({}), {a, a2, c, c2}, "t");
  b.comp->set_root_instruction(t);
  a->AddControlDependencyTo(mid);
  a2->AddControlDependencyTo(mid);
  mid->AddControlDependencyTo(c);
  mid->AddControlDependencyTo(c2);
  ASSERT_TRUE(b.comp->RemoveInstruction(mid).ok());
  EXPECT_THAT(a->control_successors(), UnorderedElementsAre(c, c2));
  EXPECT_THAT(a2->control_successors(), UnorderedElementsAre(c, c2));
  EXPECT_THAT(c->control_predecessors(), UnorderedElementsAre(a, a2));
  EXPECT_THAT(c2->control_predecessors(), UnorderedElementsAre(a, a2));
  EXPECT_TRUE(mid->control_predecessors().empty());
  EXPECT_TRUE(mid->control_successors().empty());
  EXPECT_EQ(mid->parent(), nullptr);
  EXPECT_THAT(x->users(), UnorderedElementsAre(a, a2, c, c2));
  ExpectConsistent(*b.comp);
}

TEST(ComputationTest, RemoveInstructionAndUnusedOperands) {
  Builder b;
  HloInstruction* p = b.Param(0, F32({2}), "p");
  HloInstruction* tok = b.Op(HloOpcode::kAfterAll, Shape::MakeToken(), {}, "tok");
  HloInstruction* send = b.Op(HloOpcode::kSend,
                              Shape::MakeTuple({F32({2}), Shape::MakeArray(PrimitiveType::U32, {}),
                                                Shape::MakeToken()}),
                              {p, tok}, "send");
  HloInstruction* shared = b.Op(HloOpcode::kExp, F32({2}), {p}, "shared");
  HloInstruction* side = HloInstruction::Create(HloOpcode::kCustomCall, F32({2}), {p}).release();
  std::unique_ptr<HloInstruction> side_owner(side);
  side->set_custom_call_target("foo");
  side->SetRawAttribute("custom_call_has_side_effect", "true");
  HloInstruction* side_in = b.comp->AddInstruction(std::move(side_owner));
  HloInstruction* pure = b.Op(HloOpcode::kCustomCall, F32({2}), {p}, "pure");
  HloInstruction* dead1 = b.Op(HloOpcode::kNegate, F32({2}), {shared}, "dead1");
  HloInstruction* ag = b.Op(HloOpcode::kAllGather, F32({4}), {dead1}, "ag");
  HloInstruction* sum = b.Op(HloOpcode::kAdd, F32({4}), {ag, ag}, "sum");
  HloInstruction* keep = b.Op(HloOpcode::kCopy, F32({2}), {shared}, "keep");
  HloInstruction* top =
      b.Op(HloOpcode::kTuple, Shape::MakeTuple({}), {sum, send, side_in, pure}, "top");
  HloInstruction* root = b.Op(HloOpcode::kTuple, Shape::MakeTuple({}), {keep}, "root");
  b.comp->set_root_instruction(root);

  ASSERT_TRUE(b.comp->RemoveInstructionAndUnusedOperands(top).ok());
  EXPECT_EQ(top->parent(), nullptr);
  EXPECT_EQ(sum->parent(), nullptr);
  EXPECT_EQ(ag->parent(), nullptr);     // collectives are removed like anything else
  EXPECT_EQ(dead1->parent(), nullptr);
  EXPECT_EQ(pure->parent(), nullptr);   // custom-call without side effect
  EXPECT_EQ(shared->parent(), b.comp);  // still used by keep
  EXPECT_EQ(send->parent(), b.comp);    // side effect
  EXPECT_EQ(tok->parent(), b.comp);     // operand of a kept send
  EXPECT_EQ(side_in->parent(), b.comp);
  EXPECT_EQ(p->parent(), b.comp);       // parameters stay
  ExpectConsistent(*b.comp);

  // The first instruction must be removable.
  EXPECT_FALSE(b.comp->RemoveInstructionAndUnusedOperands(root).ok());
  EXPECT_FALSE(b.comp->RemoveInstructionAndUnusedOperands(shared).ok());
}

TEST(ComputationTest, RemoveInstructionAndUnusedOperandsKeepsControlDependentAndRoot) {
  Builder b;
  HloInstruction* p = b.Param(0, F32({}), "p");
  HloInstruction* ordered = b.Op(HloOpcode::kNegate, F32({}), {p}, "ordered");
  HloInstruction* other = b.Op(HloOpcode::kExp, F32({}), {p}, "other");
  ordered->AddControlDependencyTo(other);
  HloInstruction* dead = b.Op(HloOpcode::kAdd, F32({}), {ordered, ordered}, "dead");
  b.comp->set_root_instruction(other);
  ASSERT_TRUE(b.comp->RemoveInstructionAndUnusedOperands(dead).ok());
  EXPECT_EQ(dead->parent(), nullptr);
  EXPECT_EQ(ordered->parent(), b.comp);
  ExpectConsistent(*b.comp);
}

// Removing most instructions compacts the instruction list; positions,
// post order and later additions must stay right.
TEST(ComputationTest, RemovalCompactionKeepsOrderAndPositions) {
  Builder b;
  HloInstruction* p = b.Param(0, F32({}), "p");
  std::vector<HloInstruction*> chain;
  HloInstruction* prev = p;
  std::vector<HloInstruction*> dead;
  for (int i = 0; i < 300; ++i) {
    dead.push_back(b.Op(HloOpcode::kAbs, F32({}), {p}));
    prev = b.Op(HloOpcode::kNegate, F32({}), {prev});
    chain.push_back(prev);
  }
  b.comp->set_root_instruction(prev);
  for (HloInstruction* d : dead) ASSERT_TRUE(b.comp->RemoveInstruction(d).ok());
  EXPECT_EQ(b.comp->instruction_count(), 301);
  std::vector<HloInstruction*> list = b.comp->instructions();
  ASSERT_EQ(list.size(), 301u);
  EXPECT_EQ(list[0], p);
  for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(list[i + 1], chain[i]);
  HloInstruction* tail = b.Op(HloOpcode::kCopy, F32({}), {prev}, "tail");
  b.comp->set_root_instruction(tail);
  auto order = b.comp->MakeInstructionPostOrder();
  ASSERT_EQ(order.size(), 302u);
  EXPECT_EQ(order.front(), p);
  EXPECT_EQ(order.back(), tail);
  for (size_t i = 0; i < chain.size(); ++i) EXPECT_EQ(order[i + 1], chain[i]);
  // Removed instructions stay readable and say they were removed.
  EXPECT_EQ(dead[0]->parent(), nullptr);
  EXPECT_TRUE(dead[0]->operands().empty());
  EXPECT_EQ(p->user_count(), 1);
  ExpectConsistent(*b.comp);
}

TEST(ComputationTest, ParametersByNumber) {
  Builder b;
  HloInstruction* p1 = b.Param(1, F32({}), "p1");
  HloInstruction* p0 = b.Param(0, F32({}), "p0");
  EXPECT_EQ(b.comp->num_parameters(), 2);
  EXPECT_EQ(b.comp->parameter_instruction(0), p0);
  EXPECT_EQ(b.comp->parameter_instruction(1), p1);
  EXPECT_EQ(b.comp->parameter_instruction(2), nullptr);
  EXPECT_EQ(b.comp->parameter_instruction(-1), nullptr);
  // A gap leaves a null slot.
  b.Param(3, F32({}), "p3");
  EXPECT_EQ(b.comp->parameter_instruction(2), nullptr);
  EXPECT_EQ(b.comp->num_parameters(), 4);
}

// ---------------------------------------------------------------------------
// Post order

// Position of every instruction in `order`; checks each appears exactly once.
absl::flat_hash_map<const HloInstruction*, size_t> Positions(
    const std::vector<HloInstruction*>& order, const HloComputation& comp) {
  absl::flat_hash_map<const HloInstruction*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_TRUE(pos.emplace(order[i], i).second) << order[i]->name() << " twice";
  }
  EXPECT_EQ(static_cast<int64_t>(order.size()), comp.instruction_count());
  for (HloInstruction* inst : comp.instructions()) {
    EXPECT_TRUE(pos.contains(inst)) << inst->name() << " missing";
  }
  return pos;
}

TEST(PostOrderTest, OperandsAndControlPredecessorsFirst) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({}), "x");
  HloInstruction* y = b.Param(1, F32({}), "y");
  HloInstruction* root = b.Op(HloOpcode::kAdd, F32({}), {}, "root");  // operands set below
  HloInstruction* n = b.Op(HloOpcode::kNegate, F32({}), {y}, "n");
  HloInstruction* m = b.Op(HloOpcode::kMultiply, F32({}), {n, x}, "m");
  HloInstruction* unused = b.Op(HloOpcode::kExp, F32({}), {x}, "unused");
  HloInstruction* ctl = b.Op(HloOpcode::kAbs, F32({}), {x}, "ctl");
  root->AppendOperand(m);
  root->AppendOperand(n);
  b.comp->set_root_instruction(root);
  ctl->AddControlDependencyTo(n);
  auto order = b.comp->MakeInstructionPostOrder();
  auto pos = Positions(order, *b.comp);
  for (HloInstruction* inst : order) {
    for (HloInstruction* operand : inst->operands()) EXPECT_LT(pos[operand], pos[inst]);
    for (HloInstruction* pred : inst->control_predecessors()) EXPECT_LT(pos[pred], pos[inst]);
  }
  EXPECT_LT(pos[ctl], pos[n]);
  EXPECT_TRUE(pos.contains(unused));
}

TEST(PostOrderTest, DeepChainDoesNotOverflowTheStack) {
  Builder b;
  constexpr int kDepth = 100000;
  HloInstruction* prev = b.Param(0, F32({}), "p");
  for (int i = 0; i < kDepth; ++i) prev = b.Op(HloOpcode::kNegate, F32({}), {prev});
  b.comp->set_root_instruction(prev);
  // A second deep chain hanging off control edges.
  HloInstruction* cprev = b.Op(HloOpcode::kConstant, F32({}), {}, "c0");
  for (int i = 0; i < kDepth; ++i) {
    HloInstruction* next = b.Op(HloOpcode::kConstant, F32({}), {});
    cprev->AddControlDependencyTo(next);
    cprev = next;
  }
  auto order = b.comp->MakeInstructionPostOrder();
  ASSERT_EQ(static_cast<int64_t>(order.size()), b.comp->instruction_count());
  auto pos = Positions(order, *b.comp);
  for (HloInstruction* inst : order) {
    for (HloInstruction* operand : inst->operands()) ASSERT_LT(pos[operand], pos[inst]);
    for (HloInstruction* pred : inst->control_predecessors()) ASSERT_LT(pos[pred], pos[inst]);
  }
  EXPECT_EQ(order.back()->opcode(), HloOpcode::kConstant);
}

TEST(PostOrderTest, CycleVisitsEveryInstructionOnce) {
  Builder b;
  HloInstruction* p = b.Param(0, F32({}), "p");
  HloInstruction* a = b.Op(HloOpcode::kAdd, F32({}), {p}, "a");
  HloInstruction* c = b.Op(HloOpcode::kNegate, F32({}), {a}, "c");
  a->AppendOperand(c);  // a <-> c through operands
  HloInstruction* d = b.Op(HloOpcode::kExp, F32({}), {p}, "d");
  HloInstruction* e = b.Op(HloOpcode::kExp, F32({}), {p}, "e");
  d->AddControlDependencyTo(e);
  e->AddControlDependencyTo(d);  // a control cycle
  HloInstruction* self = b.Op(HloOpcode::kAdd, F32({}), {p}, "self");
  self->AppendOperand(self);
  auto order = b.comp->MakeInstructionPostOrder();
  Positions(order, *b.comp);
}

// The walk's order written independently (recursive: the graphs here are
// small): roots (no users, no control successors) in list order; from each
// instruction its control predecessors last to first, then its operands
// first to last, each if not yet visited; then the instruction.
std::vector<const HloInstruction*> ReferencePostOrder(const HloComputation& comp) {
  std::vector<const HloInstruction*> order;
  absl::flat_hash_set<const HloInstruction*> seen;
  std::function<void(const HloInstruction*)> visit = [&](const HloInstruction* inst) {
    if (inst->parent() != &comp || !seen.insert(inst).second) return;
    const auto& preds = inst->control_predecessors();
    for (auto it = preds.rbegin(); it != preds.rend(); ++it) visit(*it);
    for (const HloInstruction* operand : inst->operands()) visit(operand);
    order.push_back(inst);
  };
  for (const HloInstruction* inst : comp.instructions()) {
    if (inst->users().empty() && inst->control_successors().empty()) visit(inst);
  }
  return order;
}

// IsDependencyChain is true only when the walk's order lists the chosen
// instructions (here the negates) in list order, and it is true for chains:
// random computations (shared and repeated operands, several roots, control
// edges, operands later in the list, cycles), some with their negates in a
// chain through other instructions. Both searches: forward through users
// (the default) and back through operands (HILO_DEPENDENCY_CHAIN_FORWARD=0).
TEST(PostOrderTest, DependencyChainMeansTheWalkListsItInListOrder) {
  for (const char* forward : {"1", "0"}) {
    setenv("HILO_DEPENDENCY_CHAIN_FORWARD", forward, 1);
    SCOPED_TRACE(absl::StrCat("HILO_DEPENDENCY_CHAIN_FORWARD=", forward));
    int chains = 0, not_chains = 0, chains_out_of_post_order_elsewhere = 0;
    for (uint32_t seed = 0; seed < 600; ++seed) {
      std::mt19937 rng(seed);
      Builder b;
      std::vector<HloInstruction*> all = {b.Param(0, F32({}), "p")};
      HloInstruction* last_negate = nullptr;
      const bool chained = seed % 3 == 0;
      const size_t n = 2 + rng() % 30;
      for (size_t k = 1; k < n; ++k) {
        auto pick = [&] {
          // Mostly recent instructions, as a chain of layers would.
          const size_t back = rng() % 3 == 0 ? rng() % k : rng() % std::min<size_t>(k, 3);
          return all[k - 1 - back];
        };
        HloInstruction* inst;
        if (rng() % 3 == 0) {
          inst = b.Op(HloOpcode::kNegate, F32({}), {chained && last_negate ? all.back() : pick()});
          last_negate = inst;
        } else {
          std::vector<HloInstruction*> operands;
          for (size_t a = rng() % 4; a > 0; --a) operands.push_back(pick());
          // In a chained computation, each instruction after a negate depends
          // on the previous instruction, so the negates form a chain.
          if (chained && last_negate != nullptr) operands.push_back(all.back());
          inst = b.Op(HloOpcode::kAdd, F32({}), operands);
        }
        if (rng() % 8 == 0) all[rng() % k]->AddControlDependencyTo(inst);
        all.push_back(inst);
      }
      if (seed % 5 == 4) all[1]->AppendOperand(all[n - 1 - rng() % 2]);  // climbs, maybe a cycle
      std::vector<HloInstruction*> negates;
      for (HloInstruction* inst : b.comp->instructions()) {
        if (inst->opcode() == HloOpcode::kNegate) negates.push_back(inst);
      }
      std::vector<HloInstruction*> walked;
      for (HloInstruction* inst : b.comp->MakeInstructionPostOrder()) {
        if (inst->opcode() == HloOpcode::kNegate) walked.push_back(inst);
      }
      const bool chain = b.comp->IsDependencyChain(negates);
      if (chain) {
        EXPECT_EQ(walked, negates) << "seed " << seed;
        ++chains;
        const std::vector<const HloInstruction*> reference = ReferencePostOrder(*b.comp);
        std::vector<const HloInstruction*> listed;
        for (const HloInstruction* inst : b.comp->instructions()) listed.push_back(inst);
        chains_out_of_post_order_elsewhere += negates.size() > 2 && listed != reference ? 1 : 0;
      } else {
        ++not_chains;
      }
      if (chained && !b.comp->FindCycle().has_value()) {
        EXPECT_TRUE(chain) << "seed " << seed;
      }
    }
    EXPECT_GE(chains, 150);
    EXPECT_GE(not_chains, 150);
    // The case it is for: the whole list is not the walk's order.
    EXPECT_GE(chains_out_of_post_order_elsewhere, 30);
  }
  unsetenv("HILO_DEPENDENCY_CHAIN_FORWARD");
}

// ---------------------------------------------------------------------------
// Names and attributes

TEST(NamesTest, AddInstructionMakesNamesUnique) {
  Builder b;
  HloInstruction* x = b.Param(0, F32({}), "x");
  HloInstruction* x1 = b.Param(1, F32({}), "x");
  HloInstruction* x2 = b.Param(2, F32({}), "x");
  EXPECT_EQ(x->name(), "x");
  EXPECT_EQ(x1->name(), "x.1");
  EXPECT_EQ(x2->name(), "x.2");
  HloInstruction* a = b.Op(HloOpcode::kAdd, F32({}), {x, x1});
  HloInstruction* a1 = b.Op(HloOpcode::kAdd, F32({}), {x, x1});
  EXPECT_EQ(a->name(), "add");
  EXPECT_EQ(a1->name(), "add.1");
  // Names are unique across computations of the module.
  HloComputation* other = b.module->AddComputation(std::make_unique<HloComputation>("other"));
  HloInstruction* ox = other->AddInstruction(HloInstruction::CreateParameter(0, F32({}), "x"));
  EXPECT_EQ(ox->name(), "x.3");
  // A name reserved explicitly is skipped.
  EXPECT_TRUE(b.module->ReserveInstructionName("add.2"));
  EXPECT_FALSE(b.module->ReserveInstructionName("add.2"));
  HloInstruction* a3 = b.Op(HloOpcode::kAdd, F32({}), {x, x1});
  EXPECT_EQ(a3->name(), "add.3");
  // A hint that already looks suffixed still gets a fresh name.
  HloInstruction* x1b = b.Param(3, F32({}), "x.1");
  EXPECT_NE(x1b->name(), "x.1");
  EXPECT_TRUE(b.module->IsInstructionNameUsed(x1b->name()));
  // Unique ids differ.
  absl::flat_hash_set<int64_t> ids;
  for (HloComputation* comp : b.module->computations()) {
    for (HloInstruction* inst : comp->instructions()) EXPECT_TRUE(ids.insert(inst->unique_id()).second);
  }
  // Computation names are unique too.
  HloComputation* other2 = b.module->AddComputation(std::make_unique<HloComputation>("other"));
  EXPECT_EQ(other2->name(), "other.1");
  EXPECT_EQ(b.module->GetComputationWithName("other.1"), other2);
  EXPECT_TRUE(b.comp->IsEntryComputation());
  EXPECT_FALSE(other->IsEntryComputation());
}

TEST(FrontendAttributesTest, SetFindRemove) {
  FrontendAttributes fa;
  EXPECT_TRUE(fa.empty());
  EXPECT_EQ(fa.Find("a"), nullptr);
  fa.Set("b", "2");
  fa.Set("d", "4");
  fa.Set("a", "1");
  fa.Set("c", "3");
  std::vector<std::string> keys;
  for (const auto& [k, v] : fa.entries()) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("a", "b", "c", "d"));
  ASSERT_NE(fa.Find("c"), nullptr);
  EXPECT_EQ(*fa.Find("c"), "3");
  // Overwrite in place.
  fa.Set("b", "two");
  EXPECT_EQ(fa.size(), 4u);
  EXPECT_EQ(*fa.Find("b"), "two");
  EXPECT_EQ(fa.entries()[1].first, "b");
  EXPECT_TRUE(fa.Remove("a"));
  EXPECT_FALSE(fa.Remove("a"));
  EXPECT_FALSE(fa.Contains("a"));
  EXPECT_TRUE(fa.Contains("d"));
}

// ---------------------------------------------------------------------------
// Interned attribute names and the out-of-line rare attributes
// ---------------------------------------------------------------------------

TEST(AttributeNamesTest, EqualNamesShareOneLongLivedCopy) {
  absl::string_view builtin = InternAttributeName(std::string("replica_groups"));
  EXPECT_EQ(builtin, "replica_groups");
  EXPECT_EQ(builtin.data(), InternAttributeName("replica_groups").data());
  // A name XLA does not define is copied once; the view outlives its source.
  absl::string_view unknown;
  {
    std::string source = "my_custom_attribute_" + std::to_string(12345);
    unknown = InternAttributeName(source);
    source.assign(source.size(), 'z');
  }
  EXPECT_EQ(unknown, "my_custom_attribute_12345");
  EXPECT_EQ(unknown.data(), InternAttributeName("my_custom_attribute_12345").data());
  EXPECT_TRUE(InternAttributeName("").empty());
  // The empty name too is one pointer, however it is made.
  EXPECT_EQ(InternAttributeName(std::string()).data(), AttributeName().view().data());
  EXPECT_TRUE(AttributeName() == AttributeName(""));
  EXPECT_TRUE(AttributeName().empty());
  // Names that share the quick table's slot key still intern separately.
  EXPECT_NE(InternAttributeName("slice").data(), InternAttributeName("sxxce").data());
  EXPECT_EQ(InternAttributeName("sxxce"), "sxxce");
}

TEST(AttributeNamesTest, ThreadsInterningTheSameNamesAgree) {
  constexpr int kNames = 2000;
  std::vector<absl::string_view> first(kNames), second(kNames);
  auto intern_all = [](std::vector<absl::string_view>* out) {
    for (int i = 0; i < kNames; ++i) (*out)[i] = InternAttributeName("threaded_" + std::to_string(i));
  };
  std::thread a(intern_all, &first), b(intern_all, &second);
  a.join();
  b.join();
  for (int i = 0; i < kNames; ++i) {
    EXPECT_EQ(first[i].data(), second[i].data()) << i;
    EXPECT_EQ(first[i], "threaded_" + std::to_string(i));
  }
}

TEST(HloInstructionTest, RareAttributesDefaultUntilSetAndAttributeOrderOwnsNoText) {
  auto inst = HloInstruction::Create(HloOpcode::kAllGather, Shape::MakeArray(PrimitiveType::F32, {8}));
  EXPECT_FALSE(inst->replica_groups().has_value());
  EXPECT_FALSE(inst->source_target_pairs().has_value());
  EXPECT_FALSE(inst->backend_config().has_value());
  EXPECT_FALSE(inst->backend_config_is_dict());
  EXPECT_EQ(inst->api_version(), 1);
  EXPECT_TRUE(inst->custom_call_target().empty());
  EXPECT_TRUE(inst->sharding().empty());
  EXPECT_TRUE(inst->literal_text().empty());
  EXPECT_TRUE(inst->raw_attributes().empty());
  EXPECT_TRUE(inst->called_computation_attributes().empty());
  EXPECT_TRUE(inst->control_predecessors().empty());
  EXPECT_EQ(inst->dot_dimension_numbers(), DotDimensionNumbers{});
  EXPECT_EQ(inst->raw_attribute("anything"), nullptr);
  EXPECT_FALSE(inst->RemoveRawAttribute("anything"));

  inst->set_replica_groups(ReplicaGroups::Explicit({{0, 1}, {2, 3}}));
  inst->set_sharding("{replicated}");
  inst->set_backend_config(std::string("{\"k\":1}"), true);
  inst->SetRawAttribute("extra", "42");
  EXPECT_EQ(inst->replica_groups()->ToString(), "{{0,1},{2,3}}");
  EXPECT_EQ(inst->sharding(), "{replicated}");
  EXPECT_TRUE(inst->backend_config_is_dict());
  EXPECT_EQ(*inst->raw_attribute("extra"), "42");
  // Another instruction still sees the defaults.
  auto other = HloInstruction::Create(HloOpcode::kAllGather, Shape::MakeArray(PrimitiveType::F32, {8}));
  EXPECT_FALSE(other->replica_groups().has_value());
  EXPECT_TRUE(other->sharding().empty());

  {
    std::string temporary = "replica_groups";
    inst->AppendAttributeName(temporary);
    inst->AppendAttributeName(std::string("extra"));
    temporary.assign(temporary.size(), 'x');
  }
  EXPECT_THAT(inst->attribute_order(), ElementsAre("replica_groups", "extra"));
}

// The collective group holds channel_id and the flags; other ops (send,
// custom-call) get it on first write, and each instruction has its own.
TEST(HloInstructionTest, GroupedAttributesBelongToOneInstruction) {
  auto send = HloInstruction::Create(HloOpcode::kSend, Shape::MakeToken());
  auto ag = HloInstruction::Create(HloOpcode::kAllGather, Shape::MakeArray(PrimitiveType::F32, {8}));
  EXPECT_FALSE(send->channel_id().has_value());
  send->set_channel_id(7);
  EXPECT_EQ(send->channel_id(), 7);
  EXPECT_FALSE(ag->channel_id().has_value());
  ag->set_use_global_device_ids(true);
  ag->set_constrain_layout(false);
  EXPECT_EQ(ag->use_global_device_ids(), true);
  EXPECT_EQ(ag->constrain_layout(), false);
  EXPECT_FALSE(send->use_global_device_ids().has_value());
  EXPECT_FALSE(ag->dimensions().has_value());
  EXPECT_EQ(ag->collective_dimension(), -1);
  ag->set_dimensions({0});
  EXPECT_EQ(ag->collective_dimension(), 0);
  EXPECT_FALSE(send->dimensions().has_value());
  ag->set_source_target_pairs(std::vector<std::pair<int64_t, int64_t>>{{0, 1}});
  EXPECT_EQ(ag->source_target_pairs()->size(), 1u);
  EXPECT_FALSE(send->source_target_pairs().has_value());
  ag->set_metadata("op_name=\"x\"");
  EXPECT_EQ(ag->metadata(), "op_name=\"x\"");
  ag->set_metadata("");
  EXPECT_TRUE(ag->metadata().empty());
}

// Parameter numbers and tuple indices share a field: each reads -1 on the
// other opcode.
TEST(HloInstructionTest, ParameterNumberAndTupleIndexDependOnTheOpcode) {
  auto p = HloInstruction::CreateParameter(3, Shape::MakeArray(PrimitiveType::F32, {}), "p");
  EXPECT_EQ(p->parameter_number(), 3);
  EXPECT_EQ(p->tuple_index(), -1);
  auto gte = HloInstruction::Create(HloOpcode::kGetTupleElement, Shape::MakeArray(PrimitiveType::F32, {}));
  EXPECT_EQ(gte->tuple_index(), -1);
  gte->set_tuple_index(2);
  EXPECT_EQ(gte->tuple_index(), 2);
  EXPECT_EQ(gte->parameter_number(), -1);
}

// Names that share a quick slot (same length and the same three sampled
// characters) and names outside the vocabulary still look up exactly.
TEST(NameTableTest, CollidingAndUnknownNames) {
  static const std::vector<std::string>* const names = [] {
    auto* v = new std::vector<std::string>();
    for (int i = 0; i < 2000; ++i) v->push_back("op" + std::to_string(i) + "x");
    v->push_back("axb");  // "a?b" names: one slot
    v->push_back("ayb");
    v->push_back("azb");
    return v;
  }();
  NameTable<int> table;
  for (size_t i = 0; i < names->size(); ++i) table.Add((*names)[i], static_cast<int>(i));
  for (size_t i = 0; i < names->size(); ++i) EXPECT_EQ(table.Find((*names)[i]), static_cast<int>(i));
  EXPECT_FALSE(table.Find("awb").has_value());
  EXPECT_FALSE(table.Find("op2000x").has_value());
  EXPECT_FALSE(table.Find("").has_value());
}

TEST(CompactStringTest, EmptyAssignCopyMove) {
  CompactString empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.view(), "");
  CompactString s("metadata text");
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.view(), "metadata text");
  CompactString copy = s;
  s.Assign("changed");
  EXPECT_EQ(copy.view(), "metadata text");
  EXPECT_EQ(s.view(), "changed");
  CompactString moved = std::move(s);
  EXPECT_EQ(moved.view(), "changed");
  copy = copy;  // self-assignment keeps the text
  EXPECT_EQ(copy.view(), "metadata text");
  copy = moved;
  EXPECT_EQ(copy.view(), "changed");
  copy.Assign("");
  EXPECT_TRUE(copy.empty());
  std::string with_nul("a\0b", 3);
  copy.Assign(with_nul);
  EXPECT_EQ(copy.view(), with_nul);
  static_assert(sizeof(CompactString) == sizeof(void*));
}

// An order is one pointer to an interned list: equal orders, however they
// were built (on any thread), are the same list, and erasing every name
// leaves the empty order.
TEST(AttributeOrderTest, AppendEraseAndCompare) {
  static_assert(sizeof(AttributeOrder) == sizeof(void*));
  AttributeOrder order;
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(order.begin(), order.end());
  for (const char* name : {"channel_id", "replica_groups", "dimensions", "frontend_attributes",
                           "metadata", "my_own_attribute"}) {
    order.Append(std::string(name));
  }
  EXPECT_THAT(order, ElementsAre("channel_id", "replica_groups", "dimensions",
                                 "frontend_attributes", "metadata", "my_own_attribute"));
  EXPECT_EQ(order[5], "my_own_attribute");
  AttributeOrder copy = order;
  EXPECT_TRUE(copy == order);
  copy.Erase(0);
  EXPECT_FALSE(copy == order);
  EXPECT_EQ(copy.size(), 5u);
  EXPECT_EQ(copy[0], "replica_groups");
  EXPECT_EQ(order.size(), 6u);  // the copy's change is its own
  order.Append("");
  EXPECT_EQ(order[6], "");

  AttributeOrder rebuilt;
  for (const char* name : {"replica_groups", "dimensions", "frontend_attributes", "metadata",
                           "my_own_attribute"}) {
    rebuilt.Append(name);
  }
  EXPECT_TRUE(rebuilt == copy);
  AttributeOrder other_thread;
  std::thread([&] {
    for (absl::string_view name : copy) other_thread.Append(std::string(name));
  }).join();
  EXPECT_TRUE(other_thread == copy);

  while (!rebuilt.empty()) rebuilt.Erase(rebuilt.size() - 1);
  EXPECT_TRUE(rebuilt == AttributeOrder());
  EXPECT_EQ(rebuilt.size(), 0u);
  rebuilt.Append("x");
  EXPECT_THAT(rebuilt, ElementsAre("x"));
}

// The steps `order + name -> order` a thread has made are kept in a table
// that starts over when 3/4 full: many more distinct steps than it holds,
// made twice in a different order, still give the same interned lists.
TEST(AttributeOrderTest, MoreStepsThanTheStepTableHolds) {
  constexpr int kOrders = 700;  // x 2 steps each: more than the table's 384
  std::vector<AttributeOrder> first(kOrders);
  for (int i = 0; i < kOrders; ++i) {
    first[i].Append(absl::StrCat("step_a", i));
    first[i].Append(absl::StrCat("step_b", i % 7));
  }
  for (int i = kOrders - 1; i >= 0; --i) {
    AttributeOrder again;
    again.Append(absl::StrCat("step_a", i));
    again.Append(absl::StrCat("step_b", i % 7));
    EXPECT_TRUE(again == first[i]) << i;
    EXPECT_THAT(again, ElementsAre(absl::StrCat("step_a", i), absl::StrCat("step_b", i % 7)));
    if (i > 0) {
      EXPECT_FALSE(again == first[i - 1]);
    }
  }
}

TEST(ShapeTest, InlineDimensionsBeyondTheInlineCapacity) {
  Shape shape = Shape::MakeArrayWithLayout(PrimitiveType::F32, {1, 2, 3, 4, 5, 6, 7},
                                           {6, 5, 4, 3, 2, 1, 0});
  shape.set_dynamic_dimension(6, true);
  EXPECT_EQ(shape.ToString(), "f32[1,2,3,4,5,6,<=7]{6,5,4,3,2,1,0}");
  Shape copy = shape;
  EXPECT_EQ(copy, shape);
  copy.set_dimensions(0, 9);
  EXPECT_NE(copy, shape);
  EXPECT_FALSE(shape.is_static());
  EXPECT_EQ(shape.elements(), 5040);
}

TEST(ReplicaGroupsTest, CopiesShareContentsAndEqualityIsByValue) {
  ReplicaGroups a = ReplicaGroups::Explicit({{0, 1}, {2, 3}});
  ReplicaGroups copy = a;
  EXPECT_TRUE(copy.SharesContentsWith(a));
  ReplicaGroups b = ReplicaGroups::Explicit({{0, 1}, {2, 3}});
  EXPECT_FALSE(b.SharesContentsWith(a));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, ReplicaGroups::Explicit({{0, 2}, {1, 3}}));
  EXPECT_NE(a, ReplicaGroups::Iota({2, 2, {4}, {}}));  // same groups, another form
  EXPECT_TRUE(ReplicaGroupsEqual(a, ReplicaGroups::Iota({2, 2, {4}, {}})));
  // The default value is explicit and empty, and equals an explicit empty list.
  EXPECT_TRUE(ReplicaGroups().empty());
  EXPECT_EQ(ReplicaGroups(), ReplicaGroups::Explicit({}));
  EXPECT_EQ(ReplicaGroups().ToString(), "{}");
  EXPECT_EQ(ReplicaGroups::Raw("mesh[a]").raw(), "mesh[a]");
}

}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

// Naming after a hint (HloModule::NameSuffix, HILO_FAST_NAMING): each hint
// counts its own suffixes, in decimal across every change of digit count,
// whichever of more hints than the cache holds come in turn and whatever
// buffer holds the hint; a name already taken is skipped.
TEST(HloModuleNamingTest, EachHintCountsItsOwnSuffixesAcrossDigits) {
  HloModule module("m");
  ASSERT_EQ(module.UniqueInstructionName("bb.7"), "bb.7");  // taken before "bb" counts to it
  absl::flat_hash_map<std::string, int> calls;
  char hint[8];  // one buffer for every hint: the same address, other text
  for (int round = 0; round < 1100; ++round) {
    for (const char* h : {"a", "bb", "c", "bb"}) {
      std::snprintf(hint, sizeof(hint), "%s", h);
      int& k = calls[h];
      int suffix = k++;
      if (std::string(h) == "bb" && suffix >= 7) ++suffix;  // bb.7 skipped
      const std::string want = suffix == 0 ? h : absl::StrCat(h, ".", suffix);
      ASSERT_EQ(module.UniqueInstructionName(hint), want) << round;
    }
  }
  // Instructions named after their opcodes, three in turn: the same scheme.
  auto builder = std::make_unique<HloComputation>("e");
  HloComputation* entry = module.AddComputation(std::move(builder), /*is_entry=*/true);
  const Shape f4 = Shape::MakeArray(PrimitiveType::F32, {4});
  HloInstruction* p = entry->AddInstruction(HloInstruction::CreateParameter(0, f4, "p"));
  for (int i = 0; i < 120; ++i) {
    for (HloOpcode opcode : {HloOpcode::kExp, HloOpcode::kAbs, HloOpcode::kNegate}) {
      HloInstruction* inst = entry->AddInstruction(HloInstruction::Create(opcode, f4, {p}));
      const std::string want = i == 0 ? std::string(HloOpcodeString(opcode))
                                      : absl::StrCat(HloOpcodeString(opcode), ".", i);
      ASSERT_EQ(inst->name(), want);
    }
  }
}

}  // namespace
}  // namespace hilo
