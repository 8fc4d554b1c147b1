// The interpreter's convolution, sort, topk, reduce-window,
// select-and-scatter, map and reduce-precision (issue 17 item 2), against
// values computed by hand from XLA's operation semantics.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"

namespace hilo {
namespace eval {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using namespace testing_util;  // NOLINT: the eval tests' shared set-up

std::string Conv1D(const std::string& out_shape, const std::string& attrs) {
  return R"(
HloModule m
ENTRY e {
  x = f32[1,1,5] parameter(0)
  k = f32[1,1,3] parameter(1)
  ROOT c = )" + out_shape + R"( convolution(x, k), dim_labels=bf0_oi0->bf0, )" + attrs + R"(
})";
}

constexpr char kConvInputs[] = "param 0 device * : 1 2 3 4 5\nparam 1 device * : 1 2 3\n";

// out[o] = sum_w x[o * stride - pad_low + w * rhs_dilate] * k[w], with x read
// through lhs dilation (holes and padding are zero).
TEST(EvalConvolution, OneDimensionalWindows) {
  EXPECT_THAT(Eval1(Conv1D("f32[1,1,3]", "window={size=3}"), kConvInputs), ElementsAre(14, 20, 26));
  // Padded x = 0 1 2 3 4 5 0, stride 2.
  EXPECT_THAT(Eval1(Conv1D("f32[1,1,3]", "window={size=3 stride=2 pad=1_1}"), kConvInputs),
              ElementsAre(8, 20, 14));
  // Negative padding drops x[0]: 2 3 4 5.
  EXPECT_THAT(Eval1(Conv1D("f32[1,1,2]", "window={size=3 pad=-1_0}"), kConvInputs), ElementsAre(20, 26));
  // lhs_dilate=2: 1 0 2 0 3 0 4 0 5.
  EXPECT_THAT(Eval1(Conv1D("f32[1,1,7]", "window={size=3 lhs_dilate=2}"), kConvInputs),
              ElementsAre(7, 4, 11, 6, 15, 8, 19));
  // rhs_dilate=2: x0*1 + x2*2 + x4*3.
  EXPECT_THAT(Eval1(Conv1D("f32[1,1,1]", "window={size=3 rhs_dilate=2}"), kConvInputs), ElementsAre(22));
  // rhs_reversal=1: the kernel is read as 3 2 1.
  EXPECT_THAT(Eval1(Conv1D("f32[1,1,3]", "window={size=3 rhs_reversal=1}"), kConvInputs),
              ElementsAre(10, 16, 22));
}

TEST(EvalConvolution, TwoDimensionalAnyDimLabels) {
  // x = 1..9 as 3x3 (NHWC), kernel {{1,2},{3,4}} (HWIO); the output written
  // in NHWC and in NCHW order.
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = f32[1,3,3,1] parameter(0)
  k = f32[2,2,1,1] parameter(1)
  a = f32[1,2,2,1] convolution(x, k), window={size=2x2}, dim_labels=b01f_01io->b01f
  b = f32[1,1,2,2] convolution(x, k), window={size=2x2}, dim_labels=b01f_01io->bf01
  ROOT t = (f32[1,2,2,1], f32[1,1,2,2]) tuple(a, b)
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3 4 5 6 7 8 9\nparam 1 device * : 1 2 3 4\n"),
              ElementsAre(37, 47, 67, 77, 37, 47, 67, 77));
}

TEST(EvalConvolution, IntegerFeatures) {
  // x features f0 = 1 2 3, f1 = 4 5 6; k[o][i][w]: o0 = {{1,0},{0,1}}, o1 = {{1,1},{-1,-1}}.
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = s32[1,2,3] parameter(0)
  k = s32[2,2,2] parameter(1)
  ROOT c = s32[1,2,2] convolution(x, k), window={size=2}, dim_labels=bf0_oi0->bf0
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3 4 5 6\nparam 1 device * : 1 0 0 1 1 1 -1 -1\n"),
              ElementsAre(6, 8, -6, -6));
}

