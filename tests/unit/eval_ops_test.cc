// Per-device instruction semantics of the reference interpreter, against
// hand-computed values.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"
#include "hilo/eval/interpreter.h"
#include "hilo/eval/value.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using namespace testing_util;  // NOLINT: the eval tests' shared set-up

TEST(EvalOps, ElementwiseFloat) {
  const std::string hlo = ElementwiseModule(
      "f32[4]", {"add", "subtract", "multiply", "divide", "maximum", "minimum"}, {"negate", "abs"});
  auto v = Eval1(hlo, "param 0 device * : 1 -2 3 0.5\nparam 1 device * : 4 4 -1 0.25\n");
  EXPECT_THAT(v, ElementsAreArray<double>({5, 2, 2, 0.75,        // add
                                           -3, -6, 4, 0.25,      // subtract
                                           4, -8, -3, 0.125,     // multiply
                                           0.25, -0.5, -3, 2,    // divide
                                           4, 4, 3, 0.5,         // maximum
                                           1, -2, -1, 0.25,      // minimum
                                           -1, 2, -3, -0.5,      // negate
                                           1, 2, 3, 0.5}));      // abs
}

TEST(EvalOps, UnaryMath) {
  const std::string hlo =
      ElementwiseModule("f64[3]", {}, {"exponential", "sqrt", "rsqrt", "tanh", "logistic", "floor"});
  auto v = Eval1(hlo, "param 0 device * : 0.25 1 4\n");
  ASSERT_EQ(v.size(), 18u);
  EXPECT_DOUBLE_EQ(v[0], std::exp(0.25));
  EXPECT_DOUBLE_EQ(v[4], 1.0);
  EXPECT_DOUBLE_EQ(v[5], 2.0);
  EXPECT_DOUBLE_EQ(v[8], 0.5);
  EXPECT_DOUBLE_EQ(v[9], std::tanh(0.25));
  EXPECT_DOUBLE_EQ(v[13], 1.0 / (1.0 + std::exp(-1.0)));
  EXPECT_THAT(std::vector<double>(v.begin() + 15, v.end()), ElementsAre(0, 1, 4));
}

TEST(EvalOps, IntegerWrapDivisionAndShifts) {
  const std::string hlo = ElementwiseModule(
      "s8[4]", {"add", "divide", "remainder", "shift-left", "shift-right-arithmetic", "shift-right-logical"});
  // 127+1 wraps; x/0 = -1 and x%0 = x (XLA); -128/-1 wraps to -128.
  auto v = Eval1(hlo, "param 0 device * : 127 7 -128 -8\nparam 1 device * : 1 0 -1 9\n");
  EXPECT_THAT(v, ElementsAreArray<double>({-128, 7, 127, 1,   // add
                                           127, -1, -128, 0,  // divide (-8/9 = 0)
                                           0, 7, 0, -8,       // remainder
                                           -2, 7, 0, 0,       // shift-left (shift >= 8 bits -> 0)
                                           63, 7, -1, -1,     // shift-right-arithmetic (-> sign)
                                           63, 7, 0, 0}));    // shift-right-logical
}

TEST(EvalOps, UnsignedArithmetic) {
  const std::string hlo = ElementwiseModule("u8[3]", {"subtract", "maximum", "divide"});
  auto v = Eval1(hlo, "param 0 device * : 1 200 9\nparam 1 device * : 2 100 0\n");
  EXPECT_THAT(v, ElementsAreArray<double>({255, 100, 9, 2, 200, 9, 0, 2, 255}));
}

TEST(EvalOps, RoundingToBf16AndF16IsToNearestEven) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  b = bf16[4] convert(a)
  h = f16[4] convert(a)
  ROOT t = (bf16[4], f16[4]) tuple(b, h)
})";
  // bf16 has 8 significant bits: 1+2^-8 is a tie (-> 1, even), 1+3*2^-8 a tie
  // (-> 1.015625, even); 2049 and 2051 are within 16 of 2048. f16 has 11: the
  // first two are exact, 2049 ties to 2048, 2051 ties to 2052.
  auto v = Eval1(hlo, "param 0 device * : 1.00390625 1.01171875 2049 2051\n");
  EXPECT_THAT(v, ElementsAreArray<double>({1.0, 1.015625, 2048, 2048, 1.00390625, 1.01171875, 2048, 2052}));
}

