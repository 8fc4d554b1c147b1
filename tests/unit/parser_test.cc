// Tests of the HLO text parser (ParseHloModule) and of the literal reader
// (ParseLiteralElements).
#include <cmath>
#include <functional>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/text/literal_text.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "hilo/text/text_flags.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// Literal elements
// ---------------------------------------------------------------------------

Shape S(PrimitiveType t, std::vector<int64_t> dims = {}) { return Shape::MakeArray(t, dims); }

TEST(LiteralElementsTest, Scalars) {
  auto r = ParseLiteralElements(S(PrimitiveType::F32), "1.5");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].real, 1.5);

  r = ParseLiteralElements(S(PrimitiveType::PRED), "true");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].s, 1);
  r = ParseLiteralElements(S(PrimitiveType::PRED), "false");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].s, 0);

  r = ParseLiteralElements(S(PrimitiveType::F32), "-inf");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isinf((*r)[0].real));
  EXPECT_LT((*r)[0].real, 0);

  r = ParseLiteralElements(S(PrimitiveType::BF16), "nan");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan((*r)[0].real));
  r = ParseLiteralElements(S(PrimitiveType::F32), "-nan");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan((*r)[0].real));

  r = ParseLiteralElements(S(PrimitiveType::F64), "-1.25e-3");
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ((*r)[0].real, -1.25e-3);
  r = ParseLiteralElements(S(PrimitiveType::F32), "2.");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].real, 2.0);
  r = ParseLiteralElements(S(PrimitiveType::F32), "1e+10");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].real, 1e10);
  // Underflow is not an error: it is zero or a denormal.
  r = ParseLiteralElements(S(PrimitiveType::F64), "1e-400");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].real, 0.0);
}

TEST(LiteralElementsTest, IntegersExact) {
  auto r = ParseLiteralElements(S(PrimitiveType::S64), "-9223372036854775808");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].s, INT64_MIN);
  r = ParseLiteralElements(S(PrimitiveType::U64), "18446744073709551615");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].u, UINT64_MAX);
  r = ParseLiteralElements(S(PrimitiveType::S32), "-7");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].s, -7);
  EXPECT_EQ((*r)[0].real, -7.0);
  r = ParseLiteralElements(S(PrimitiveType::S4, {3}), "{-2, -3, -8}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[2].s, -8);
  r = ParseLiteralElements(S(PrimitiveType::U4, {2}), "{5, 15}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[1].u, 15u);
}

TEST(LiteralElementsTest, OutOfRangeIsAnError) {
  struct Case { PrimitiveType type; const char* text; };
  for (const Case& c : {Case{PrimitiveType::S4, "8"}, Case{PrimitiveType::S4, "-9"},
                        Case{PrimitiveType::U4, "16"}, Case{PrimitiveType::U4, "-1"},
                        Case{PrimitiveType::U32, "4294967296"},
                        Case{PrimitiveType::S64, "9223372036854775808"},
                        Case{PrimitiveType::U64, "18446744073709551616"},
                        Case{PrimitiveType::S8, "128"}, Case{PrimitiveType::F16, "-65520"},
                        Case{PrimitiveType::BF16, "1e100"}, Case{PrimitiveType::F32, "1e39"},
                        Case{PrimitiveType::F64, "1e400"},
                        Case{PrimitiveType::F8E4M3FN, "500"},
                        Case{PrimitiveType::PRED, "2"}}) {
    auto r = ParseLiteralElements(S(c.type), c.text);
    EXPECT_FALSE(r.ok()) << PrimitiveTypeName(c.type) << " " << c.text;
  }
  // The largest finite values are fine.
  EXPECT_TRUE(ParseLiteralElements(S(PrimitiveType::F16), "65504").ok());
  EXPECT_TRUE(ParseLiteralElements(S(PrimitiveType::F16), "65519").ok());
  EXPECT_TRUE(ParseLiteralElements(S(PrimitiveType::S4), "7").ok());
  EXPECT_TRUE(ParseLiteralElements(S(PrimitiveType::S4), "-8").ok());
  EXPECT_TRUE(ParseLiteralElements(S(PrimitiveType::F8E4M3FN), "448").ok());
  auto r = ParseLiteralElements(S(PrimitiveType::S4), "8");
  EXPECT_THAT(r.status().message(), HasSubstr("out of range for s4"));
}

TEST(LiteralElementsTest, NanPayload) {
  auto r = ParseLiteralElements(S(PrimitiveType::BF16, {2}), "{-nan(0x7f), -nan(0x3f)}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(std::isnan((*r)[0].real));
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::BF16, {1}), "{nan(0x3ff)}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F8E4M3FN, {1}), "{nan(0x1)}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F8E4M3B11FNUZ, {1}), "{nan(0x1)}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32), "nan(0xzz)").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32), "nan(0x1").ok());
}

TEST(LiteralElementsTest, NestedBracesRowMajor) {
  auto r = ParseLiteralElements(S(PrimitiveType::S32, {2, 2}), "{ {1, 2}, {3, 4} }");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*r)[i].s, i + 1);
  // XLA's index comments.
  r = ParseLiteralElements(S(PrimitiveType::F32, {1, 1, 2}),
                           "{ { /*i0=0*/ { /*i1=0*/ {1, 2} } } }");
  EXPECT_FALSE(r.ok());  // one brace level too many for rank 3
  r = ParseLiteralElements(S(PrimitiveType::F32, {1, 1, 2}), "{ /*i0=0*/ { /*i1=0*/ {1, 2} } }");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[1].real, 2.0);
  // Empty dimensions.
  r = ParseLiteralElements(S(PrimitiveType::F32, {0}), "{}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
  r = ParseLiteralElements(S(PrimitiveType::F32, {2, 0}), "{ {}, {} }");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
  r = ParseLiteralElements(S(PrimitiveType::PRED, {3}), "{1, 0, true}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[2].s, 1);
}

TEST(LiteralElementsTest, CountAndNestingMismatch) {
  // XLA's parser test cases LiteralDimensionsMismatch_1/_2/_3 and LiteralDimensionsError.
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2}), "{1,{2}}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2, 3}), "{1, 2, 3, 4, 5, 6}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2, 3, 2}),
                                    "{{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}}}")
                   .ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2, 3}), "}{1, 2, 3}, {4, 5, 6}}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {3}), "{1, 2}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {1}), "{1, 2}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2}), "{1, }").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2}), "{1 2}").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2}), "{1, 2").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {2}), "{1, 2} x").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32), "").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32), "abc").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::S32), "1.5").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {1}), "{ /* unterminated").ok());
  auto r = ParseLiteralElements(S(PrimitiveType::F32, {3}), "{1, 2}");
  EXPECT_THAT(r.status().message(), HasSubstr("has 2 elements"));
  // Bounded-dynamic dimensions hold up to their bound.
  Shape dyn = S(PrimitiveType::S32, {4});
  dyn.set_dynamic_dimension(0, true);
  EXPECT_TRUE(ParseLiteralElements(dyn, "{1, 2}").ok());
  EXPECT_FALSE(ParseLiteralElements(dyn, "{1, 2, 3, 4, 5}").ok());
}

TEST(LiteralElementsTest, Complex) {
  auto r = ParseLiteralElements(S(PrimitiveType::C64), "(1, 2)");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].real, 1.0);
  EXPECT_EQ((*r)[0].imag, 2.0);
  r = ParseLiteralElements(S(PrimitiveType::C128, {2}), "{(-1.5, nan), (0, -inf)}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].real, -1.5);
  EXPECT_TRUE(std::isnan((*r)[0].imag));
  EXPECT_TRUE(std::isinf((*r)[1].imag));
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::C64), "1").ok());
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::C64), "(1e39, 0)").ok());
}

TEST(LiteralElementsTest, Tuple) {
  Shape t = Shape::MakeTuple({S(PrimitiveType::F32, {2, 1}), S(PrimitiveType::F32, {2})});
  auto r = ParseLiteralElements(t, "( { {1}, {2} }, {2, 42} )");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[3].real, 42.0);
  EXPECT_FALSE(ParseLiteralElements(t, "( { {1}, {2} } )").ok());
  EXPECT_FALSE(ParseLiteralElements(Shape::MakeToken(), "").ok());
}

TEST(LiteralElementsTest, ElidedIsAnError) {
  auto r = ParseLiteralElements(S(PrimitiveType::F32, {1000}), "{...}");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("elided"));
}

TEST(LiteralElementsTest, ScalarForArrayBroadcasts) {
  auto r = ParseLiteralElements(S(PrimitiveType::F32, {2, 3}), "1.5");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 6u);
  EXPECT_EQ((*r)[5].real, 1.5);
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::S4, {2}), "9").ok());
  // Too large to expand into a vector, but valid text.
  EXPECT_FALSE(ParseLiteralElements(S(PrimitiveType::F32, {100000, 100000}), "0").ok());
  EXPECT_TRUE(ValidateLiteralText(S(PrimitiveType::F32, {100000, 100000}), "0").ok());
  EXPECT_FALSE(ValidateLiteralText(S(PrimitiveType::S4, {2}), "{1, 8}").ok());
}

TEST(LiteralElementsTest, NeverCrashesOnPrefixes) {
  const std::string text = "{ { (1.5e+3, -nan(0x1)), (2, 3) }, { /*c*/ (inf, 0), (1, 1) } }";
  Shape shape = S(PrimitiveType::C64, {2, 2});
  ASSERT_TRUE(ParseLiteralElements(shape, text).ok());
  for (size_t n = 0; n < text.size(); ++n) {
    EXPECT_FALSE(ParseLiteralElements(shape, absl::string_view(text).substr(0, n)).ok()) << n;
  }
}


// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

std::unique_ptr<HloModule> Parse(absl::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// The error message of parsing `text`, which must fail.
std::string ParseError(absl::string_view text) {
  auto m = ParseHloModule(text, "t.hlo");
  EXPECT_FALSE(m.ok()) << "parsed:\n" << text;
  return m.ok() ? "" : std::string(m.status().message());
}

HloInstruction* Find(const HloModule& m, absl::string_view name) {
  for (HloComputation* c : m.computations()) {
    for (HloInstruction* i : c->instructions()) {
      if (i->name() == name) return i;
    }
  }
  ADD_FAILURE() << "no instruction " << name;
  return nullptr;
}

// Integer lists (`dimensions={...}`) are read by a fast path when short,
// non-negative and without spaces, and by the general reader otherwise:
// both give the same values, at and past the fast path's limits (16
// values, 18 digits), and the general reader still reports the errors.
TEST(ParserTest, IntegerListsAtTheFastPathsLimits) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"{}", {}},
      {"{0}", {0}},
      {"{1,0}", {1, 0}},
      {"{10,2,345}", {10, 2, 345}},
      {"{007,08}", {7, 8}},
      {"{1, 0}", {1, 0}},
      {"{1,}", {1}},  // the general reader allows a trailing comma
      {"{-1,2}", {-1, 2}},
      {"{999999999999999999}", {999999999999999999}},
      {"{9223372036854775807}", {9223372036854775807}},
      {"{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}",
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
      {"{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}",
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
  };
  for (const auto& [list, values] : cases) {
    auto m = Parse(absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), dimensions=",
                                list, "\n}\n"));
    ASSERT_NE(m, nullptr) << list;
    ASSERT_TRUE(Find(*m, "a")->dimensions().has_value()) << list;
    EXPECT_EQ(*Find(*m, "a")->dimensions(), values) << list;
  }
  for (const char* list : {"{1,,2}", "{,1}", "{1;2}", "{99999999999999999999}"}) {
    EXPECT_THAT(ParseError(absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), "
                                        "dimensions=",
                                        list, "\n}\n")),
                ::testing::AnyOf(HasSubstr("integer"), HasSubstr("expected")))
        << list;
  }
}