TEST(EvalConvolution, FeatureAndBatchGroups) {
  // feature_group_count=2: input features {0,1} feed output feature 0, {2,3}
  // feed 1. k[i][o] = {{1,10},{100,1000}}: out0 = 1*1 + 2*100, out1 = 3*10 + 4*1000.
  const std::string features = R"(
HloModule m
ENTRY e {
  x = f32[1,4] parameter(0)
  k = f32[2,2] parameter(1)
  ROOT c = f32[1,2] convolution(x, k), dim_labels=bf_io->bf, feature_group_count=2
})";
  EXPECT_THAT(Eval1(features, "param 0 device * : 1 2 3 4\nparam 1 device * : 1 10 100 1000\n"),
              ElementsAre(201, 4030));
  // batch_group_count=2: batch b feeds output feature b (the output batch is 1).
  const std::string batches = R"(
HloModule m
ENTRY e {
  x = f32[2,1] parameter(0)
  k = f32[1,2] parameter(1)
  ROOT c = f32[1,2] convolution(x, k), dim_labels=bf_io->bf, batch_group_count=2
})";
  EXPECT_THAT(Eval1(batches, "param 0 device * : 3 5\nparam 1 device * : 2 7\n"), ElementsAre(6, 35));
}

TEST(EvalConvolution, DepthwiseWithPaddingEqualsPerChannelConvolution) {
  // Depthwise (feature_group_count = channels = 2), 1-D, pad 1_1: channel c
  // is convolved with its own kernel only.
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = f32[1,3,2] parameter(0)
  k = f32[3,1,2] parameter(1)
  ROOT c = f32[1,3,2] convolution(x, k), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f, feature_group_count=2
})";
  // x[s][c]: c0 = 1 2 3, c1 = 10 20 30; k[w][0][c]: c0 = 1 1 1, c1 = 0 1 0.
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 10 2 20 3 30\nparam 1 device * : 1 0 1 1 1 0\n"),
              ElementsAre(3, 10, 6, 20, 5, 30));
}

TEST(EvalConvolution, ErrorsNameTheInstruction) {
  auto r = RunText(Conv1D("f32[1,1,3]", "window={size=2}"), kConvInputs);
  testing_util::ExpectError(r.status(), {"%c", "window size 2"});
}

TEST(EvalSort, SingleAndMultiOperandStable) {
  const std::string hlo = "HloModule m\n" +
                          ScalarComputation("lt", {"f32", "f32", "s32", "s32"},
                                            "  ROOT r = pred[] compare(p0, p1), direction=LT") +
                          ScalarComputation("gt1", {"f32", "f32"}, "  ROOT r = pred[] compare(p0, p1), direction=GT") +
                          R"(
ENTRY e {
  keys = f32[5] parameter(0)
  vals = s32[5] iota(), iota_dimension=0
  s = (f32[5], s32[5]) sort(keys, vals), dimensions={0}, is_stable=true, to_apply=lt
  m = f32[3,2] parameter(1)
  d = f32[3,2] sort(m), dimensions={0}, to_apply=gt1
  sk = f32[5] get-tuple-element(s), index=0
  sv = s32[5] get-tuple-element(s), index=1
  ROOT t = (f32[5], s32[5], f32[3,2]) tuple(sk, sv, d)
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 2 1 2 1 0\nparam 1 device * : 1 6 3 4 2 5\n"),
              ElementsAreArray<double>({0, 1, 1, 2, 2,    // keys
                                        4, 1, 3, 0, 2,    // values: ties keep their order
                                        3, 6, 2, 5, 1, 4}));  // columns descending
}