TEST(EvalOps, Bf16ArithmeticRoundsEveryInstruction) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  s = bf16[] add(a, b)
  ROOT r = bf16[] subtract(s, a)
})";
  // 256 + 1 = 257 is not a bf16 (rounds to 256), so (a + b) - a = 0, not 1.
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 256\nparam 1 device * : 1\n"), ElementsAre(0));
}

TEST(EvalOps, ConvertFloatToIntTruncatesAndSaturates) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[5] parameter(0)
  ROOT c = s32[5] convert(a)
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 2.7 -2.7 nan 1e10 -1e10\n"),
              ElementsAre(2, -2, 0, 2147483647, -2147483648.0));
}

TEST(EvalOps, CompareSelectClamp) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  lt = pred[4] compare(a, b), direction=LT
  ge = pred[4] compare(a, b), direction=GE
  sel = f32[4] select(lt, a, b)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  cl = f32[4] clamp(lo, a, hi)
  n = pred[4] not(lt)
  an = pred[4] and(lt, ge)
  o = pred[4] or(lt, ge)
  ROOT t = (pred[4], pred[4], f32[4], f32[4], pred[4], pred[4], pred[4]) tuple(lt, ge, sel, cl, n, an, o)
})";
  auto v = Eval1(hlo, "param 0 device * : 1 5 -3 0.5\nparam 1 device * : 2 2 -3 0\n");
  EXPECT_THAT(v, ElementsAreArray<double>({1, 0, 0, 0,        // lt
                                           0, 1, 1, 1,        // ge
                                           1, 2, -3, 0,       // select(lt, a, b)
                                           1, 1, -1, 0.5,     // clamp(-1, a, 1)
                                           0, 1, 1, 1,        // not
                                           0, 0, 0, 0,        // and
                                           1, 1, 1, 1}));     // or
}

TEST(EvalOps, IotaBroadcastReshapeTranspose) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  i = s32[2,3] iota(), iota_dimension=1
  v = s32[2] constant({10, 20})
  b = s32[2,3] broadcast(v), dimensions={0}
  s = s32[2,3] add(i, b)
  t = s32[3,2] transpose(s), dimensions={1,0}
  r = s32[6] reshape(t)
  bc = s32[3,2] bitcast(r)
  ROOT out = (s32[6], s32[3,2]) tuple(r, bc)
})";
  // s = {{10,11,12},{20,21,22}}, transposed {{10,20},{11,21},{12,22}}.
  EXPECT_THAT(Eval1(hlo), ElementsAreArray<double>({10, 20, 11, 21, 12, 22, 10, 20, 11, 21, 12, 22}));
}

TEST(EvalOps, DotGeneralWithBatchAndContracting) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[2,2,3] parameter(0)
  b = f32[2,3,1] parameter(1)
  ROOT d = f32[2,2,1] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
})";
  // batch 0: {{1,2,3},{4,5,6}} . {1,1,1}^T = {6, 15}; batch 1: {{1,0,0},{0,1,0}} . {2,3,4}^T = {2, 3}.
  auto v = Eval1(hlo,
                 "param 0 device * : 1 2 3 4 5 6 1 0 0 0 1 0\n"
                 "param 1 device * : 1 1 1 2 3 4\n");
  EXPECT_THAT(v, ElementsAre(6, 15, 2, 3));
}

TEST(EvalOps, DotContractingFirstDimensionOfBoth) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[2,2] parameter(1)
  ROOT d = f32[3,2] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
})";
  // a^T b with a = {{1,2,3},{4,5,6}}, b = {{1,0},{0,1}} -> a^T.
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3 4 5 6\nparam 1 device * : 1 0 0 1\n"),
              ElementsAre(1, 4, 2, 5, 3, 6));
}