TEST(ParserTest, HeaderTypedAndVerbatimInOrder) {
  auto m = Parse(R"(HloModule m, is_scheduled=true, replica_count=4, entry_computation_layout={(f32[2]{0})->f32[2]{0}}, num_partitions=2, input_output_alias={ {0}: (0, {}, may-alias) }

ENTRY e {
  ROOT p = f32[2]{0} parameter(0)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name(), "m");
  EXPECT_TRUE(m->has_header());
  EXPECT_EQ(m->replica_count(), 4);
  EXPECT_EQ(m->num_partitions(), 2);
  ASSERT_EQ(m->header_attributes().size(), 3u);
  EXPECT_EQ(m->header_attributes()[0].name, "is_scheduled");
  EXPECT_EQ(m->header_attributes()[0].value, "true");
  EXPECT_EQ(m->header_attributes()[1].value, "{(f32[2]{0})->f32[2]{0}}");
  EXPECT_EQ(m->header_attributes()[2].value, "{ {0}: (0, {}, may-alias) }");
  EXPECT_THAT(m->header_order(),
              ::testing::ElementsAre("is_scheduled", "replica_count", "entry_computation_layout",
                                     "num_partitions", "input_output_alias"));
}

TEST(ParserTest, HeaderlessModuleAndDefaults) {
  auto m = Parse(R"(add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  sum = f32[] add(a, b)
  unused = f32[] multiply(a, b)
}
main {
  x = f32[] parameter(0)
  ROOT c = f32[] call(x, x), to_apply=add
})");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->has_header());
  // No ENTRY: the last computation is the entry (XLA's rule).
  EXPECT_EQ(m->entry_computation()->name(), "main");
  // No ROOT: the last instruction is the root.
  EXPECT_EQ(m->GetComputationWithName("add")->root_instruction()->name(), "unused");
  EXPECT_EQ(Find(*m, "c")->to_apply(), m->GetComputationWithName("add"));
}

// Instruction shapes are parsed once per distinct text (the parser's shape
// cache); every instruction must still get exactly the shape it wrote.
TEST(ParserTest, RepeatedShapeTextsGiveEachInstructionItsShape) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[2,3]{1,0} negate(a)
  c = f32[2,3]{0,1} negate(b)
  d = f32[2,3] negate(c)
  t = f32[2,3]{1,0:T(8,128)} negate(d)
  u = f32[2,3]{1,0:T(8,128)} negate(t)
  v = f32[<=2,3]{1,0} negate(u)
  ROOT w = f32[<=2,3]{1,0} negate(v)
}
)");
  ASSERT_NE(m, nullptr);
  for (absl::string_view name : {"a", "b", "u", "w"}) {
    EXPECT_EQ(Find(*m, name)->shape().dimensions(), (std::vector<int64_t>{2, 3})) << name;
  }
  EXPECT_EQ(Find(*m, "b")->shape().layout().minor_to_major, (DimensionVector{1, 0}));
  EXPECT_EQ(Find(*m, "c")->shape().layout().minor_to_major, (DimensionVector{0, 1}));
  EXPECT_FALSE(Find(*m, "d")->shape().has_layout());
  EXPECT_EQ(Find(*m, "t")->shape().layout().tail.get(), "T(8,128)");
  EXPECT_EQ(Find(*m, "u")->shape().layout().tail.get(), "T(8,128)");
  EXPECT_FALSE(Find(*m, "u")->shape().is_dynamic_dimension(0));
  EXPECT_TRUE(Find(*m, "w")->shape().is_dynamic_dimension(0));
  EXPECT_FALSE(Find(*m, "w")->shape().is_dynamic_dimension(1));
}

TEST(ParserTest, ALayoutAfterASpaceIsNotLostToARepeatedShapeText) {
  // `f32[2]` is first seen without a layout; the later `f32[2] {0}` (a space
  // before the layout, which XLA accepts) must still get its layout.
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = f32[2] {0} negate(a)
  c = f32[2]  {0} negate(b)
  ROOT d = f32[2] negate(c)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(Find(*m, "a")->shape().has_layout());
  EXPECT_TRUE(Find(*m, "b")->shape().has_layout());
  EXPECT_TRUE(Find(*m, "c")->shape().has_layout());
  EXPECT_FALSE(Find(*m, "d")->shape().has_layout());
}

TEST(ParserTest, ShapeFollowedByACommentIsParsedEachTime) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2]/*x*/ parameter(0)
  b = f32[2]{0}/*x*/ negate(a)
  ROOT c = f32[2]/*x*/ negate(b)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(Find(*m, "a")->shape().has_layout());
  EXPECT_TRUE(Find(*m, "b")->shape().has_layout());
  EXPECT_FALSE(Find(*m, "c")->shape().has_layout());
}

TEST(ParserTest, ShapeFollowedByATabIsNotTakenWithWhatFollows) {
  // The cache's candidate text runs to the next space; after a tab that is
  // the next line's indentation, and `b` and `c` have the same candidate.
  auto m = Parse("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"
                 "  b = f32[2]\tnegate(a)\n  c = f32[2]\tnegate(a)\n"
                 "  ROOT d = f32[2] add(b, c)\n}\n");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Find(*m, "c")->opcode(), HloOpcode::kNegate);
  EXPECT_EQ(Find(*m, "d")->operand(1), Find(*m, "c"));
}

// Instructions whose shape is written the same share one shape; changing
// it through one of them copies it first (ir/shared_shape.h).
TEST(ParserTest, RepeatedShapeTextsShareOneShapeCopiedOnWrite) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[2,3]{1,0} negate(a)
  c = f32[2,3]{0,1} negate(b)
  ROOT d = f32[2,3]{1,0} negate(c)
}
)");
  ASSERT_NE(m, nullptr);
  HloInstruction* b = Find(*m, "b");
  HloInstruction* d = Find(*m, "d");
  EXPECT_TRUE(b->shared_shape().SharesWith(Find(*m, "a")->shared_shape()));
  EXPECT_TRUE(b->shared_shape().SharesWith(d->shared_shape()));
  EXPECT_FALSE(b->shared_shape().SharesWith(Find(*m, "c")->shared_shape()));
  b->mutable_shape()->set_dimensions(0, 7);
  EXPECT_EQ(b->shape().ToString(), "f32[7,3]{1,0}");
  EXPECT_EQ(d->shape().ToString(), "f32[2,3]{1,0}");
  EXPECT_EQ(Find(*m, "a")->shape().ToString(), "f32[2,3]{1,0}");
  EXPECT_FALSE(b->shared_shape().SharesWith(d->shared_shape()));
}

// Tuple shapes are cached too: the text runs to the first space outside
// brackets.
TEST(ParserTest, RepeatedTupleShapeTextsGiveEachInstructionItsShape) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = (f32[2]{0}, s32[]) parameter(0)
  b = (f32[2]{0}, s32[]) copy(a)
  c = (f32[2]{0:T(2)}, s32[]) copy(b)
  d = (f32[2]{0:T(2)}, s32[]) copy(c)
  e = (f32[2]{0}, (s32[], token[])) parameter(1)
  f = (f32[2]{0}, (s32[], token[])) copy(e)
  g = (f32[2]{0}, s32[])/*x*/ copy(d)
  h = (f32[2], s32[]) copy(g)
  ROOT t = ((f32[2]{0}, s32[]), (f32[2]{0}, (s32[], token[])), (f32[2], s32[])) tuple(b, f, h)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(Find(*m, "a")->shared_shape().SharesWith(Find(*m, "b")->shared_shape()));
  EXPECT_TRUE(Find(*m, "c")->shared_shape().SharesWith(Find(*m, "d")->shared_shape()));
  EXPECT_TRUE(Find(*m, "e")->shared_shape().SharesWith(Find(*m, "f")->shared_shape()));
  EXPECT_EQ(Find(*m, "b")->shape().ToString(), "(f32[2]{0}, s32[])");
  EXPECT_EQ(Find(*m, "d")->shape().ToString(), "(f32[2]{0:T(2)}, s32[])");
  EXPECT_EQ(Find(*m, "f")->shape().ToString(), "(f32[2]{0}, (s32[], token[]))");
  EXPECT_EQ(Find(*m, "g")->shape().ToString(), "(f32[2]{0}, s32[])");
  EXPECT_EQ(Find(*m, "h")->shape().ToString(), "(f32[2], s32[])");
  EXPECT_EQ(Find(*m, "t")->shape().tuple_shapes_size(), 3);
  EXPECT_EQ(Find(*m, "t")->shape().tuple_shapes(2).ToString(), "(f32[2], s32[])");
}

TEST(ParserTest, ErrorsInRepeatedTupleShapesPointAtTheirPlace) {
  absl::Status status = ParseHloModule(R"(HloModule m
ENTRY e {
  a = (f32[2], s32[]) parameter(0)
  b = (f32[2], s32[]) copy(a)
  ROOT c = (f32[2], s33[]) copy(b)
}
)", "in.hlo").status();
  EXPECT_THAT(status.message(), HasSubstr("in.hlo:5:21: error: unknown element type"));
}

TEST(ParserTest, ErrorsAfterRepeatedShapesPointAtTheirPlace) {
  absl::Status status = ParseHloModule(R"(HloModule m
ENTRY e {
  a = f32[2]{0} parameter(0)
  b = f32[2]{0} negate(a)
  ROOT c = f32[2]{0} bogus(b)
}
)", "in.hlo").status();
  EXPECT_THAT(status.message(), HasSubstr("in.hlo:5:22:"));
}

TEST(ParserTest, SignatureWrittenDifferentlyIsStoredWithItsCanonicalForm) {
  auto m = Parse(R"(HloModule m

ENTRY %e (a: f32[2]{0}) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(f32[2]{0} %p)
}
)");
  ASSERT_NE(m, nullptr);
  const HloComputation::TextInfo& info = m->entry_computation()->text_info();
  EXPECT_TRUE(info.has_signature);
  EXPECT_EQ(m->entry_computation()->written_signature(), "(a: f32[2]{0}) -> f32[2]");
  EXPECT_EQ(m->entry_computation()->canonical_signature(), "(p: f32[2]) -> f32[2]");
  EXPECT_THAT(PrintHloModule(*m), HasSubstr("ENTRY %e (a: f32[2]{0}) -> f32[2] {"));
}

TEST(ParserTest, SignatureKeptAndPercentNames) {
  auto m = Parse(R"(HloModule m

ENTRY %e.1 (p.0: f32[2], q: (s32[], f32[2])) -> f32[2] {
  %p.0 = f32[2]{0} parameter(0)
  %q = (s32[], f32[2]{0}) parameter(1)
  ROOT %n = f32[2]{0} negate(f32[2]{0} %p.0)
}
)");
  ASSERT_NE(m, nullptr);
  const HloComputation* e = m->entry_computation();
  EXPECT_TRUE(e->text_info().has_signature);
  // Written as XLA prints it, so not stored: the printer derives it again.
  EXPECT_EQ(e->written_signature(), "");
  EXPECT_THAT(PrintHloModule(*m),
              HasSubstr("ENTRY %e.1 (p.0: f32[2], q: (s32[], f32[2])) -> f32[2] {"));
  EXPECT_EQ(e->num_parameters(), 2);
  EXPECT_EQ(e->parameter_instruction(1)->name(), "q");
  const HloInstruction* n = Find(*m, "n");
  EXPECT_EQ(n->operand(0)->name(), "p.0");
  EXPECT_TRUE(n->text_flags() & kTextOperandShapes);
  EXPECT_TRUE(n->text_flags() & kTextPercentName);
  EXPECT_EQ(e->root_instruction(), n);
}