TEST(EvalSort, TotalOrderPutsNaNsAtTheEnds) {
  const std::string hlo = R"(
HloModule m
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  x = f32[6] constant({nan, 1, -inf, 0, -0, -nan})
  ROOT s = f32[6] sort(x), dimensions={0}, to_apply=lt
})";
  auto v = Eval1(hlo);
  ASSERT_EQ(v.size(), 6u);
  EXPECT_TRUE(std::isnan(v[0]) && std::signbit(v[0]));
  EXPECT_EQ(v[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(v[2] == 0 && std::signbit(v[2]));
  EXPECT_TRUE(v[3] == 0 && !std::signbit(v[3]));
  EXPECT_EQ(v[4], 1);
  EXPECT_TRUE(std::isnan(v[5]) && !std::signbit(v[5]));
}

TEST(EvalSort, ComputedComparatorRunsNested) {
  // By absolute value: not a plain compare of two parameters. 2 and -2 tie
  // and keep their order.
  const std::string hlo = R"(
HloModule m
by_abs {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  aa = f32[] abs(a)
  ab = f32[] abs(b)
  ROOT r = pred[] compare(aa, ab), direction=LT
}
ENTRY e {
  x = f32[5] parameter(0)
  ROOT s = f32[5] sort(x), dimensions={0}, is_stable=true, to_apply=by_abs
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 3 2 -1 -2 0.5\n"), ElementsAre(0.5, -1, 2, -2, 3));
}

TEST(EvalSort, JaxCanonicalizingComparatorAndNestedFallback) {
  // JAX's comparator: NaNs made +NaN and -0 made +0, then a total-order LT:
  // -0 and 0 tie (and keep their order), as do the two NaNs. It is compiled
  // (ScalarProgram); the exponential comparator is not and runs nested.
  const std::string hlo = R"(
HloModule m
jax_lt {
  a = f32[] parameter(0)
  nea = pred[] compare(a, a), direction=NE
  nan = f32[] constant(nan)
  zero = f32[] constant(0)
  eqa = pred[] compare(a, zero), direction=EQ
  ca0 = f32[] select(eqa, zero, a)
  ca = f32[] select(nea, nan, ca0)
  b = f32[] parameter(1)
  neb = pred[] compare(b, b), direction=NE
  eqb = pred[] compare(b, zero), direction=EQ
  cb0 = f32[] select(eqb, zero, b)
  cb = f32[] select(neb, nan, cb0)
  ROOT lt = pred[] compare(ca, cb), direction=LT, type=TOTALORDER
}
by_exp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ea = f32[] exponential(a)
  eb = f32[] exponential(b)
  ROOT r = pred[] compare(ea, eb), direction=LT
}
ENTRY e {
  x = f32[6] constant({nan, -0, 1, 0, -nan, -1})
  s = f32[6] sort(x), dimensions={0}, is_stable=true, to_apply=jax_lt
  y = f32[3] constant({3, -1, 2})
  t = f32[3] sort(y), dimensions={0}, to_apply=by_exp
  ROOT r = (f32[6], f32[3]) tuple(s, t)
})";
  auto v = Eval1(hlo);
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(v[0], -1);
  EXPECT_TRUE(v[1] == 0 && std::signbit(v[1]));
  EXPECT_TRUE(v[2] == 0 && !std::signbit(v[2]));
  EXPECT_EQ(v[3], 1);
  EXPECT_TRUE(std::isnan(v[4]) && !std::signbit(v[4]));
  EXPECT_TRUE(std::isnan(v[5]) && std::signbit(v[5]));
  EXPECT_THAT(std::vector<double>(v.begin() + 6, v.end()), ElementsAre(-1, 2, 3));
}

TEST(EvalTopK, LargestAndSmallestWithTies) {
  const std::string hlo = R"(
HloModule m
gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT
}
ENTRY e {
  x = f32[2,4] parameter(0)
  big = (f32[2,2], s32[2,2]) topk(x), k=2, largest=true
  small = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false
  cc = (f32[2,2], s32[2,2]) custom-call(x), custom_call_target="TopK", called_computations={gt}
  ROOT t = ((f32[2,2], s32[2,2]), (f32[2,2], s32[2,2]), (f32[2,2], s32[2,2])) tuple(big, small, cc)
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 4 2 4 5 -1 7 0\n"),
              ElementsAreArray<double>({4, 4, 7, 5, 1, 3, 2, 0,      // largest: ties lower index first
                                        1, 2, -1, 0, 0, 2, 1, 3,     // smallest
                                        4, 4, 7, 5, 1, 3, 2, 0}));   // the TopK custom-call
}