TEST(EvalOps, ReduceFastAndGenericAndVariadic) {
  const std::string hlo = std::string(R"(
HloModule m
)") + testing_util::kAdd + testing_util::kArgmax + R"(
twice_plus {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  two = f32[] constant(2)
  y2 = f32[] multiply(y, two)
  ROOT s = f32[] add(x, y2)
}
ENTRY e {
  a = f32[2,3] parameter(0)
  zero = f32[] constant(0)
  rows = f32[2] reduce(a, zero), dimensions={1}, to_apply=add
  all = f32[] reduce(a, zero), dimensions={0,1}, to_apply=twice_plus
  idx = s32[2,3] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  izero = s32[] constant(0)
  am = (f32[2], s32[2]) reduce(a, idx, ninf, izero), dimensions={1}, to_apply=argmax
  amv = f32[2] get-tuple-element(am), index=0
  ami = s32[2] get-tuple-element(am), index=1
  ROOT t = (f32[2], f32[], f32[2], s32[2]) tuple(rows, all, amv, ami)
})";
  auto v = Eval1(hlo, "param 0 device * : 1 5 2 7 3 4\n");
  EXPECT_THAT(v, ElementsAre(8, 14, 44, 5, 7, 1, 0));
}

TEST(EvalOps, SlicesConcatenatePad) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = s32[3,4] iota(), iota_dimension=1
  ten = s32[3,4] constant({{0,0,0,0},{10,10,10,10},{20,20,20,20}})
  x = s32[3,4] add(a, ten)
  sl = s32[2,2] slice(x), slice={[1:3], [0:4:2]}
  i = s32[] parameter(0)
  j = s32[] constant(3)
  ds = s32[2,2] dynamic-slice(x, i, j), dynamic_slice_sizes={2,2}
  u = s32[1,2] constant({{-1,-2}})
  dus = s32[3,4] dynamic-update-slice(x, u, i, j)
  c = s32[2,4] concatenate(sl, ds), dimensions={1}
  pv = s32[] constant(9)
  p = s32[3,3] pad(sl, pv), padding=1_0x-1_1_1
  ROOT t = (s32[2,2], s32[2,2], s32[3,4], s32[2,4], s32[3,3]) tuple(sl, ds, dus, c, p)
})";
  // x = {{0,1,2,3},{10,11,12,13},{20,21,22,23}}; i = 5 clamps to row 1, j = 3 to column 2.
  auto v = Eval1(hlo, "param 0 device * : 5\n");
  EXPECT_THAT(v, ElementsAreArray<double>({
                     10, 12, 20, 22,                             // slice
                     12, 13, 22, 23,                             // dynamic-slice (clamped)
                     0, 1, 2, 3, 10, 11, 12, 13, 20, 21, -1, -2,  // dynamic-update-slice (clamped to row 2)
                     10, 12, 12, 13, 20, 22, 22, 23,             // concatenate
                     9, 9, 9,                                    // pad: a low row of 9s,
                     9, 12, 9,                                   // then each row loses its first
                     9, 22, 9}));                                // element (low -1), interior 1, high 1
}

TEST(EvalOps, ControlFlow) {
  const std::string hlo = "HloModule m\n" + testing_util::CountedLoop("f32[2]", 3, "  next = f32[2] add(v, v)") + R"(
double {
  x = f32[2] parameter(0)
  ROOT y = f32[2] add(x, x)
}
negate_it {
  x = f32[2] parameter(0)
  ROOT y = f32[2] negate(x)
}
fused {
  x = f32[2] parameter(0)
  y = f32[2] parameter(1)
  ROOT z = f32[2] multiply(x, y)
}
ENTRY e {
  v = f32[2] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[2]) tuple(zero, v)
  w = (s32[], f32[2]) while(init), condition=cond, body=body
  wv = f32[2] get-tuple-element(w), index=1
  c = f32[2] call(wv), to_apply=double
  b = s32[] constant(1)
  k = f32[2] conditional(b, c, c), branch_computations={double, negate_it}
  p = pred[] constant(false)
  k2 = f32[2] conditional(p, c, c), true_computation=double, false_computation=negate_it
  f = f32[2] fusion(k, k2), kind=kLoop, calls=fused
  ROOT t = (f32[2], f32[2], f32[2]) tuple(k, k2, f)
})";
  // v * 8 (three doublings) * 2 (call) = 16v; branch 1 negates; pred false negates.
  auto v = Eval1(hlo, "param 0 device * : 1 -0.5\n");
  EXPECT_THAT(v, ElementsAre(-16, 8, -16, 8, 256, 64));
}