TEST(ParserTest, OperandsDefinedLaterAndComputationsReferencedEarly) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  ROOT r = f32[] call(b), to_apply=later
  b = f32[] negate(a)
  a = f32[] parameter(0)
}
later {
  ROOT x = f32[] parameter(0)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Find(*m, "r")->operand(0), Find(*m, "b"));
  EXPECT_EQ(Find(*m, "b")->operand(0), Find(*m, "a"));
  EXPECT_EQ(Find(*m, "r")->to_apply()->name(), "later");
  EXPECT_EQ(m->entry_computation()->name(), "e");
}

TEST(ParserTest, CommentsAreSkipped) {
  auto m = Parse(R"(// leading comment
/* block
   comment */ HloModule m // trailing
ENTRY e {
  a = f32[] parameter(0) /* after */
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  f = f32[] parameter(4)
  g = f32[] parameter(5)
  ROOT t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(a, b, c, d, f, /*index=5*/g) // done
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* t = Find(*m, "t");
  EXPECT_EQ(t->operand_count(), 6);
  EXPECT_EQ(t->shape().tuple_shapes_size(), 6);
  EXPECT_TRUE(t->text_flags() & kTextOperandIndexComments);
}

constexpr absl::string_view kCollectives = R"(HloModule m, replica_count=8

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY e {
  p = f32[8]{0} parameter(0)
  ar = f32[8]{0} all-reduce(p), channel_id=3, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  ag = f32[32]{0} all-gather(p), channel_id=4, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}, constrain_layout=false
  rs = f32[2]{0} reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=add
  mesh = f32[8]{0} all-reduce(p), replica_groups=mesh[x=2,y=4] {x}, to_apply=add
  cp = f32[8]{0} collective-permute(p), source_target_pairs={{0,1},{1,2}}, channel_id=5
  ROOT t = (f32[8]{0}, f32[32]{0}, f32[2]{0}, f32[8]{0}, f32[8]{0}) tuple(ar, ag, rs, mesh, cp)
}
)";

TEST(ParserTest, CollectiveAttributesAreTyped) {
  auto m = Parse(kCollectives);
  ASSERT_NE(m, nullptr);
  const HloInstruction* ar = Find(*m, "ar");
  EXPECT_EQ(ar->channel_id(), 3);
  ASSERT_TRUE(ar->replica_groups().has_value());
  EXPECT_EQ(ar->replica_groups()->form(), ReplicaGroups::Form::kExplicit);
  EXPECT_EQ(ar->replica_groups()->explicit_groups(),
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(ar->use_global_device_ids(), true);
  EXPECT_EQ(ar->to_apply()->name(), "add");
  EXPECT_THAT(ar->attribute_order(),
              ::testing::ElementsAre("channel_id", "replica_groups", "use_global_device_ids",
                                     "to_apply"));
  EXPECT_TRUE(ar->raw_attributes().empty());

  const HloInstruction* ag = Find(*m, "ag");
  ASSERT_TRUE(ag->replica_groups().has_value());
  EXPECT_EQ(ag->replica_groups()->form(), ReplicaGroups::Form::kIota);
  EXPECT_EQ(ag->replica_groups()->iota().num_groups, 2);
  EXPECT_EQ(ag->replica_groups()->iota().group_size, 4);
  EXPECT_EQ(ag->replica_groups()->iota().reshape_dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(ag->replica_groups()->iota().transpose_perm, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ag->collective_dimension(), 0);
  EXPECT_EQ(ag->constrain_layout(), false);

  EXPECT_TRUE(Find(*m, "rs")->replica_groups()->empty());
  const HloInstruction* mesh = Find(*m, "mesh");
  EXPECT_EQ(mesh->replica_groups()->form(), ReplicaGroups::Form::kRaw);
  EXPECT_EQ(mesh->replica_groups()->raw(), "mesh[x=2,y=4] {x}");
  const HloInstruction* cp = Find(*m, "cp");
  ASSERT_TRUE(cp->source_target_pairs().has_value());
  EXPECT_EQ(*cp->source_target_pairs(),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}}));
}

// The parser looks a replica-group or frontend-attribute value up among the
// texts it read before by the bytes at its start, before scanning it: a
// value that only starts with a known text (here `mesh[x=2]`, then
// `mesh[x=2] {x}`) is its own value, and a known text followed by a broken
// value still fails where scanning it fails. (Texts of at least 8 bytes,
// the lookup's key; shorter ones are looked up once scanned.)
TEST(ParserTest, ValuesStartingWithAKnownTextAreTheirOwn) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  a = f32[8]{0} all-gather(p), replica_groups=mesh[x=2], dimensions={0}
  b = f32[8]{0} all-gather(a), replica_groups=mesh[x=2] {x}, dimensions={0}
  c = f32[8]{0} all-gather(b), replica_groups={{0,1},{2,3}}, dimensions={0}
  d = f32[8]{0} all-gather(c), replica_groups={{0,1},{2,3}}, dimensions={0}
  ROOT f = f32[8]{0} all-gather(d), replica_groups=mesh[x=2], dimensions={0}
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Find(*m, "a")->replica_groups()->raw(), "mesh[x=2]");
  EXPECT_EQ(Find(*m, "b")->replica_groups()->raw(), "mesh[x=2] {x}");
  EXPECT_EQ(Find(*m, "f")->replica_groups()->raw(), "mesh[x=2]");
  EXPECT_EQ(Find(*m, "d")->replica_groups()->explicit_groups(),
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(Find(*m, "c")->replica_groups()->SharesContentsWith(*Find(*m, "d")->replica_groups()));
  m = Parse(R"(HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  a = f32[8]{0} negate(p), frontend_attributes={k="vv"}
  b = f32[8]{0} negate(a), frontend_attributes={k="vv"} {w="x"}
  ROOT c = f32[8]{0} negate(b), frontend_attributes={k="vv"}
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(*Find(*m, "a")->frontend_attributes().Find("k"), "vv");
  EXPECT_EQ(*Find(*m, "c")->frontend_attributes().Find("k"), "vv");
  const HloInstruction* b = Find(*m, "b");
  EXPECT_TRUE(b->frontend_attributes().empty());  // not a key->value map: kept raw
  ASSERT_EQ(b->raw_attributes().size(), 1u);
  EXPECT_EQ(b->raw_attributes()[0].value, "{k=\"vv\"} {w=\"x\"}");
  EXPECT_THAT(ParseError(R"(HloModule m
ENTRY e {
  p = f32[8]{0} parameter(0)
  a = f32[8]{0} all-gather(p), replica_groups={{0,1,2}}, dimensions={0}
  ROOT b = f32[8]{0} all-gather(a), replica_groups={{0,1,2}}"x, dimensions={0}
}
)"),
              HasSubstr("unterminated string"));
}

TEST(ParserTest, DotGteConstantParameterAndRawAttributes) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[4,8]{1,0} parameter(0)
  b = f32[4,8,16]{2,1,0} parameter(1)
  d = f32[4,16]{1,0} dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={high,default}
  c = s32[2,2] constant({ {1, 2}, {3, 4} })
  big = f32[1000] constant({...})
  t = (f32[4,16]{1,0}, s32[2,2]) tuple(d, c)
  g = s32[2,2] get-tuple-element(t), index=1
  ROOT s = f32[4,16]{1,0} slice(d), slice={[0:4], [0:16]}, sharding={devices=[2,1]0,1}
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* d = Find(*m, "d");
  EXPECT_EQ(d->dot_dimension_numbers().lhs_batch_dimensions, (std::vector<int64_t>{0}));
  EXPECT_EQ(d->dot_dimension_numbers().rhs_contracting_dimensions, (std::vector<int64_t>{1}));
  ASSERT_EQ(d->raw_attributes().size(), 1u);
  EXPECT_EQ(d->raw_attributes()[0].name, "operand_precision");
  EXPECT_EQ(d->raw_attributes()[0].value, "{high,default}");
  EXPECT_EQ(Find(*m, "a")->parameter_number(), 0);
  EXPECT_EQ(Find(*m, "b")->parameter_number(), 1);
  EXPECT_EQ(Find(*m, "c")->literal_text(), "{ {1, 2}, {3, 4} }");
  EXPECT_EQ(Find(*m, "big")->literal_text(), "{...}");
  EXPECT_EQ(Find(*m, "g")->tuple_index(), 1);
  const HloInstruction* s = Find(*m, "s");
  EXPECT_EQ(*s->raw_attribute("slice"), "{[0:4], [0:16]}");
  EXPECT_EQ(s->sharding(), "{devices=[2,1]0,1}");
}

TEST(ParserTest, CustomCallBackendConfigFrontendAttributesMetadata) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  c1 = f32[2] custom-call(p), custom_call_target="foo\"bar", api_version=API_VERSION_TYPED_FFI, backend_config="{\"k\": 1}\n", frontend_attributes={zeta="1",alpha="a\"b"}, metadata={op_type="Dot" op_name="jit(f)/dot" source_line=12}
  ROOT c2 = f32[2] custom-call(c1), custom_call_target="bar", backend_config={"flag": [1, {"x": 2}]}, custom_call_has_side_effect=true
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* c1 = Find(*m, "c1");
  EXPECT_EQ(c1->custom_call_target(), "foo\"bar");
  EXPECT_EQ(c1->api_version(), 4);
  EXPECT_EQ(c1->backend_config(), "{\"k\": 1}\n");
  EXPECT_FALSE(c1->backend_config_is_dict());
  ASSERT_EQ(c1->frontend_attributes().size(), 2u);
  // Written order is kept, values unescaped.
  EXPECT_EQ(c1->frontend_attributes().entries()[0].first, "zeta");
  EXPECT_EQ(*c1->frontend_attributes().Find("alpha"), "a\"b");
  EXPECT_EQ(c1->metadata(), "op_type=\"Dot\" op_name=\"jit(f)/dot\" source_line=12");
  const HloInstruction* c2 = Find(*m, "c2");
  EXPECT_TRUE(c2->backend_config_is_dict());
  EXPECT_EQ(c2->backend_config(), "{\"flag\": [1, {\"x\": 2}]}");
  EXPECT_EQ(*c2->raw_attribute("custom_call_has_side_effect"), "true");
}