TEST(EvalReduceWindow, PaddingStridesAndDilations) {
  const std::string hlo = std::string(R"(
HloModule m
)") + testing_util::kAdd + R"(
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[5] parameter(0)
  zero = f32[] constant(0)
  ten = f32[] constant(10)
  ninf = f32[] constant(-inf)
  mp = f32[4] reduce-window(x, ninf), window={size=2}, to_apply=max
  pd = f32[3] reduce-window(x, zero), window={size=3 stride=2 pad=1_1}, to_apply=add
  bd = f32[8] reduce-window(x, ten), window={size=2 lhs_dilate=2}, to_apply=add
  wd = f32[3] reduce-window(x, zero), window={size=2 rhs_dilate=2}, to_apply=add
  ROOT t = (f32[4], f32[3], f32[8], f32[3]) tuple(mp, pd, bd, wd)
})";
  // x = 1 3 2 5 4; base-dilated: 1 h 3 h 2 h 5 h 4 (holes are skipped).
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 3 2 5 4\n"),
              ElementsAreArray<double>({3, 3, 5, 5,                       // max pool
                                        4, 10, 9,                         // padded sum
                                        11, 13, 13, 12, 12, 15, 15, 14,   // base dilation, init 10
                                        3, 8, 6}));                       // window dilation
}

TEST(EvalReduceWindow, TwoDimensionalAndVariadicArgmax) {
  const std::string hlo = std::string(R"(
HloModule m
)") + testing_util::kAdd + testing_util::kArgmax + R"(
ENTRY e {
  m = f32[2,3] parameter(0)
  zero = f32[] constant(0)
  s = f32[1,2] reduce-window(m, zero), window={size=2x2}, to_apply=add
  x = f32[4] parameter(1)
  idx = s32[4] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  izero = s32[] constant(-1)
  am = (f32[2], s32[2]) reduce-window(x, idx, ninf, izero), window={size=2 stride=2}, to_apply=argmax
  v = f32[2] get-tuple-element(am), index=0
  i = s32[2] get-tuple-element(am), index=1
  ROOT t = (f32[1,2], f32[2], s32[2]) tuple(s, v, i)
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3 4 5 6\nparam 1 device * : 1 5 7 2\n"),
              ElementsAre(12, 16, 5, 7, 1, 2));
}

std::string SelectAndScatter(const std::string& operand, const std::string& source,
                             const std::string& window) {
  return std::string(R"(
HloModule m
)") + testing_util::kAdd + R"(
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE
}
ENTRY e {
  x = )" + operand + R"( parameter(0)
  s = )" + source + R"( parameter(1)
  zero = f32[] constant(0)
  ROOT r = )" + operand + R"( select-and-scatter(x, s, zero), window=)" + window + R"(, select=ge, scatter=add
})";
}

TEST(EvalSelectAndScatter, MaxPoolGradient) {
  // Disjoint windows: each source value goes to its window's maximum.
  EXPECT_THAT(Eval1(SelectAndScatter("f32[4]", "f32[2]", "{size=2 stride=2}"),
                    "param 0 device * : 1 5 3 2\nparam 1 device * : 10 20\n"),
              ElementsAre(0, 10, 20, 0));
  // Overlapping windows accumulate: windows {1,5} {5,3} {3,2} select 5, 5, 3.
  EXPECT_THAT(Eval1(SelectAndScatter("f32[4]", "f32[3]", "{size=2}"),
                    "param 0 device * : 1 5 3 2\nparam 1 device * : 1 2 3\n"),
              ElementsAre(0, 3, 3, 0));
  // Ties: GE keeps the first; padding is never selected.
  EXPECT_THAT(Eval1(SelectAndScatter("f32[2]", "f32[1]", "{size=2}"),
                    "param 0 device * : 2 2\nparam 1 device * : 7\n"),
              ElementsAre(7, 0));
  EXPECT_THAT(Eval1(SelectAndScatter("f32[3]", "f32[2]", "{size=2 stride=2 pad=1_0}"),
                    "param 0 device * : -1 5 3\nparam 1 device * : 7 9\n"),
              ElementsAre(7, 9, 0));
}