TEST(EvalOps, TokensBarriersAndIds) {
  const std::string hlo = R"(
HloModule m, replica_count=2, num_partitions=3
ENTRY e {
  a = f32[2] parameter(0)
  tok = token[] after-all()
  d = f32[2] add-dependency(a, tok)
  t = (f32[2]) tuple(d)
  ob = (f32[2]) opt-barrier(t)
  g = f32[2] get-tuple-element(ob), index=0
  c = f32[2] copy(g)
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT out = (f32[2], u32[], u32[]) tuple(c, r, p)
})";
  auto r = RunText(hlo, "param 0 device * : 3 4\n");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outputs.size(), 6u);
  EXPECT_THAT(Flat(r->outputs[4]), ElementsAre(3, 4, 1, 1));  // device 4 = replica 1, partition 1
  EXPECT_THAT(Flat(r->outputs[2]), ElementsAre(3, 4, 0, 2));
}

TEST(EvalOps, ElidedConstantIsUninterpreted) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  ROOT big = f32[4] constant({...})
})";
  auto r = RunText(hlo);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->uninterpreted.at("elided constant"), 1);
  // Deterministic, and in [-1, 1) like a random input.
  auto again = RunText(hlo);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Flat(r->outputs[0]), Flat(again->outputs[0]));
  for (double x : Flat(r->outputs[0])) EXPECT_TRUE(x >= -1 && x < 1) << x;
}

TEST(EvalOps, UnsupportedOpcodeIsAnErrorNamingIt) {
  const std::string hlo2 = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  ROOT f = f32[4] fft(a), fft_type=FFT, fft_length={4}
})";
  auto r = RunText(hlo2);
  testing_util::ExpectError(r.status(), {"does not support opcode fft", "%f"});
}

TEST(EvalOps, GatherAsXlaDefinesIt) {
  // XLA's operation-semantics example: rows 0 and 2 of a [3,3]; an index past
  // the end is clamped so the slice fits (5 -> 2).
  const std::string rows = R"(
HloModule m
ENTRY e {
  a = f32[3,3] parameter(0)
  i = s32[3] parameter(1)
  ROOT g = f32[3,3] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
})";
  EXPECT_EQ(Eval1(rows, "param 0 device * : 1 2 3 4 5 6 7 8 9\nparam 1 device * : 0 2 5\n"),
            (std::vector<double>{1, 2, 3, 7, 8, 9, 7, 8, 9}));
  // Index vectors along dimension 1, a [1,2] window not collapsed.
  const std::string windows = R"(
HloModule m
ENTRY e {
  a = f32[3,3] parameter(0)
  i = s32[2,2] parameter(1)
  ROOT g = f32[2,1,2] gather(a, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,2}
})";
  EXPECT_EQ(Eval1(windows, "param 0 device * : 1 2 3 4 5 6 7 8 9\nparam 1 device * : 1 1 2 0\n"),
            (std::vector<double>{5, 6, 7, 8}));
}

TEST(EvalOps, ScatterAsXlaDefinesIt) {
  // Rows 0 and 2 of a [3,3] get rows of the updates added; an out-of-bounds
  // index (5) is skipped, not clamped. Then an assigning scatter (the
  // to_apply returns the update), as torch-xla writes index_put.
  const std::string add = absl::StrCat("HloModule m\n", testing_util::kAdd, R"(
ENTRY e {
  a = f32[3,3] parameter(0)
  i = s32[3] parameter(1)
  u = f32[3,3] parameter(2)
  ROOT s = f32[3,3] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
})");
  EXPECT_EQ(Eval1(add, "param 0 device * : 1 2 3 4 5 6 7 8 9\nparam 1 device * : 0 2 5\n"
                       "param 2 device * : 10 20 30 40 50 60 70 80 90\n"),
            (std::vector<double>{11, 22, 33, 4, 5, 6, 47, 58, 69}));
  const std::string assign = R"(
HloModule m
assign {
  x = f32[] parameter(0)
  ROOT y = f32[] parameter(1)
}
ENTRY e {
  a = f32[4] parameter(0)
  i = s32[1] parameter(1)
  u = f32[1,2] parameter(2)
  ROOT s = f32[4] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=assign
})";
  EXPECT_EQ(Eval1(assign, "param 0 device * : 1 2 3 4\nparam 1 device * : 1\nparam 2 device * : 8 9\n"),
            (std::vector<double>{1, 8, 9, 4}));
}