TEST(ParserTest, ControlFlowAndCalledComputations) {
  auto m = Parse(R"(HloModule m
cond {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}
body {
  p = (s32[]) parameter(0)
  ROOT p2 = (s32[]) copy(p)
}
b0 {
  ROOT x = s32[] parameter(0)
}
b1 {
  ROOT y = s32[] parameter(0)
}
ENTRY e {
  z = s32[] constant(0)
  t = (s32[]) tuple(z)
  w = (s32[]) while(t), condition=cond, body=body
  idx = s32[] constant(1)
  c = s32[] conditional(idx, z, z), branch_computations={b0, b1}
  ROOT r = s32[] add(c, z), control-predecessors={w}
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* w = Find(*m, "w");
  EXPECT_EQ(w->while_condition()->name(), "cond");
  EXPECT_EQ(w->while_body()->name(), "body");
  const HloInstruction* c = Find(*m, "c");
  auto branches = c->called_computations("branch_computations");
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_EQ(branches[1]->name(), "b1");
  EXPECT_TRUE(c->called_computation_attributes()[0].braced);
  const HloInstruction* r = Find(*m, "r");
  ASSERT_EQ(r->control_predecessors().size(), 1u);
  EXPECT_EQ(r->control_predecessors()[0], w);
  // The same instruction name in two computations is fine.
  EXPECT_EQ(m->GetComputationWithName("cond")->parameter_instruction(0)->name(), "p");
}

TEST(ParserTest, AsyncOpsWrappedComputationsAndExecutionThread) {
  auto m = Parse(R"(HloModule m
wrapped {
  x = f32[4] parameter(0)
  ROOT y = f32[4] custom-call(x), custom_call_target="foo"
}, execution_thread="host"

ENTRY e {
  p = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(p), calls=wrapped, async_execution_thread="host"
  u = ((f32[4]), f32[4], s32[]) async-update(s)
  d = f32[4] async-done(u)
  cs = ((f32[4]), f32[4], s32[]) custom-call-start(p), custom_call_target="bar"
  ROOT cd = f32[4] custom-call-done(cs)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->GetComputationWithName("wrapped")->execution_thread(), "host");
  const HloInstruction* s = Find(*m, "s");
  EXPECT_EQ(s->opcode(), HloOpcode::kAsyncStart);
  EXPECT_EQ(s->called_computation("calls")->name(), "wrapped");
  EXPECT_EQ(*s->raw_attribute("async_execution_thread"), "\"host\"");
  EXPECT_EQ(Find(*m, "u")->opcode(), HloOpcode::kAsyncUpdate);
  EXPECT_EQ(Find(*m, "d")->opcode(), HloOpcode::kAsyncDone);
  // XLA's sugared form: async ops whose wrapped op is named in the opcode.
  const HloInstruction* cs = Find(*m, "cs");
  EXPECT_EQ(cs->opcode(), HloOpcode::kAsyncStart);
  EXPECT_TRUE(cs->text_flags() & kTextAsyncSugar);
  EXPECT_EQ(cs->custom_call_target(), "bar");
  EXPECT_EQ(Find(*m, "cd")->opcode(), HloOpcode::kAsyncDone);
}

TEST(ParserTest, ShapesLayoutsAndDynamicDims) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[2,<=3,?]{2,1,0:T(8,128)(2,1)S(1)} parameter(0)
  b = bf16[4,4] {1,0} parameter(1)
  t = token[] after-all()
  e = () tuple()
  ROOT r = (f32[2,<=3,?]{2,1,0:T(8,128)(2,1)S(1)}, (), token[], bf16[4,4]{1,0}) tuple(a, e, t, b)
}
)");
  ASSERT_NE(m, nullptr);
  const Shape& a = Find(*m, "a")->shape();
  EXPECT_TRUE(a.is_dynamic_dimension(1));
  EXPECT_EQ(a.dimensions(1), 3);
  EXPECT_TRUE(a.is_unbounded_dimension(2));
  EXPECT_EQ(a.layout().tail.get(), "T(8,128)(2,1)S(1)");
  EXPECT_EQ(a.ToString(), "f32[2,<=3,?]{2,1,0:T(8,128)(2,1)S(1)}");
  EXPECT_EQ(Find(*m, "b")->shape().ToString(), "bf16[4,4]{1,0}");
  EXPECT_TRUE(Find(*m, "t")->shape().IsToken());
  EXPECT_EQ(Find(*m, "e")->shape().tuple_shapes_size(), 0);
}

TEST(ParserTest, XlaConveniences) {
  // Omitted shapes, nested instructions, compact get-tuple-element.
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = (f32[10], s32[]) parameter(0)
  a = f32[10] add(p#0, p#0)
  n = add(a, multiply(a, f32[10] parameter(1)))
  ROOT t = tuple(n, p#1)
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* t = Find(*m, "t");
  EXPECT_EQ(t->shape().ToString(), "(f32[10], s32[])");
  EXPECT_EQ(t->operand(1)->opcode(), HloOpcode::kGetTupleElement);
  EXPECT_EQ(t->operand(1)->tuple_index(), 1);
  const HloInstruction* n = Find(*m, "n");
  EXPECT_EQ(n->shape().ToString(), "f32[10]");
  EXPECT_EQ(n->operand(1)->opcode(), HloOpcode::kMultiply);
  EXPECT_EQ(n->operand(1)->operand(1)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(m->entry_computation()->num_parameters(), 2);
}

// Names are unique in the module: the parser renames a name another
// computation already used (as HloModule::UniqueInstructionName would), names
// nameless nested instructions and compact get-tuple-elements the same way,
// and operands still resolve within their own computation. The module's name
// index, which the parser does not build, is built on first use and knows
// every parsed name.
TEST(ParserTest, NamesAreModuleUniqueAndTheIndexIsBuiltOnDemand) {
  auto m = Parse(R"(HloModule m
c {
  x = f32[] parameter(0)
  add = f32[] add(x, x)
  ROOT x.1 = f32[] negate(add)
}
ENTRY e {
  x = f32[] parameter(0)
  p = (f32[], f32[]) parameter(1)
  x.1 = f32[] multiply(x, x)
  add.1 = f32[] add(x.1, x)
  n = f32[] add(add.1, negate(p#0))
  ROOT r = f32[] call(n), to_apply=c
}
)");
  ASSERT_NE(m, nullptr);
  const HloComputation* entry = m->entry_computation();
  std::vector<std::string> names;
  for (const HloInstruction* inst : entry->instructions()) names.emplace_back(inst->name());
  // x and x.1 were taken by computation c; the nested negate and the compact
  // get-tuple-element (made when the computation's operands are resolved)
  // get their opcode's name.
  EXPECT_THAT(names, ::testing::ElementsAre("x.2", "p", "x.1.1", "add.1", "negate", "n", "r",
                                            "get-tuple-element"));
  const HloInstruction* mul = entry->instructions()[2];
  EXPECT_EQ(mul->opcode(), HloOpcode::kMultiply);
  EXPECT_EQ(mul->operand(0), entry->instructions()[0]);  // this computation's x
  const HloInstruction* add1 = entry->instructions()[3];
  EXPECT_EQ(add1->operand(0), mul);
  EXPECT_EQ(add1->operand(1)->name(), "x.2");
  // The index is complete once built.
  for (absl::string_view used : {"x", "x.1", "x.2", "x.1.1", "add", "add.1", "negate", "r"}) {
    EXPECT_TRUE(m->IsInstructionNameUsed(used)) << used;
  }
  EXPECT_FALSE(m->IsInstructionNameUsed("x.3"));
  EXPECT_EQ(m->UniqueInstructionName("x"), "x.3");
  EXPECT_EQ(m->UniqueInstructionName("negate"), "negate.1");
  // A pass adding an instruction after parsing gets a fresh name too.
  HloComputation* e = m->entry_computation();
  HloInstruction* added =
      e->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, Shape::MakeScalar(PrimitiveType::F32),
                                               {e->root_instruction()}, "n"));
  EXPECT_EQ(added->name(), "n.1");
  // Within one computation a repeated name is still an error.
  EXPECT_FALSE(
      ParseHloModule("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] negate(a)\n}\n")
          .ok());
}

// The parser hands its set of names to the module as the name index
// (HloModule::EndBulkLoad); with HILO_NAME_INDEX_REBUILD=1 the module builds
// its own on demand instead. Either way the index knows every parsed name,
// keeps the names of a removed computation used, and frees a released one.
TEST(ParserTest, TheParsedNameIndexAnswersAsABuiltOne) {
  for (const char* rebuild : {"0", "1"}) {
    SCOPED_TRACE(rebuild);
    setenv("HILO_NAME_INDEX_REBUILD", rebuild, 1);
    auto m = Parse(R"(HloModule m
c {
  x = f32[] parameter(0)
  ROOT y = f32[] negate(x)
}
ENTRY e {
  x = f32[] parameter(0)
  ROOT z = f32[] add(x, x)
}
)");
    unsetenv("HILO_NAME_INDEX_REBUILD");
    ASSERT_NE(m, nullptr);
    for (absl::string_view used : {"x", "x.1", "y", "z"}) {
      EXPECT_TRUE(m->IsInstructionNameUsed(used)) << used;
    }
    EXPECT_FALSE(m->IsInstructionNameUsed("x.2"));
    EXPECT_FALSE(m->ReserveInstructionName("z"));
    EXPECT_EQ(m->UniqueInstructionName("z"), "z.1");
    // c dies: its names stay used (they were, and may still be referred to).
    m->RemoveComputation(m->GetComputationWithName("c"));
    EXPECT_TRUE(m->IsInstructionNameUsed("y"));
    EXPECT_EQ(m->UniqueInstructionName("y"), "y.1");
    EXPECT_EQ(m->UniqueInstructionName("x"), "x.2");
    m->ReleaseInstructionName("y");
    EXPECT_FALSE(m->IsInstructionNameUsed("y"));
    m->ReleaseInstructionName("z");
    EXPECT_FALSE(m->IsInstructionNameUsed("z"));
    EXPECT_TRUE(m->ReserveInstructionName("z"));
    EXPECT_TRUE(m->IsInstructionNameUsed("z"));
  }
}

// A nameless instruction a pass adds is named in place
// (HloModule::NameInstructionUniquely): the same names, in the same order,
// as HloModule::UniqueInstructionName gives for its opcode on a twin module,
// whether the opcode's own name is free, taken by the input, taken by an
// earlier added instruction, released again, or its suffixes are partly
// taken; with the parser's name index and with one built on demand. A name
// given in place is used afterwards, and survives its computation's removal.
TEST(ParserTest, NamesGivenInPlaceAreTheUniqueNames) {
  for (const char* rebuild : {"0", "1"}) {
    SCOPED_TRACE(rebuild);
    setenv("HILO_NAME_INDEX_REBUILD", rebuild, 1);
    constexpr absl::string_view kText = R"(HloModule m
c {
  x = f32[] parameter(0)
  negate.2 = f32[] negate(x)
  ROOT add.1 = f32[] add(negate.2, x)
}
ENTRY e {
  p = f32[] parameter(0)
  add = f32[] add(p, p)
  add.3 = f32[] add(add, p)
  ROOT r = f32[] call(add.3), to_apply=c
}
)";
    auto in_place = Parse(kText);
    auto by_copy = Parse(kText);
    unsetenv("HILO_NAME_INDEX_REBUILD");
    ASSERT_NE(in_place, nullptr);
    ASSERT_NE(by_copy, nullptr);
    HloComputation* e = in_place->entry_computation();
    HloComputation* c = in_place->GetComputationWithName("c");
    HloInstruction* p = e->parameter_instruction(0);
    auto add = [&](HloComputation* comp, HloOpcode opcode) {
      HloInstruction* operand = comp->parameter_instruction(0);
      return comp->AddInstruction(HloInstruction::Create(
          opcode, Shape::MakeScalar(PrimitiveType::F32),
          {operand, operand}, ""));
    };
    std::vector<std::string> got;
    std::vector<std::string> want;
    auto step = [&](HloComputation* comp, HloOpcode opcode) {
      got.emplace_back(add(comp, opcode)->name());
      want.push_back(by_copy->UniqueInstructionName(HloOpcodeString(opcode)));
    };
    step(e, HloOpcode::kMultiply);  // free
    step(e, HloOpcode::kMultiply);  // taken by the one just added
    step(e, HloOpcode::kAdd);       // taken, add.1 in c, add.2 free, add.3 taken
    step(c, HloOpcode::kAdd);
    step(e, HloOpcode::kAdd);
    in_place->ReleaseInstructionName("add");
    by_copy->ReleaseInstructionName("add");
    step(e, HloOpcode::kAdd);  // free again
    step(e, HloOpcode::kAdd);
    in_place->ReleaseInstructionName("multiply.1");
    by_copy->ReleaseInstructionName("multiply.1");
    step(e, HloOpcode::kMultiply);  // the counter goes on: multiply.2
    EXPECT_EQ(got, want);
    EXPECT_THAT(got, ::testing::ElementsAre("multiply", "multiply.1", "add.2", "add.4", "add.5",
                                            "add", "add.6", "multiply.2"));
    for (const std::string& name : got) {
      // multiply.1 was released above.
      EXPECT_EQ(in_place->IsInstructionNameUsed(name), name != "multiply.1") << name;
    }
    EXPECT_FALSE(in_place->ReserveInstructionName("add.4"));
    // c dies, with add.4 in it: the name stays used.
    HloInstruction* call = e->root_instruction();
    e->set_root_instruction(p);
    ASSERT_TRUE(e->RemoveInstruction(call).ok());
    in_place->RemoveComputation(c);
    EXPECT_TRUE(in_place->IsInstructionNameUsed("add.4"));
    EXPECT_EQ(add(e, HloOpcode::kAdd)->name(), "add.7");
  }
}

// Operands are taken as soon as they are known, but a forward reference
// makes the rest of the computation wait: users stay in text order either way.
TEST(ParserTest, UsersFollowTheTextOrderWithForwardReferences) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[] parameter(0)
  early = f32[] negate(p)
  a = f32[] add(p, q)
  q = f32[] negate(p)
  b = f32[] multiply(p, p)
  g = (f32[], f32[]) tuple(p, b)
  c = f32[] add(g#0, p)
  ROOT t = (f32[], f32[], f32[]) tuple(a, c, early)
}
)");
  ASSERT_NE(m, nullptr);
  std::vector<std::string> users;
  for (const HloInstruction* user : Find(*m, "p")->users()) users.emplace_back(user->name());
  EXPECT_THAT(users, ::testing::ElementsAre("early", "a", "q", "b", "g", "c"));
  const HloInstruction* a = Find(*m, "a");
  ASSERT_EQ(a->operand_count(), 2);
  EXPECT_EQ(a->operand(1), Find(*m, "q"));
  EXPECT_EQ(Find(*m, "c")->operand(0)->opcode(), HloOpcode::kGetTupleElement);
}