TEST(EvalGatherScatter, BatchingDimensions) {
  // out[b] = operand[b, idx[b]] (idx 7 clamps to 2); the scatter adds
  // updates[b] at operand[b, idx[b]].
  const std::string hlo = absl::StrCat(R"(
HloModule m
)", testing_util::kAdd, R"(
ENTRY e {
  a = f32[2,3] parameter(0)
  i = s32[2,1] parameter(1)
  g = f32[2] gather(a, i), offset_dims={}, collapsed_slice_dims={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, start_index_map={1}, index_vector_dim=1, slice_sizes={1,1}
  u = f32[2] parameter(2)
  s = f32[2,3] scatter(a, i, u), update_window_dims={}, inserted_window_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add
  ROOT t = (f32[2], f32[2,3]) tuple(g, s)
})");
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3 4 5 6\nparam 1 device * : 7 0\nparam 2 device * : 10 20\n"),
              ElementsAreArray<double>({3, 4,                  // gather (7 clamped to 2)
                                        1, 2, 3, 24, 5, 6}));  // scatter: index 7 does not fit, skipped
}

TEST(EvalGatherScatter, SeveralOperandsScatterTogether) {
  const std::string hlo = "HloModule m\n" +
                          ScalarComputation("add2", {"f32", "s32", "f32", "s32"}, R"(  x = f32[] add(p0, p2)
  y = s32[] add(p1, p3)
  ROOT t = (f32[], s32[]) tuple(x, y))") + R"(
ENTRY e {
  a = f32[3] parameter(0)
  b = s32[3] parameter(1)
  i = s32[2,1] parameter(2)
  u = f32[2] parameter(3)
  v = s32[2] parameter(4)
  ROOT s = (f32[3], s32[3]) scatter(a, b, i, u, v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add2
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3\nparam 1 device * : 100 200 300\nparam 2 device * : 0 2\n"
                         "param 3 device * : 10 20\nparam 4 device * : 1 2\n"),
              ElementsAre(11, 2, 23, 101, 200, 302));
}

TEST(EvalElementTypes, SubByteIntegersWrapAndSaturate) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  a = s4[3] constant({7, -8, 3})
  b = s4[3] constant({1, -1, 4})
  s = s4[3] add(a, b)
  c = u4[2] constant({15, 9})
  one = u4[2] constant({1, 8})
  u = u4[2] add(c, one)
  f = f32[3] constant({100, -100, 2.9})
  cs = s4[3] convert(f)
  d = u2[2] constant({3, 2})
  e = u2[2] add(d, d)
  t2 = s2[2] constant({1, -2})
  n2 = s2[2] negate(t2)
  ROOT t = (s4[3], u4[2], s4[3], u2[2], s2[2]) tuple(s, u, cs, e, n2)
})";
  EXPECT_THAT(Eval1(hlo), ElementsAreArray<double>({-8, 7, 7,    // s4 wraps
                                                    0, 1,        // u4 wraps
                                                    7, -8, 2,    // convert saturates, truncates
                                                    2, 0,        // u2
                                                    -1, -2}));   // s2: -(-2) wraps to -2
}

TEST(EvalElementTypes, Fp8RoundsToNearestEvenWithEachFormatsSpecials) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  f = f32[7] constant({1.0625, 1.1875, 448, 464, 500, -0.001, 0.0009765625})
  a = f8e4m3fn[7] convert(f)
  g = f32[4] constant({1.125, 1.375, 57344, 61440})
  b = f8e5m2[4] convert(g)
  z = f32[2] constant({-0, 1e-9})
  c = f8e4m3fnuz[2] convert(z)
  h = f8e4m3fn[1] constant({448})
  s = f8e4m3fn[1] add(h, h)
  ROOT t = (f8e4m3fn[7], f8e5m2[4], f8e4m3fnuz[2], f8e4m3fn[1]) tuple(a, b, c, s)
})";
  auto v = Eval1(hlo);
  ASSERT_EQ(v.size(), 14u);
  // e4m3fn: ties to even (1, 1.25), 464 ties down to the largest value 448,
  // 500 has no encoding and no infinity: NaN; -0.001 is the subnormal
  // -2^-9; 2^-10 ties to zero.
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 1.25);
  EXPECT_EQ(v[2], 448);
  EXPECT_EQ(v[3], 448);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_EQ(v[5], -0.001953125);
  EXPECT_EQ(v[6], 0);
  // e5m2 (IEEE-like): ties to even, overflow to infinity.
  EXPECT_EQ(v[7], 1);
  EXPECT_EQ(v[8], 1.5);
  EXPECT_EQ(v[9], 57344);
  EXPECT_EQ(v[10], std::numeric_limits<double>::infinity());
  // fnuz: no negative zero.
  EXPECT_TRUE(v[11] == 0 && !std::signbit(v[11]));
  EXPECT_TRUE(v[12] == 0 && !std::signbit(v[12]));
  // 448 + 448 overflows e4m3fn: NaN.
  EXPECT_TRUE(std::isnan(v[13]));
}