TEST(EvalOps, BitcastConvertReinterpretsTheBits) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  i = s32[3] bitcast-convert(a)
  h = bf16[2] parameter(1)
  u = u16[2] bitcast-convert(h)
  back = f32[3] bitcast-convert(i)
  ROOT t = (s32[3], u16[2], f32[3]) tuple(i, u, back)
})";
  // 1.0f = 0x3f800000, -2.0f = 0xc0000000; bf16 1.0 = 0x3f80, -0.5 = 0xbf00.
  EXPECT_EQ(Eval1(hlo, "param 0 device * : 1 -2 0\nparam 1 device * : 1 -0.5\n"),
            (std::vector<double>{1065353216, -1073741824, 0, 0x3f80, 0xbf00, 1, -2, 0}));
  // Different widths: a wide element splits into pieces, lowest bits first
  // (a little-endian memcpy, as XLA's evaluator does on its hosts), and
  // pieces join back.
  const std::string widths = R"(
HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  b = u16[2,2] bitcast-convert(a)
  c = u8[2,2] parameter(1)
  d = u16[2] bitcast-convert(c)
  e = f32[2] bitcast-convert(b)
  ROOT t = (u16[2,2], u16[2], f32[2]) tuple(b, d, e)
})";
  EXPECT_EQ(Eval1(widths, "param 0 device * : 1 -2\nparam 1 device * : 1 2 255 0\n"),
            (std::vector<double>{0, 0x3f80, 0, 0xc000, 0x0201, 0x00ff, 1, -2}));
  auto r = RunText(R"(
HloModule m
ENTRY e {
  a = f32[2] parameter(0)
  ROOT b = u16[2] bitcast-convert(a)
})");
  testing_util::ExpectError(r.status(), {"does not hold the bits"});
}

TEST(EvalOps, BatchNormTrainingAsXlasExpander) {
  // Feature dimension 1 of [2,2]: feature 0 is {1, 3}, feature 1 is {2, 6}.
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = f32[2,2] parameter(0)
  s = f32[2] parameter(1)
  o = f32[2] parameter(2)
  ROOT bn = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), epsilon=0, feature_index=1
})";
  // mean {2, 4}, var {1, 4}; normalized x: {-1, -1, 1, 1} * scale + offset.
  EXPECT_EQ(Eval1(hlo, "param 0 device * : 1 2 3 6\nparam 1 device * : 1 2\nparam 2 device * : 0 10\n"),
            (std::vector<double>{-1, 8, 1, 12, 2, 4, 1, 4}));
}

TEST(EvalOps, BatchNormGradAsXlasExpander) {
  // One feature, x = {1, 3}, mean 2, var 1, epsilon 0, scale 2, dy = {1, 0}:
  // sum(dy) = 1, sum(dy * (x - mean)) = -1; grad_x = 2 * (dy - 1/2 + (x - 2)/2).
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = f32[2,1] parameter(0)
  s = f32[1] parameter(1)
  m = f32[1] parameter(2)
  v = f32[1] parameter(3)
  dy = f32[2,1] parameter(4)
  ROOT bn = (f32[2,1], f32[1], f32[1]) batch-norm-grad(x, s, m, v, dy), epsilon=0, feature_index=1
})";
  EXPECT_EQ(Eval1(hlo, "param 0 device * : 1 3\nparam 1 device * : 2\nparam 2 device * : 2\n"
                       "param 3 device * : 1\nparam 4 device * : 1 0\n"),
            (std::vector<double>{0, 0, -1, 1}));
}