// An operand shape written in the same bytes as its definition's shape is
// checked by comparing the bytes; every other spelling still goes through
// the shape parser. Both must give the same module.
TEST(ParserTest, DeclaredOperandShapesInEverySpelling) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[2,3]{1,0:T(8,128)} parameter(0)
  q = (f32[2,3]{1,0}, s32[]) parameter(1)
  same = f32[2,3]{1,0:T(8,128)} negate(f32[2,3]{1,0:T(8,128)} %p)
  no_layout = f32[2,3]{1,0} negate(f32[2,3] p)
  spaced = f32[2,3]{1,0} negate(f32[2,3]  {1,0:T(8,128)}   p)
  tuple = (f32[2,3]{1,0}, s32[]) copy((f32[2,3]{1,0}, s32[]) q)
  gte = f32[2,3]{1,0} negate(f32[2,3]{1,0} q#0)
  ROOT t = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, (f32[2,3]{1,0}, s32[]), f32[2,3]{1,0}) tuple(f32[2,3]{1,0:T(8,128)} same, f32[2,3]{1,0} no_layout, f32[2,3]{1,0} spaced, (f32[2,3]{1,0}, s32[]) tuple, f32[2,3]{1,0} gte)
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* p = Find(*m, "p");
  for (absl::string_view name : {"same", "no_layout", "spaced"}) {
    const HloInstruction* inst = Find(*m, name);
    ASSERT_EQ(inst->operand_count(), 1) << name;
    EXPECT_EQ(inst->operand(0), p) << name;
  }
  EXPECT_EQ(Find(*m, "tuple")->operand(0), Find(*m, "q"));
  EXPECT_EQ(Find(*m, "gte")->operand(0)->opcode(), HloOpcode::kGetTupleElement);
  const HloInstruction* root = m->entry_computation()->root_instruction();
  ASSERT_EQ(root->operand_count(), 5);
  EXPECT_EQ(root->operand(0), Find(*m, "same"));
  EXPECT_EQ(root->operand(3), Find(*m, "tuple"));
  EXPECT_EQ(p->users().size(), 3u);
}

// The parser keeps where each shape was written only once an operand's
// shape has been written in the module (Parser::RecordShapeText): an
// operand naming an instruction defined before that has its declared
// shape parsed, one defined after it is compared by bytes; both are
// checked, and both find the operand.
TEST(ParserTest, DeclaredOperandShapesBeforeAndAfterTheFirstOne) {
  constexpr absl::string_view kText = R"(HloModule m
c {
  x = f32[2]{0} parameter(0)
  ROOT y = f32[2]{0} negate(x)
}
ENTRY e {
  before = f32[2]{0} parameter(0)
  first = f32[2]{0} negate(f32[2]{0} before)
  after = f32[2]{0} negate(f32[2]{0} first)
  ROOT r = f32[2]{0} add(f32[2]{0} before, f32[2]{0} after)
}
)";
  auto m = Parse(kText);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Find(*m, "first")->operand(0), Find(*m, "before"));
  EXPECT_EQ(Find(*m, "after")->operand(0), Find(*m, "first"));
  EXPECT_EQ(Find(*m, "r")->operand(0), Find(*m, "before"));
  EXPECT_EQ(Find(*m, "r")->operand(1), Find(*m, "after"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                         "  ROOT n = f32[2] negate(f32[3] p)\n}\n"),
              HasSubstr("the declared operand shape f32[3] does not match the shape of operand 'p'"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                         "  a = f32[2] negate(f32[2] p)\n  ROOT n = f32[2] negate(f32[3] a)\n}\n"),
              HasSubstr("the declared operand shape f32[3] does not match the shape of operand 'a'"));
}

// A name another computation already used is renamed; operands written
// with the name still find this computation's instruction, with or without
// a declared shape.
TEST(ParserTest, RenamedInstructionsAreFoundByTheirWrittenName) {
  auto m = Parse(R"(HloModule m
c {
  x = f32[2]{0} parameter(0)
  ROOT y = f32[2]{0} negate(f32[2]{0} x)
}
ENTRY e {
  x = f32[2]{0} parameter(0)
  n = f32[2]{0} negate(f32[2]{0} x)
  ROOT r = f32[2]{0} add(x, f32[2]{0} n)
}
)");
  ASSERT_NE(m, nullptr);
  const HloComputation* entry = m->entry_computation();
  const HloInstruction* root = entry->root_instruction();
  const HloInstruction* x = root->operand(0);
  EXPECT_EQ(x->parent(), entry);
  EXPECT_NE(x->name(), "x");  // renamed: the module's names are unique
  EXPECT_EQ(root->operand(1)->operand(0), x);
  EXPECT_EQ(m->GetComputationWithName("c")->root_instruction()->operand(0)->name(), "x");
}

// Strings end at the first quote not escaped by an odd run of backslashes.
TEST(ParserTest, QuotesAfterRunsOfBackslashes) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[] parameter(0), metadata={op_name="x\"y" source_file="dir\\"}
  b = f32[] negate(a), metadata={op_name="\\\"}{\\\\"}
  ROOT c = f32[] negate(b), backend_config="}\\\\\""
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Find(*m, "a")->metadata(), R"(op_name="x\"y" source_file="dir\\")");
  EXPECT_EQ(Find(*m, "b")->metadata(), R"(op_name="\\\"}{\\\\")");
  EXPECT_EQ(Find(*m, "c")->backend_config(), R"(}\\")");
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), metadata={op_name=\"x\\\"}\n}\n"),
              HasSubstr("unterminated string"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), sharding=\"\\\\\\\""),
              HasSubstr("unterminated string"));
}

// Decimal integers up to 18 digits are read without overflow checks; 19
// digits go through the checked path, at both ends of int64. A parameter
// number is read as an int64 and must then fit in 32 bits: the message
// names the number read.
TEST(ParserTest, IntegersAtTheEdgesOfInt64) {
  for (const char* n : {"999999999999999999", "1000000000000000000", "9223372036854775807"}) {
    EXPECT_THAT(ParseError(absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(", n,
                                        ")\n}\n")),
                HasSubstr(absl::StrCat("parameter number ", n, " is too large")));
  }
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[] parameter(2147483647)
  ROOT t = (f32[]) tuple(a)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(Find(*m, "a")->parameter_number(), INT32_MAX);
}

TEST(ParserTest, CollectivesWrittenWithTheSameGroupsShareThem) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  a = f32[8] all-gather(p), dimensions={0}, replica_groups={{0,1},{2,3}}
  b = f32[8] all-gather(a), dimensions={0}, replica_groups={{0,1},{2,3}}
  ROOT c = f32[8] all-gather(b), dimensions={0}, replica_groups={{0,2},{1,3}}
}
)");
  ASSERT_NE(m, nullptr);
  const ReplicaGroups& a = *Find(*m, "a")->replica_groups();
  const ReplicaGroups& b = *Find(*m, "b")->replica_groups();
  const ReplicaGroups& c = *Find(*m, "c")->replica_groups();
  EXPECT_TRUE(a.SharesContentsWith(b));
  EXPECT_FALSE(a.SharesContentsWith(c));
  EXPECT_EQ(c.ToString(), "{{0,2},{1,3}}");
}

TEST(ParserTest, LegacyComparisonOpcodesMapToCompare) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[] parameter(0)
  ROOT g = pred[] greater-than-or-equal-to(a, a)
}
)");
  ASSERT_NE(m, nullptr);
  const HloInstruction* g = Find(*m, "g");
  EXPECT_EQ(g->opcode(), HloOpcode::kCompare);
  EXPECT_EQ(*g->raw_attribute("direction"), "GE");
}

// ---------------------------------------------------------------------------
// Errors: message, position, caret
// ---------------------------------------------------------------------------

struct ErrorCase {
  const char* name;
  const char* text;
  const char* position;  // "line:col"
  const char* message;   // substring
};

class ParserErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ParserErrorTest, ClearMessageWithPosition) {
  const ErrorCase& c = GetParam();
  std::string message = ParseError(c.text);
  EXPECT_THAT(message, ::testing::StartsWith(absl::StrCat("t.hlo:", c.position, ": error: ")))
      << message;
  EXPECT_THAT(message, HasSubstr(c.message)) << message;
  // Source line and caret.
  std::vector<std::string> lines = absl::StrSplit(message, '\n');
  ASSERT_EQ(lines.size(), 3u) << message;
  int col = std::stoi(std::string(c.position).substr(std::string(c.position).find(':') + 1));
  EXPECT_EQ(lines[2], std::string(col - 1, ' ') + "^") << message;
}