TEST(EvalBatchNorm, InferenceAsXlasExpander) {
  // feature 0: (x - 1) / sqrt(4) * 1 + 0; feature 1: (x - 2) / sqrt(1) * 2 + 1.
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = f32[2,2] parameter(0)
  scale = f32[2] constant({1, 2})
  offset = f32[2] constant({0, 1})
  mean = f32[2] constant({1, 2})
  var = f32[2] constant({4, 1})
  ROOT b = f32[2,2] batch-norm-inference(x, scale, offset, mean, var), epsilon=0, feature_index=1
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 3 4 5 0\n"), ElementsAre(1, 5, 2, -3));
}

TEST(EvalMap, AppliesTheComputationPerElement) {
  const std::string hlo = R"(
HloModule m
fma1 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  one = f32[] constant(1)
  ROOT r = f32[] add(m, one)
}
ENTRY e {
  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT r = f32[3] map(x, y), dimensions={0}, to_apply=fma1
})";
  EXPECT_THAT(Eval1(hlo, "param 0 device * : 1 2 3\nparam 1 device * : 4 5 6\n"), ElementsAre(5, 11, 19));
}

TEST(EvalMap, NestedFallbackAndComputedSelect) {
  // exponential is not a ScalarProgram step: map runs nested. The select of
  // the select-and-scatter (a > b or a is the first) compiles.
  const std::string hlo = std::string(R"(
HloModule m
)") + testing_util::kAdd + R"(
exp_plus {
  a = f32[] parameter(0)
  e = f32[] exponential(a)
  ROOT r = f32[] add(e, a)
}
ge_or_nan {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  g = pred[] compare(a, b), direction=GE
  n = pred[] compare(b, b), direction=NE
  nn = pred[] not(n)
  ROOT r = pred[] and(g, nn)
}
ENTRY e {
  x = f32[2] parameter(0)
  m = f32[2] map(x), dimensions={0}, to_apply=exp_plus
  s = f32[1] parameter(1)
  zero = f32[] constant(0)
  ss = f32[2] select-and-scatter(x, s, zero), window={size=2}, select=ge_or_nan, scatter=add
  ROOT t = (f32[2], f32[2]) tuple(m, ss)
})";
  // map: e^0 + 0, e^1 + 1. x = 0 1: select(0, 1) = (0 >= 1) is false, so the
  // candidate x[1] is selected and gets the source value 5.
  auto v = Eval1(hlo, "param 0 device * : 0 1\nparam 1 device * : 5\n");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_FLOAT_EQ(v[0], 1);
  EXPECT_FLOAT_EQ(v[1], static_cast<float>(std::exp(1.0) + 1));
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 5);
}

TEST(EvalReducePrecision, RoundsToNearestEvenAndFlushes) {
  const std::string hlo = R"(
HloModule m
ENTRY e {
  x = f32[7] parameter(0)
  ROOT r = f32[7] reduce-precision(x), exponent_bits=5, mantissa_bits=7
})";
  // 1 + 2^-10 rounds down; 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and
  // 1 + 2^-6 and goes to the even one; 1e5 overflows 5 exponent bits; 1e-10
  // underflows to a signed zero; 65504 rounds up to 65536, which overflows.
  auto v = Eval1(hlo, "param 0 device * : 1.0009765625 1.01171875 1e5 1e-10 -1e-10 -3 65504\n");
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[0], 1.0);
  EXPECT_EQ(v[1], 1.015625);
  EXPECT_EQ(v[2], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(v[3] == 0 && !std::signbit(v[3]));
  EXPECT_TRUE(v[4] == 0 && std::signbit(v[4]));
  EXPECT_EQ(v[5], -3);
  EXPECT_EQ(v[6], std::numeric_limits<double>::infinity());
}

}  // namespace
}  // namespace eval
}  // namespace hilo