TEST(EvalOps, IdentityCustomCallsPassTheirOperandOn) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  ROOT cc = f32[4] custom-call(a), custom_call_target="Sharding", sharding={replicated}
})";
  EXPECT_EQ(Eval1(hlo, "param 0 device * : 1 2 3 4"), (std::vector<double>{1, 2, 3, 4}));
}

// On every device, on one thread or several: the error is device 0's,
// whichever thread failed first.
TEST(EvalOps, InfiniteLoopIsAnErrorNotAHang) {
  const std::string hlo = R"(
HloModule m, replica_count=8
cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  ROOT s = s32[] parameter(0)
}
ENTRY e {
  z = s32[] constant(0)
  ROOT w = s32[] while(z), condition=cond, body=body
})";
  auto m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  for (int threads : {1, 4}) {
    InterpreterOptions options;
    options.max_while_iterations = 1000;
    options.threads = threads;
    auto r = RunModule(*m, options);
    testing_util::ExpectError(r.status(), {"device 0 ", "%w"});
  }
}

TEST(EvalOps, ArraysOverTheSizeLimitAreErrors) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = f32[8] parameter(0)
  ROOT b = f32[4,8] broadcast(a), dimensions={1}
})";
  auto m = Parse(hlo);
  ASSERT_NE(m, nullptr);
  InterpreterOptions options;
  options.max_array_elements = 16;
  auto r = RunModule(*m, options);
  testing_util::ExpectError(r.status(), {"%b", "max_array_elements"});
  options.max_array_elements = 4;
  r = RunModule(*m, options);
  testing_util::ExpectError(r.status(), {"parameter %a"});
}

TEST(EvalOps, RandomInputsAreDeterministicAndInRange) {
  const std::string hlo = R"(
HloModule m, replica_count=2
ENTRY e {
  a = f32[64] parameter(0)
  b = s32[64] parameter(1)
  ROOT t = (f32[64], s32[64]) tuple(a, b)
})";
  auto r1 = RunText(hlo);
  auto r2 = RunText(hlo);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(Flat(r1->outputs[0]), Flat(r2->outputs[0]));
  EXPECT_NE(Flat(r1->outputs[0]), Flat(r1->outputs[1]));  // devices differ
  auto v = Flat(r1->outputs[1]);
  for (int k = 0; k < 64; ++k) {
    EXPECT_GE(v[k], -1.0);
    EXPECT_LE(v[k], 1.0);
    EXPECT_GE(v[64 + k], -4.0);
    EXPECT_LE(v[64 + k], 4.0);
  }
}

TEST(EvalOps, IntegerScalarInputsAreReplicated) {
  const std::string hlo = R"(
HloModule m, replica_count=4
ENTRY e {
  n = s32[] parameter(0)
  f = f32[] parameter(1)
  ROOT t = (s32[], f32[]) tuple(n, f)
})";
  auto r = RunText(hlo);
  ASSERT_TRUE(r.ok()) << r.status();
  bool floats_differ = false;
  for (int d = 1; d < 4; ++d) {
    EXPECT_EQ(Flat(r->outputs[d])[0], Flat(r->outputs[0])[0]) << d;
    floats_differ = floats_differ || Flat(r->outputs[d])[1] != Flat(r->outputs[0])[1];
  }
  EXPECT_TRUE(floats_differ);
}

TEST(EvalOps, InputsFileErrorsSayWhere) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  ROOT a = f32[2] parameter(0)
})";
  auto r = RunText(hlo, "param 0 device * : 1 2 3\n");
  testing_util::ExpectError(r.status(), {"line 1", "expected 2 values"});
}

TEST(EvalValue, ToStringIsXlaLike) {
  Array a(PrimitiveType::S32, {2, 2});
  for (int k = 0; k < 4; ++k) a.SetInt(k, k);
  EXPECT_EQ(a.ToString(), "s32[2,2] {{0, 1}, {2, 3}}");
  Array f(PrimitiveType::F32, {});
  f.SetDouble(0, 0.1);
  EXPECT_EQ(f.ToString(), "f32[] 0.1");
}

}  // namespace
}  // namespace eval
}  // namespace hilo