INSTANTIATE_TEST_SUITE_P(
    All, ParserErrorTest,
    ::testing::Values(
        ErrorCase{"UnknownOpcode", "HloModule m\nENTRY e {\n  ROOT a = f32[] frobnicate()\n}\n",
                  "3:18", "unknown opcode 'frobnicate'"},
        ErrorCase{"UndefinedOperand",
                  "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(c)\n}\n",
                  "4:25", "undefined operand 'c'"},
        ErrorCase{"DuplicateName",
                  "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] parameter(1)\n}\n",
                  "4:3", "duplicate instruction name 'a'"},
        ErrorCase{"BadAttributeValue",
                  "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] broadcast(a), dimensions={x}\n}\n",
                  "4:45", "expected an integer"},
        ErrorCase{"BadBool",
                  "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] all-reduce(a), constrain_layout=maybe\n}\n",
                  "4:51", "expected true or false"},
        ErrorCase{"UnbalancedBrackets",
                  "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] negate(a), metadata={op_name=\"x\"]\n}\n",
                  "4:51", "unbalanced brackets"},
        ErrorCase{"OperandShapeDisagrees",
                  "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[3] negate(f32[3] a)\n}\n",
                  "4:33", "does not match the shape of operand 'a'"},
        ErrorCase{"OperandShapeDisagreesLaterDefinition",
                  "HloModule m\nENTRY e {\n  ROOT b = f32[3] negate(f32[3] a)\n  a = f32[2] parameter(0)\n}\n",
                  "3:33", "does not match the shape of operand 'a'"},
        ErrorCase{"UnknownComputation",
                  "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] call(a), to_apply=nope\n}\n",
                  "4:36", "unknown computation 'nope'"},
        ErrorCase{"Truncated", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n",
                  "2:9", "never closed"},
        ErrorCase{"TruncatedInOperands", "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a",
                  "4:26", "unexpected end of input"},
        // Blank lines after the cut: the error stays at the cut token's line.
        ErrorCase{"TruncatedBeforeBlankLines",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(\n\n  \n",
                  "3:28", "expected an integer as the parameter number"},
        ErrorCase{"NoComputationBeforeBlankLines", "HloModule m\n\n\n", "1:12",
                  "the module has no computation"},
        ErrorCase{"InvalidUtf8", "HloModule m\nENTRY e {\n  a = f32[] parameter(0), metadata={op_name=\"\xff\"}\n}\n",
                  "3:46", "invalid UTF-8"},
        ErrorCase{"DimOverflow", "HloModule m\nENTRY e {\n  ROOT a = f32[99999999999999999999] parameter(0)\n}\n",
                  "3:16", "integer overflow"},
        ErrorCase{"DimOverflowByOne",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[9223372036854775808] parameter(0)\n}\n",
                  "3:16", "integer overflow"},
        ErrorCase{"LoneMinus", "HloModule m\nENTRY e {\n  ROOT a = f32[-] parameter(0)\n}\n",
                  "3:16", "expected an integer as a dimension size"},
        ErrorCase{"NegativeParameterNumber",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(-12)\n}\n", "3:28",
                  "must not be negative"},
        // Parameter numbers and tuple indices are kept in 32 bits.
        ErrorCase{"ParameterNumberPast32Bits",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(2147483648)\n}\n", "3:28",
                  "parameter number 2147483648 is too large (at most 2147483647)"},
        ErrorCase{"TupleIndexPast32Bits",
                  "HloModule m\nENTRY e {\n  t = (f32[]) parameter(0)\n"
                  "  ROOT g = f32[] get-tuple-element(t), index=2147483648\n}\n",
                  "4:46", "tuple index 2147483648 is too large (at most 2147483647)"},
        ErrorCase{"OperandShapeSameTextOtherComputation",
                  "HloModule m\nc {\n  a = f32[2] parameter(0)\n}\nENTRY e {\n  ROOT b = f32[2] negate(f32[2] a)\n}\n",
                  "6:33", "undefined operand 'a'"},
        ErrorCase{"OperandShapeDisagreesAfterSpace",
                  "HloModule m\nENTRY e {\n  a = f32[2]{0} parameter(0)\n  ROOT b = f32[3] negate(f32[3] {0} a)\n}\n",
                  "4:37", "does not match the shape of operand 'a'"},
        ErrorCase{"OperandShapeLongerThanDefinition",
                  "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2,1] negate(f32[2,1] a)\n}\n",
                  "4:37", "does not match the shape of operand 'a'"},
        ErrorCase{"NegativeDim", "HloModule m\nENTRY e {\n  ROOT a = f32[-1] parameter(0)\n}\n",
                  "3:16", "must not be negative"},
        ErrorCase{"BadLiteral", "HloModule m\nENTRY e {\n  ROOT a = s4[] constant(8)\n}\n", "3:26",
                  "out of range for s4"},
        ErrorCase{"LiteralCount", "HloModule m\nENTRY e {\n  ROOT a = f32[2,3] constant({1, 2, 3, 4, 5, 6})\n}\n",
                  "3:30", "expected '{' for dimension 1"},
        ErrorCase{"UnterminatedComment", "HloModule m\nENTRY e {\n  /* never closed\n}\n", "3:3",
                  "unterminated /* comment"},
        ErrorCase{"UnknownType", "HloModule m\nENTRY e {\n  ROOT a = g32[] parameter(0)\n}\n", "3:12",
                  "unknown element type 'g32'"},
        ErrorCase{"TwoRoots",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] parameter(1)\n}\n",
                  "4:3", "only one ROOT"},
        ErrorCase{"TwoEntries",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\nENTRY f {\n  ROOT a = f32[] parameter(0)\n}\n",
                  "5:1", "more than one ENTRY"},
        ErrorCase{"SelfOperand", "HloModule m\nENTRY e {\n  ROOT a = f32[] negate(a)\n}\n", "3:25",
                  "uses itself as an operand"},
        ErrorCase{"SignatureMismatch",
                  "HloModule m\nENTRY e () -> s32[] {\n  ROOT a = f32[] constant(1)\n}\n", "2:15",
                  "does not match its root's shape"},
        ErrorCase{"DuplicateAttribute",
                  "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] copy(a), metadata={}, metadata={}\n}\n",
                  "4:41", "duplicate attribute 'metadata'"},
        ErrorCase{"UndefinedControlPredecessor",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), control-predecessors={x}\n}\n",
                  "3:54", "undefined control predecessor 'x'"},
        ErrorCase{"CompactGteNotTuple",
                  "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a#0)\n}\n",
                  "4:25", "not a tuple"},
        ErrorCase{"BadApiVersion",
                  "HloModule m\nENTRY e {\n  ROOT a = f32[] custom-call(), custom_call_target=\"x\", api_version=API_NOPE\n}\n",
                  "3:69", "unknown api_version"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(ParserErrorTest, NulByte) {
  const std::string text("HloModule m\nENTRY e {\n  a\0 = f32[] parameter(0)\n}\n", 46);
  std::string message = ParseError(text);
  EXPECT_THAT(message, ::testing::StartsWith("t.hlo:3:4: error: NUL byte")) << message;
}

// The input is checked 16 and 8 bytes at a time, then byte by byte: a bad
// byte at any offset, after any number of lines, is reported where it is.
TEST(ParserErrorTest, BadBytesAtEveryOffsetAreLocated) {
  for (int lines = 0; lines < 3; ++lines) {
    for (int k = 0; k < 40; ++k) {
      for (char bad : {'\0', '\xff'}) {
        std::string text = "HloModule m\n";
        for (int l = 0; l < lines; ++l) text += "// a comment line\n";
        text += "// " + std::string(k, 'x');
        text.push_back(bad);
        text += "\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n";
        std::string message = ParseError(text);
        EXPECT_THAT(message, ::testing::StartsWith(absl::StrCat("t.hlo:", lines + 2, ":", k + 4,
                                                                ": error: ")))
            << "lines=" << lines << " k=" << k << " bad=" << int(bad) << "\n" << message;
      }
    }
  }
}

TEST(ParserErrorTest, NestingLimit) {
  std::string deep(kMaxNestingDepth + 5, '(');
  std::string text = absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = ", deep, "f32[]",
                                  std::string(kMaxNestingDepth + 5, ')'), " parameter(0)\n}\n");
  std::string message = ParseError(text);
  EXPECT_THAT(message, HasSubstr("nested more than 512 deep")) << message.substr(0, 200);
  // Just under the limit parses.
  std::string ok = absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = ", std::string(100, '('),
                                "f32[]", std::string(100, ')'), " parameter(0)\n}\n");
  EXPECT_NE(Parse(ok), nullptr);
  // Deep attribute braces.
  std::string braces = absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), x=",
                                    std::string(100000, '{'), "\n}\n");
  EXPECT_THAT(ParseError(braces), HasSubstr("nested more than"));
}

// At most 1,000 attributes on one instruction; the parser counts them
// itself (not through the attribute order), from what the instruction's
// body already listed (a legacy `compare` direction counts as one).
TEST(ParserErrorTest, AttributeCountIsBounded) {
  auto with_attributes = [](absl::string_view root, int n) {
    std::string s = absl::StrCat("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = ", root);
    for (int i = 0; i < n; ++i) absl::StrAppend(&s, ", a", i, "=", i);
    return s + "\n}\n";
  };
  auto ok = Parse(with_attributes("f32[] negate(p)", 1000));
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->entry_computation()->root_instruction()->attribute_order().size(), 1000u);
  std::string message = ParseError(with_attributes("f32[] negate(p)", 1001));
  EXPECT_THAT(message, HasSubstr("more than 1000 attributes on one instruction"));
  EXPECT_THAT(message, HasSubstr("t.hlo:4:")) << message;
  // A compare written the old way (`equal-to(p, p)`) already holds its
  // direction: 999 more fit, 1,000 do not.
  auto legacy = Parse(with_attributes("pred[] equal-to(p, p)", 999));
  ASSERT_NE(legacy, nullptr);
  EXPECT_EQ(legacy->entry_computation()->root_instruction()->attribute_order().size(), 1000u);
  EXPECT_THAT(ParseError(with_attributes("pred[] equal-to(p, p)", 1000)),
              HasSubstr("more than 1000 attributes on one instruction"));
}

TEST(ParserErrorTest, NestedInstructionsAndInlineComputationsAreBounded) {
  auto nested = [](int n) {
    std::string s = "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = ";
    for (int i = 0; i < n; ++i) s += "negate(";
    s += "p";
    s += std::string(n, ')');
    return s + "\n}\n";
  };
  auto m = Parse(nested(500));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry_computation()->instruction_count(), 501);  // p and 500 negates
  EXPECT_THAT(ParseError(nested(600)), HasSubstr("instructions nested more than 512 deep"));

  auto inline_calls = [](int n) {
    std::string body = "ROOT z = f32[] parameter(0)";
    for (int i = 0; i < n; ++i) {
      body = absl::StrCat("a = f32[] parameter(0)\n ROOT c = f32[] call(a), to_apply={ ", body, " }");
    }
    return absl::StrCat("HloModule m\nENTRY e {\n ", body, "\n}\n");
  };
  auto inl = Parse(inline_calls(10));
  ASSERT_NE(inl, nullptr);
  EXPECT_EQ(inl->computation_count(), 11);
  EXPECT_THAT(ParseError(inline_calls(100)), HasSubstr("inline computations nested more than 64"));
}

// A renamed name (the key of the parser's renamed_ map, a copy in its text
// store) stays readable after an inline computation in between: the inline
// computation's resolution set the enclosing store aside instead of clearing
// it (a heap use-after-free under ASan before; found by CI's corpus test).
TEST(ParserTest, RenamedNameSurvivesAnInlineComputation) {
  auto m = Parse(
      "HloModule m\n"
      "f {\n x = f32[] parameter(0)\n ROOT n = f32[] negate(x)\n}\n"
      "ENTRY e {\n x = f32[] parameter(0)\n"
      " c = f32[] call(x), to_apply={ q = f32[] parameter(0) ROOT r = f32[] negate(q) }\n"
      " ROOT a = f32[] add(x, c)\n}\n");
  ASSERT_NE(m, nullptr);
  const HloInstruction* root = m->entry_computation()->root_instruction();
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(root->operand(0)->parent(), m->entry_computation());
}

// The names the parser made up and the shapes' texts are kept per
// computation (seventeenth session): an inline computation between a
// definition and its uses, a name reused in three computations, and a
// duplicate after a renamed name still resolve and fail as before.
TEST(ParserTest, NamesAndShapeTextsArePerComputation) {
  auto m = Parse(R"(HloModule m
f {
  ROOT x = s32[3]{0} parameter(0)
}
ENTRY e {
  x = s32[3]{0} parameter(0)
  c = s32[3]{0} call(s32[3]{0} x), to_apply={ x = s32[3]{0} parameter(0) ROOT r = s32[3]{0} negate(s32[3]{0} x) }
  g = s32[3]{0} call(s32[3]{0} x), to_apply=f
  ROOT a = (s32[3]{0}, s32[3]{0}, s32[3]{0}) tuple(s32[3]{0} x, s32[3]{0} c, s32[3]{0} g)
}
)");
  ASSERT_NE(m, nullptr);
  const HloComputation* entry = m->entry_computation();
  const HloInstruction* root = entry->root_instruction();
  const HloInstruction* x = root->operand(0);
  EXPECT_EQ(x->opcode(), HloOpcode::kParameter);
  EXPECT_EQ(x->parent(), entry);
  const HloInstruction* call = root->operand(1);
  EXPECT_EQ(call->operand(0), x);
  EXPECT_EQ(root->operand(2)->operand(0), x);
  const HloComputation* inline_comp = call->to_apply();
  ASSERT_NE(inline_comp, nullptr);
  EXPECT_EQ(inline_comp->root_instruction()->operand(0)->parent(), inline_comp);
  EXPECT_THAT(ParseError("HloModule m\nf {\n  ROOT x = f32[] parameter(0)\n}\n"
                         "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT x = f32[] negate(x)\n}\n"),
              HasSubstr("duplicate instruction name 'x'"));
}

// A call to a computation defined before it is attached when its
// instruction is read (not kept pending to the end of the module); one
// defined later still resolves at the end. Either way an instruction's
// inline computations come first and named ones follow in written order,
// as when every named call waited for the end.
// The caller may drop the text behind the parse: told every 140 KB or so,
// in increasing offsets, and of the whole text once the module is read.
// Each step spans more than 33 whole 4 KB pages, so that dropping them
// flushes the TLB once instead of invalidating page by page (parser.cc's
// kDoneStep).
TEST(ParserTest, SaysHowFarTheTextIsReadEvery140KBAndAtTheEnd) {
  std::string text = "HloModule m\n\nENTRY e {\n  p = f32[] parameter(0)\n";
  for (int i = 0; i < 40000; ++i) absl::StrAppend(&text, "  n", i, " = f32[] negate(p)\n");
  absl::StrAppend(&text, "  ROOT r = f32[] negate(p)\n}\n");
  ASSERT_GT(text.size(), size_t{1} << 20);
  std::vector<size_t> offsets;
  const std::function<void(size_t)> done_before = [&](size_t offset) { offsets.push_back(offset); };
  auto parsed = ParseHloModule(text, "<input>", done_before);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_GE(offsets.size(), 5u);
  size_t before = 0;
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    EXPECT_GE(offsets[i] - before, size_t{140} << 10) << i;
    EXPECT_LT(offsets[i] - before, (size_t{140} << 10) + 100) << i;  // one line more at most
    EXPECT_GT(offsets[i] / 4096 - before / 4096, 33u) << i;
    before = offsets[i];
  }
  EXPECT_EQ(offsets.back(), text.size());
}

TEST(ParserTest, NamedCallsAttachInTheSameOrderEarlyOrLate) {
  auto m = Parse(
      "HloModule m\n"
      "cond {\n p = s32[] parameter(0)\n ROOT t = pred[] constant(true)\n}\n"
      "ENTRY e {\n x = s32[] parameter(0)\n"
      " w = s32[] while(x), condition=cond, body={ q = s32[] parameter(0) ROOT r = s32[] negate(q) }\n"
      " v = s32[] while(x), condition=cond, body=later\n"
      " ROOT c = s32[] call(w), to_apply=later\n}\n"
      "later {\n y = s32[] parameter(0)\n ROOT n = s32[] negate(y)\n}\n");
  ASSERT_NE(m, nullptr);
  auto names = [](const HloInstruction* inst) {
    std::vector<std::string> out;
    for (const CalledAttributeView& attr : inst->called_computation_attributes()) {
      out.push_back(absl::StrCat(attr.name.view(), "=", attr.computations.at(0)->name()));
    }
    return out;
  };
  const HloInstruction* w = Find(*m, "w");
  ASSERT_EQ(w->called_computation_attributes().size(), 2u);
  EXPECT_EQ(w->called_computation_attributes()[0].name, "body");
  EXPECT_EQ(w->called_computation_attributes()[1].name, "condition");
  EXPECT_EQ(w->while_condition()->name(), "cond");
  EXPECT_THAT(names(Find(*m, "v")), ::testing::ElementsAre("condition=cond", "body=later"));
  EXPECT_THAT(names(Find(*m, "c")), ::testing::ElementsAre("to_apply=later"));
}

TEST(ParserErrorTest, NeverCrashesOnAnyPrefix) {
  std::string text(kCollectives);
  for (size_t n = 0; n < text.size(); ++n) {
    auto m = ParseHloModule(absl::string_view(text).substr(0, n), "cut.hlo");
    if (!m.ok()) {
      EXPECT_THAT(std::string(m.status().message()), ::testing::StartsWith("cut.hlo:")) << n;
    }
  }
}

TEST(ParserErrorTest, LongLineErrorShowsAWindow) {
  std::string text = absl::StrCat("HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), x=\"",
                                  std::string(100000, 'a'), "\", y=", std::string(1000, 'b'),
                                  "}\n}\n");
  std::string message = ParseError(text);
  std::vector<std::string> lines = absl::StrSplit(message, '\n');
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_LT(lines[1].size(), 400u);
  size_t caret = lines[2].find('^');
  ASSERT_NE(caret, std::string::npos);
  EXPECT_EQ(lines[1][caret], '}');
}

}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

TEST(ParserTest, BufferShapesAndNewerOpcodes) {
  // XLA's buffer type `b(shape)` and opcodes added after the spec table.
  const char* text = R"(HloModule m

ENTRY main {
  p = b(s32[4]{0}) parameter(0)
  x = f32[2]{0} parameter(1)
  a = f32[2]{0} acos(x)
  ROOT pin = b(s32[4]{0}) custom-call(p, a), custom_call_target="Pin"
}
)";
  auto module = ParseHloModule(text, "buffer.hlo");
  ASSERT_TRUE(module.ok()) << module.status();
  const HloInstruction* p = (*module)->entry_computation()->parameter_instruction(0);
  ASSERT_TRUE(p->shape().IsBuffer());
  EXPECT_EQ(p->shape().buffer_contents().ToString(), "s32[4]{0}");
  EXPECT_EQ(p->shape().ToString(), "b(s32[4]{0})");
  const std::string printed = PrintHloModule(**module);
  EXPECT_NE(printed.find("b(s32[4]{0}) parameter(0)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("acos("), std::string::npos) << printed;
  auto reparsed = ParseHloModule(printed, "printed.hlo");
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(PrintHloModule(**reparsed), printed);

  auto bad = ParseHloModule("HloModule m\nENTRY e {\n  ROOT p = b(token[]) parameter(0)\n}\n",
                            "bad.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.hlo:3:12: error: a buffer shape must hold an array"),
            std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

// Each named instruction of `m` has the shape written.
void ExpectShapes(const HloModule& m, absl::Span<const std::pair<const char*, const char*>> shapes) {
  for (const auto& [name, shape] : shapes) {
    const HloInstruction* inst = Find(m, name);
    if (inst == nullptr) continue;  // Find reported it
    EXPECT_EQ(inst->shape().ToString(), shape) << name;
  }
}

// Issue 16 (5): the shapes XLA's parser infers (hlo_parser.cc: CanInferShape
// and the maybe_infer_shape calls of CreateInstruction), printed back in full.
TEST(ParserInferShapeTest, ShapesFromCalledComputationsAndAttributes) {
  std::unique_ptr<HloModule> m = Parse(R"(
HloModule infer
%neg (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %n = negate(%x)
}
%id (y: f32[]) -> f32[] {
  ROOT %y = f32[] parameter(0)
}
%to_s32 (z: f32[]) -> s32[] {
  %z = f32[] parameter(0)
  ROOT %c = s32[] convert(%z)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = add(%a, %b)
}
%add2 (a2: f32[], i2: s32[], b2: f32[], j2: s32[]) -> (f32[], s32[]) {
  %a2 = f32[] parameter(0)
  %i2 = s32[] parameter(1)
  %b2 = f32[] parameter(2)
  %j2 = s32[] parameter(3)
  %s2 = add(%a2, %b2)
  %t2 = add(%i2, %j2)
  ROOT %r2 = tuple(%s2, %t2)
}
%less (l: f32[], r: f32[]) -> pred[] {
  %l = f32[] parameter(0)
  %r = f32[] parameter(1)
  ROOT %lt = compare(%l, %r), direction=LT
}
%cond (cs: f32[]) -> pred[] {
  %cs = f32[] parameter(0)
  ROOT %ct = pred[] constant(false)
}
ENTRY %main (p: f32[], q: pred[], v: f32[2,3], w: f32[2,3], k: s32[], iv: s32[2,3]) -> f32[] {
  %p = f32[] parameter(0)
  %q = pred[] parameter(1)
  %v = f32[2,3]{1,0} parameter(2)
  %w = f32[2,3]{1,0} parameter(3)
  %k = s32[] parameter(4)
  %iv = s32[2,3]{1,0} parameter(5)
  %call = call(%p), to_apply=%neg
  %cnd = conditional(%q, %p, %p), true_computation=%neg, false_computation=%id
  %idx = conditional(%k, %p, %p), branch_computations={%id, %neg}
  %loop = while(%p), condition=%cond, body=%neg
  %map = map(%v), dimensions={0,1}, to_apply=%to_s32
  %red = reduce(%v, %p), dimensions={1}, to_apply=%add
  %vred = reduce(%v, %iv, %p, %k), dimensions={0}, to_apply=%add2
  %inline = call(%p), to_apply={ %ip = f32[] parameter(0) ROOT %ir = s32[] convert(%ip) }
  %bs = broadcast(%p)
  %bq = broadcast(%v), dimensions={4}
  %cat = concatenate(%v, %w), dimensions={1}
  %tr = transpose(%v), dimensions={1,0}
  %pad = pad(%v, %p), padding=1_2x0_0_1
  %rev = reverse(%v), dimensions={0}
  %sort = sort(%v, %iv), dimensions={1}, to_apply=%less
  %rid = replica-id()
  %pid = partition-id()
  %gds = get-dimension-size(%v), dimensions={1}
  %sds = set-dimension-size(%v, %k), dimensions={1}
  %cpx = complex(%v, %w)
  %re = real(%cpx)
  %topk = topk(%v), k=2
  %bnt = batch-norm-training(%v, %p, %p), epsilon=0.001, feature_index=1
  %ac = acos(%v)
  ROOT %out = add(%call, %p)
}
)");
  ASSERT_NE(m, nullptr);
  const std::pair<const char*, const char*> expected[] = {
      {"call", "f32[]"},
      {"cnd", "f32[]"},
      {"idx", "f32[]"},
      {"loop", "f32[]"},
      {"map", "s32[2,3]{1,0}"},
      {"red", "f32[2]{0}"},
      {"vred", "(f32[3]{0}, s32[3]{0})"},
      {"inline", "s32[]"},
      {"bs", "f32[]"},
      // XLA's InferBroadcastShape takes `dimensions` as sizes prepended to
      // the operand's (hlo_parser.cc passes the attribute as broadcast_sizes).
      {"bq", "f32[4,2,3]{2,1,0}"},
      {"cat", "f32[2,6]{1,0}"},
      {"tr", "f32[3,2]{1,0}"},
      {"pad", "f32[5,5]{1,0}"},
      {"rev", "f32[2,3]{1,0}"},
      {"sort", "(f32[2,3]{1,0}, s32[2,3]{1,0})"},
      {"rid", "u32[]"},
      {"pid", "u32[]"},
      {"gds", "s32[]"},
      {"sds", "f32[2,<=3]{1,0}"},
      {"cpx", "c64[2,3]{1,0}"},
      {"re", "f32[2,3]{1,0}"},
      {"topk", "(f32[2,2]{1,0}, s32[2,2]{1,0})"},
      {"bnt", "(f32[2,3]{1,0}, f32[3]{0}, f32[3]{0})"},
      {"ac", "f32[2,3]{1,0}"},
  };
  ExpectShapes(*m, expected);
  // Windows, gather dimension numbers, convolution dimension labels.
  std::unique_ptr<HloModule> w = Parse(R"(
HloModule windows
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = maximum(%a, %b)
}
ENTRY %main (x: f32[1,8,8,3], k: f32[3,3,3,16], z: f32[], t: f32[5,7], i: s32[4,1]) -> f32[] {
  %x = f32[1,8,8,3]{3,2,1,0} parameter(0)
  %k = f32[3,3,3,16]{3,2,1,0} parameter(1)
  %z = f32[] parameter(2)
  %t = f32[5,7]{1,0} parameter(3)
  %i = s32[4,1]{1,0} parameter(4)
  %conv = convolution(%x, %k), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %convt = convolution(%x, %k), window={size=3x3 lhs_dilate=2x2}, dim_labels=b01f_01io->bf01
  %rw = reduce-window(%x, %z), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max
  %g = gather(%t, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,7}
  %sd = scaled-dot(%t, %z, %t, %z), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %out = copy(%z)
}
)");
  ASSERT_NE(w, nullptr);
  const std::pair<const char*, const char*> windowed[] = {
      {"conv", "f32[1,4,4,16]{3,2,1,0}"},
      {"convt", "f32[1,16,13,13]{3,2,1,0}"},
      {"rw", "f32[1,4,4,3]{3,2,1,0}"},
      {"g", "f32[4,7]{1,0}"},
      {"sd", "f32[5,5]{1,0}"},
  };
  ExpectShapes(*w, windowed);

  // Printed with the inferred shapes, as XLA prints them; printing is stable.
  const std::string printed = PrintHloModule(*m);
  EXPECT_THAT(printed, HasSubstr("%cnd = f32[] conditional("));
  EXPECT_THAT(printed, HasSubstr("%vred = (f32[3]{0}, s32[3]{0}) reduce("));
  std::unique_ptr<HloModule> again = Parse(printed);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(PrintHloModule(*again), printed);
}

TEST(ParserInferShapeTest, WhatCanNotBeInferredIsAClearError) {
  // XLA's parser infers no shape for collectives, reshape, convert, fusion ...
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                         "  ROOT ar = all-reduce(p), to_apply=e\n}\n"),
              HasSubstr("cannot infer shape for opcode: all-reduce"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                         "  ROOT r = reshape(p)\n}\n"),
              HasSubstr("cannot infer shape for opcode: reshape"));
  // A call's callee must be read first (XLA requires it defined before use).
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n"
                         "  ROOT c = call(p), to_apply=later\n}\n"
                         "later {\n  ROOT x = f32[] parameter(0)\n}\n"),
              HasSubstr("the shape of this call is omitted and can not be inferred: computation "
                        "'later' is not defined before this instruction"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[1,4,4,1] parameter(0)\n"
                         "  f = f32[3,3,1,8] parameter(1)\n"
                         "  ROOT c = convolution(p, f), dim_labels=b01f_01io->b01f\n}\n"),
              HasSubstr("dim_labels, window and batch_group_count do not describe this convolution"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
                         "  ROOT t = transpose(p), dimensions={0,0}\n}\n"),
              HasSubstr("is not a permutation"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
                         "  ROOT d = dot(p, p), lhs_contracting_dims={5}, rhs_contracting_dims={1}\n}\n"),
              HasSubstr("a batch or contracting dimension is out of range or named twice"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  t = f32[5,7] parameter(0)\n  i = s32[4,1] parameter(1)\n"
                         "  ROOT g = gather(t, i), offset_dims={1,1}, collapsed_slice_dims={}, "
                         "start_index_map={0}, index_vector_dim=1, slice_sizes={1,7}\n}\n"),
              HasSubstr("offset_dims names a dimension out of range or twice"));
  EXPECT_THAT(ParseError("HloModule m\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
                         "  z = f32[] constant(0)\n"
                         "  ROOT r = pad(p, z), padding=1_1\n}\n"),
              HasSubstr("does not give one entry per dimension"));
}

// The last two opcodes of XLA's CanInferShape: ragged-dot
// (ShapeInference::InferRaggedDotOpShape, its three modes and a group_sizes
// of [g] or [b...,x...,g]) and scan (inferred in XLA's parser itself).
TEST(ParserInferShapeTest, RaggedDotAndScan) {
  std::unique_ptr<HloModule> m = Parse(R"(
HloModule infer
%cumsum (x: f32[8], c: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8] parameter(0)
  %c = f32[8] parameter(1)
  %s = f32[8] add(%x, %c)
  ROOT %t = (f32[8], f32[8]) tuple(%s, %s)
}
%neg (y: f32[8]{0}) -> f32[8]{0} {
  %y = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%y)
}
%last (v: f32[8], w: s32[]) -> s32[] {
  %v = f32[8] parameter(0)
  ROOT %w = s32[] parameter(1)
}
ENTRY %main (a: f32[11,5], b: f32[3,5,7], g: s32[3], r: f32[5,7], l3: f32[3,11,5], r3: f32[3,5,7], l19: f32[19,11,5], g19: s64[19,3], h: bf16[11,5], q: f32[4,8]{1,0}, z: f32[8], k: s32[]) -> f32[] {
  %a = f32[11,5] parameter(0)
  %b = f32[3,5,7] parameter(1)
  %g = s32[3] parameter(2)
  %r = f32[5,7] parameter(3)
  %l3 = f32[3,11,5] parameter(4)
  %r3 = f32[3,5,7] parameter(5)
  %l19 = f32[19,11,5] parameter(6)
  %g19 = s64[19,3] parameter(7)
  %h = bf16[11,5] parameter(8)
  %q = f32[4,8]{1,0} parameter(9)
  %z = f32[8] parameter(10)
  %k = s32[] parameter(11)
  %noncontracting = ragged-dot(%a, %b, %g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
  %contracting = ragged-dot(%a, %r, %g), lhs_contracting_dims={1}, rhs_contracting_dims={0}, lhs_ragged_dims={1}
  %batch = ragged-dot(%l3, %r3, %g), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, lhs_ragged_dims={0}
  %grouped = ragged-dot(%l19, %b, %g19), lhs_contracting_dims={2}, rhs_contracting_dims={1}, lhs_ragged_dims={1}, rhs_group_dims={0}
  %mixed = ragged-dot(%h, %b, %g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
  %mixdot = dot(%h, %r), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sum = scan(%q, %z), dimensions={0}, num_carries=1, to_apply=%cumsum
  %negs = scan(%q), dimensions={0}, num_carries=0, to_apply=%neg
  %carry = scan(%q, %k), dimensions={0}, num_carries=1, to_apply=%last
  ROOT %out = f32[] constant(0)
}
)");
  ASSERT_NE(m, nullptr);
  const std::pair<const char*, const char*> shapes[] = {
      {"noncontracting", "f32[11,7]"},  // [m,k], [g,k,n], [g] -> [m,n]
      {"contracting", "f32[3,11,7]"},   // [m,k], [k,n], [g] -> [g,m,n]
      {"batch", "f32[3,11,7]"},         // [b,m,k], [b,k,n], [g] -> [b,m,n]
      {"grouped", "f32[19,11,7]"},      // group_sizes [b,g]: XLA's ragged_dot.mlir case
      {"mixed", "f32[11,7]"},           // the higher-precision type of bf16 and f32
      {"mixdot", "f32[11,7]"},          // as for a dot (XLA's InferDotOpShape)
      // The output scanned, the carry as it is; laid out as to_apply's root.
      {"sum", "(f32[4,8], f32[8])"},
      {"negs", "f32[4,8]{1,0}"},
      {"carry", "s32[]"},  // a non-tuple root with carries is the carry
  };
  ExpectShapes(*m, shapes);
  const std::string printed = PrintHloModule(*m);
  EXPECT_THAT(printed, HasSubstr("%contracting = f32[3,11,7] ragged-dot(%a, %r, %g), "));
  EXPECT_THAT(printed, HasSubstr("%sum = (f32[4,8], f32[8]) scan(%q, %z), "));
  std::unique_ptr<HloModule> again = Parse(printed);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(PrintHloModule(*again), printed);
}

TEST(ParserInferShapeTest, RaggedDotAndScanErrors) {
  const std::string ragged = "HloModule m\nENTRY e {\n  a = f32[11,5] parameter(0)\n"
                             "  b = f32[3,5,7] parameter(1)\n  g = s32[3] parameter(2)\n"
                             "  g2 = s32[2,3] parameter(3)\n  s = s32[] parameter(4)\n  ROOT r = ";
  struct Case {
    const char* instruction;
    const char* message;
  } cases[] = {
      {"ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, rhs_group_dims={0}",
       "it needs lhs_ragged_dims={d}: exactly one ragged dimension in the lhs"},
      {"ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}",
       "exactly one rhs group dimension when the lhs ragged dimension is non-contracting"},
      {"ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={2}, "
       "rhs_group_dims={0}",
       "lhs ragged dimension 2 is out of range [0, 2)"},
      {"ragged-dot(a, b, g2), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, "
       "rhs_group_dims={0}",
       "group_sizes is expected to have shape [g] or [g], got s32[2,3]"},
      {"ragged-dot(a, b, s), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, "
       "rhs_group_dims={0}",
       "group_sizes is expected to have shape [g] or [g], got s32[]"},
      {"ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, "
       "rhs_group_dims={1}",
       "rhs_group_dims names a dimension out of range, twice, or that is batch or contracting"},
      {"ragged-dot(a, b, g), lhs_contracting_dims={1}, rhs_contracting_dims={2}, lhs_ragged_dims={0}, "
       "rhs_group_dims={0}",
       "a batch or contracting dimension has different sizes in lhs and rhs"},
      {"ragged-dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, "
       "rhs_group_dims={0}",
       "it needs three array operands (lhs, rhs, group_sizes)"},
  };
  for (const Case& c : cases) {
    // The error is at the instruction's opcode: line 8, column 12.
    const std::string message = ParseError(ragged + c.instruction + "\n}\n");
    EXPECT_THAT(message, HasSubstr(c.message)) << c.instruction;
    EXPECT_THAT(message, HasSubstr("t.hlo:8:12: error: the shape of this ragged-dot is omitted"))
        << c.instruction;
  }

  const std::string scan = "HloModule m\nbody {\n  x = f32[8] parameter(0)\n  c = f32[8] parameter(1)\n"
                           "  ROOT t = (f32[8], f32[8]) tuple(x, c)\n}\n"
                           "flat {\n  x = f32[8] parameter(0)\n  ROOT k = f32[] constant(0)\n}\n"
                           "ENTRY e {\n  q = f32[4,8] parameter(0)\n  z = f32[8] parameter(1)\n  ROOT s = ";
  const std::pair<const char*, const char*> scan_cases[] = {
      {"scan(q, z), dimensions={0}, to_apply=body", "it needs num_carries=N"},
      {"scan(q, z), num_carries=1, to_apply=body", "it needs dimensions={d}: exactly one scan dimension"},
      {"scan(q, z), dimensions={0,1}, num_carries=1, to_apply=body", "exactly one scan dimension"},
      {"scan(q, z), dimensions={2}, num_carries=1, to_apply=body",
       "scan dimension 2 is not a dimension of array operand 0"},
      {"scan(q, z), dimensions={0}, num_carries=2, to_apply=body",
       "it has 2 operands and num_carries=2, so no input to scan"},
      {"scan(q), dimensions={0}, num_carries=0, to_apply=body",
       "it has 1 operands, but to_apply has 2 parameters"},
      {"scan(q), dimensions={1}, num_carries=0, to_apply=flat",
       "to_apply returns an output that is not an array of rank >= the scan dimension"},
      {"scan(q, z), dimensions={0}, num_carries=1, to_apply=later", "computation 'later' is not defined"},
  };
  for (const auto& [instruction, expected] : scan_cases) {
    const std::string message = ParseError(scan + instruction + "\n}\n");
    EXPECT_THAT(message, HasSubstr(expected)) << instruction;
    EXPECT_THAT(message, HasSubstr("t.hlo:14:12: error: the shape of this scan is omitted")) << instruction;
  }
}


}  // namespace
}  // namespace hilo
