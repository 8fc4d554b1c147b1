// Element types of the reference interpreter beyond the real ones: complex
// (c64, c128) against hand-computed values, and the bit encodings and
// rounding of the fp8 types, f4e2m1fn and f8e8m0fnu against their
// definitions (ml_dtypes, OCP FP8 and MX specifications), not against hilo's
// own output.
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"
#include "hilo/eval/value.h"

namespace hilo {
namespace eval {
namespace {

using namespace testing_util;  // NOLINT: the eval tests' shared set-up

using C = std::complex<double>;

// Every element of every array leaf of device `device`'s output as a
// complex number (a real leaf's imaginary parts are 0).
std::vector<C> FlatComplex(const std::string& hlo, int device = 0, int64_t devices = 1) {
  auto r = RunText(hlo, "", devices);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  std::vector<const Array*> leaves;
  r->outputs[device].CollectLeaves(&leaves);
  std::vector<C> out;
  for (const Array* a : leaves) {
    for (int64_t k = 0; k < a->size(); ++k) out.emplace_back(a->GetDouble(k), a->is_complex() ? a->im()[k] : 0.0);
  }
  return out;
}

// A module whose entry makes a = (1, 2), b = (3, -1) (c64[]) and returns `root`.
std::string WithAB(const std::string& body) {
  return absl::StrCat(R"(
HloModule m
ENTRY e {
  a = c64[] constant((1, 2))
  re = f32[] constant(3)
  im = f32[] constant(-1)
  b = c64[] complex(re, im)
)", body, "\n}");
}

const std::string kComplexAdd = ScalarComputation("cadd", {"c64", "c64"}, "  ROOT s = c64[] add(p0, p1)");

TEST(EvalComplex, Arithmetic) {
  // (1+2i)+(3-i) = 4+i; (1+2i)(3-i) = 5+5i; (1+2i)/(3-i) = (1+7i)/10.
  EXPECT_THAT(FlatComplex(WithAB(R"(
  add = c64[] add(a, b)
  sub = c64[] subtract(a, b)
  mul = c64[] multiply(a, b)
  div = c64[] divide(a, b)
  neg = c64[] negate(a)
  ROOT t = (c64[], c64[], c64[], c64[], c64[]) tuple(add, sub, mul, div, neg))")),
              ::testing::ElementsAre(C(4, 1), C(-2, 3), C(5, 5), C(static_cast<float>(0.1), static_cast<float>(0.7)),
                                     C(-1, -2)));
}

TEST(EvalComplex, RealImagAbsAndConvert) {
  // abs(3+4i) = 5 in the component type; f32 -> c64 has imaginary part 0;
  // c64 -> f32 keeps the real part (decision); c64 -> c128 keeps both.
  EXPECT_THAT(FlatComplex(R"(
HloModule m
ENTRY e {
  z = c64[] constant((3, 4))
  r = f32[] real(z)
  i = f32[] imag(z)
  a = f32[] abs(z)
  x = f32[] constant(1.5)
  up = c64[] convert(x)
  down = f32[] convert(z)
  wide = c128[] convert(z)
  ri = f32[] imag(x)
  ROOT t = (f32[], f32[], f32[], c64[], f32[], c128[], f32[]) tuple(r, i, a, up, down, wide, ri)
})"),
              ::testing::ElementsAre(C(3), C(4), C(5), C(1.5, 0), C(3), C(3, 4), C(0)));
}

TEST(EvalComplex, TranscendentalsAsStdComplex) {
  auto out = FlatComplex(R"(
HloModule m
ENTRY e {
  z = c128[] constant((0.5, -0.25))
  e = c128[] exponential(z)
  l = c128[] log(z)
  s = c128[] sqrt(z)
  r = c128[] rsqrt(z)
  t = c128[] tanh(z)
  ROOT o = (c128[], c128[], c128[], c128[], c128[]) tuple(e, l, s, r, t)
})");
  const C z(0.5, -0.25);
  const std::vector<C> want = {std::exp(z), std::log(z), std::sqrt(z), 1.0 / std::sqrt(z), std::tanh(z)};
  ASSERT_EQ(out.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(std::abs(out[k] - want[k]), 0, 1e-15) << k;
  // e^(i pi) = -1 (the rotary-embedding pattern: exp of an imaginary angle).
  auto rot = FlatComplex(R"(
HloModule m
ENTRY e {
  z = c128[] constant((0, 3.141592653589793))
  ROOT e = c128[] exponential(z)
})");
  ASSERT_EQ(rot.size(), 1u);
  EXPECT_NEAR(std::abs(rot[0] - C(-1, 0)), 0, 1e-15);
}

TEST(EvalComplex, CompareOnlyEqAndNe) {
  EXPECT_EQ(Eval1(WithAB(R"(
  eq = pred[] compare(a, a), direction=EQ
  ne = pred[] compare(a, b), direction=NE
  ne2 = pred[] compare(a, a), direction=NE
  ROOT t = (pred[], pred[], pred[]) tuple(eq, ne, ne2))")),
            (std::vector<double>{1, 1, 0}));
  auto r = RunText(WithAB("  ROOT lt = pred[] compare(a, b), direction=LT"));
  testing_util::ExpectError(r.status(), {"only EQ or NE"});
}

TEST(EvalComplex, DotReduceAndDataMovement) {
  // v = [(1,2), (3,-1)], w = [(3,-1), (0,1)]: v.w = (5+5i) + (3i+1) = 6+8i
  // (no conjugation); sum(v) = 4+i.
  const std::string hlo = "HloModule m\n" + kComplexAdd + R"(
ENTRY e {
  v = c64[2] constant({(1, 2), (3, -1)})
  w = c64[2] constant({(3, -1), (0, 1)})
  d = c64[] dot(v, w), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  zero = c64[] constant((0, 0))
  s = c64[] reduce(v, zero), dimensions={0}, to_apply=cadd
  bc = c64[2,2] broadcast(v), dimensions={1}
  tr = c64[2,2] transpose(bc), dimensions={1,0}
  sl = c64[1] slice(v), slice={[1:2]}
  p = pred[2] constant({true, false})
  se = c64[2] select(p, w, v)
  pd = c64[3] pad(v, zero), padding=1_0
  cc = c64[4] concatenate(v, w), dimensions={0}
  i = s32[1,1] constant({{1}})
  g = c64[1,2] gather(bc, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}
  ROOT t = (c64[], c64[], c64[2,2], c64[1], c64[2], c64[3], c64[4], c64[1,2]) tuple(d, s, tr, sl, se, pd, cc, g)
})";
  const C v0(1, 2), v1(3, -1), w1(0, 1);
  EXPECT_THAT(FlatComplex(hlo), ::testing::ElementsAreArray(std::vector<C>{
                                    C(6, 8), C(4, 1),              // dot, reduce
                                    v0, v0, v1, v1,                // transpose of the broadcast
                                    v1,                            // slice
                                    C(3, -1), v1,                  // select
                                    C(0, 0), v0, v1,               // pad
                                    v0, v1, C(3, -1), w1,          // concatenate
                                    v0, v1}));                     // gather
}

TEST(EvalComplex, AllReduceSumsBothParts) {
  // Device d contributes (d, d + 1): the sum over 2 devices is (1, 3).
  const std::string hlo = "HloModule m, replica_count=2\n" + kComplexAdd + R"(
ENTRY e {
  id = u32[] replica-id()
  re = f32[] convert(id)
  one = f32[] constant(1)
  im = f32[] add(re, one)
  z = c64[] complex(re, im)
  ROOT r = c64[] all-reduce(z), replica_groups={}, to_apply=cadd
})";
  for (int d = 0; d < 2; ++d) EXPECT_THAT(FlatComplex(hlo, d, 2), ::testing::ElementsAre(C(1, 3))) << d;
}

TEST(EvalComplex, RandomInputsFillBothParts) {
  const std::string hlo = "HloModule m\nENTRY e {\n  ROOT p = c64[64] parameter(0)\n}\n";
  auto a = FlatComplex(hlo);
  ASSERT_EQ(a.size(), 64u);
  int nonzero_imag = 0;
  for (const C& c : a) {
    EXPECT_LE(std::abs(c.real()), 1.0);
    EXPECT_LE(std::abs(c.imag()), 1.0);
    nonzero_imag += c.imag() != 0;
    EXPECT_EQ(static_cast<double>(static_cast<float>(c.imag())), c.imag());  // a c64 value
  }
  EXPECT_GT(nonzero_imag, 32);
  EXPECT_EQ(a, FlatComplex(hlo));  // deterministic
}

TEST(EvalComplex, UnsupportedOpsAreNamedErrors) {
  auto r = RunText(WithAB("  ROOT m = c64[] maximum(a, b)"));
  testing_util::ExpectError(r.status(), {"maximum on complex values"});
  auto s = RunText(R"(
HloModule m
ENTRY e {
  z = c64[2] constant({(1, 2), (3, 4)})
  ROOT i = c64[2] reverse(z), dimensions={0}
})");
  EXPECT_TRUE(s.ok()) << s.status();  // data movement works
  auto t = RunText(R"(
HloModule m
ENTRY e {
  ROOT i = c64[2] iota(), iota_dimension=0
})");
  testing_util::ExpectError(t.status(), {"iota on complex values"});
}

TEST(EvalComplex, EquivalenceComparesTheImaginaryPart) {
  auto module = [](const char* imag) {
    return absl::StrCat("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n",
                        "  ROOT z = c64[4] complex(a, ", imag, ")\n}\n");
  };
  EXPECT_EQ(CheckTexts(module("b"), module("a")).verdict, Verdict::kNotEquivalent);
  EXPECT_EQ(CheckTexts(module("b"), module("b")).verdict, Verdict::kEquivalent);
}

// Decoding every code from the format's definition: sign, exponent field
// (bias), mantissa field, the format's special codes.
TEST(EvalSmallFloats, DecodeFromDefinitions) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  struct Case {
    PrimitiveType type;
    uint64_t bits;
    double value;
  };
  const std::vector<Case> cases = {
      {PrimitiveType::F8E4M3FN, 0x38, 1.0},     {PrimitiveType::F8E4M3FN, 0x7e, 448},
      {PrimitiveType::F8E4M3FN, 0x7f, nan},     {PrimitiveType::F8E4M3FN, 0x01, std::ldexp(1, -9)},
      {PrimitiveType::F8E4M3FN, 0xfe, -448},    {PrimitiveType::F8E4M3FN, 0x80, -0.0},
      {PrimitiveType::F8E5M2, 0x3c, 1.0},       {PrimitiveType::F8E5M2, 0x7b, 57344},
      {PrimitiveType::F8E5M2, 0x7c, inf},       {PrimitiveType::F8E5M2, 0xfc, -inf},
      {PrimitiveType::F8E5M2, 0x7d, nan},       {PrimitiveType::F8E5M2, 0x01, std::ldexp(1, -16)},
      {PrimitiveType::F8E4M3, 0x77, 240},       {PrimitiveType::F8E4M3, 0x78, inf},
      {PrimitiveType::F8E3M4, 0x6f, 15.5},      {PrimitiveType::F8E3M4, 0x70, inf},
      {PrimitiveType::F8E3M4, 0x30, 1.0},       {PrimitiveType::F8E4M3FNUZ, 0x80, nan},
      {PrimitiveType::F8E4M3FNUZ, 0x7f, 240},   {PrimitiveType::F8E4M3FNUZ, 0x40, 1.0},
      {PrimitiveType::F8E5M2FNUZ, 0x7f, 57344}, {PrimitiveType::F8E5M2FNUZ, 0x80, nan},
      {PrimitiveType::F8E4M3B11FNUZ, 0x7f, 30}, {PrimitiveType::F8E4M3B11FNUZ, 0x58, 1.0},
      {PrimitiveType::F4E2M1FN, 0x0, 0.0},      {PrimitiveType::F4E2M1FN, 0x1, 0.5},
      {PrimitiveType::F4E2M1FN, 0x2, 1.0},      {PrimitiveType::F4E2M1FN, 0x3, 1.5},
      {PrimitiveType::F4E2M1FN, 0x4, 2.0},      {PrimitiveType::F4E2M1FN, 0x5, 3.0},
      {PrimitiveType::F4E2M1FN, 0x6, 4.0},      {PrimitiveType::F4E2M1FN, 0x7, 6.0},
      {PrimitiveType::F4E2M1FN, 0x8, -0.0},     {PrimitiveType::F4E2M1FN, 0xf, -6.0},
      {PrimitiveType::F8E8M0FNU, 0x7f, 1.0},    {PrimitiveType::F8E8M0FNU, 0x00, std::ldexp(1, -127)},
      {PrimitiveType::F8E8M0FNU, 0xfe, std::ldexp(1, 127)}, {PrimitiveType::F8E8M0FNU, 0xff, nan},
      {PrimitiveType::F8E8M0FNU, 0x80, 2.0},
  };
  for (const Case& c : cases) {
    const std::string what = absl::StrCat(PrimitiveTypeName(c.type), " 0x", absl::Hex(c.bits));
    const double got = SmallFloatFromBits(c.type, c.bits);
    if (std::isnan(c.value)) {
      EXPECT_TRUE(std::isnan(got)) << what;
    } else {
      EXPECT_EQ(got, c.value) << what;
      EXPECT_EQ(std::signbit(got), std::signbit(c.value)) << what;
      EXPECT_EQ(SmallFloatBits(c.type, c.value), c.bits) << what;  // and back
    }
  }
}

TEST(EvalSmallFloats, EveryCodeRoundTrips) {
  for (PrimitiveType t : {PrimitiveType::F8E5M2, PrimitiveType::F8E4M3FN, PrimitiveType::F8E4M3,
                          PrimitiveType::F8E3M4, PrimitiveType::F8E4M3FNUZ, PrimitiveType::F8E5M2FNUZ,
                          PrimitiveType::F8E4M3B11FNUZ, PrimitiveType::F4E2M1FN, PrimitiveType::F8E8M0FNU}) {
    const uint64_t codes = uint64_t{1} << BitWidth(t);
    for (uint64_t bits = 0; bits < codes; ++bits) {
      const double v = SmallFloatFromBits(t, bits);
      if (std::isnan(v)) continue;
      EXPECT_EQ(RoundToFloatType(t, v), v) << PrimitiveTypeName(t) << " " << bits;  // representable
      EXPECT_EQ(SmallFloatBits(t, v), bits) << PrimitiveTypeName(t) << " " << bits;
    }
  }
}

TEST(EvalSmallFloats, F4E2M1FNRounding) {
  // Round to nearest even among 0 0.5 1 1.5 2 3 4 6; no infinity or NaN:
  // overflow and infinities go to +-6 (ml_dtypes), NaN to -0.
  const PrimitiveType t = PrimitiveType::F4E2M1FN;
  EXPECT_EQ(RoundToFloatType(t, 5.0), 4.0);    // tie: even mantissa
  EXPECT_EQ(RoundToFloatType(t, 2.5), 2.0);
  EXPECT_EQ(RoundToFloatType(t, 0.75), 1.0);
  EXPECT_EQ(RoundToFloatType(t, 0.25), 0.0);
  EXPECT_EQ(RoundToFloatType(t, 5.1), 6.0);
  EXPECT_EQ(RoundToFloatType(t, 7.0), 6.0);
  EXPECT_EQ(RoundToFloatType(t, 1e9), 6.0);
  EXPECT_EQ(RoundToFloatType(t, -std::numeric_limits<double>::infinity()), -6.0);
  const double n = RoundToFloatType(t, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(n, 0.0);
  EXPECT_TRUE(std::signbit(n));
}

TEST(EvalSmallFloats, F8E8M0FNURounding) {
  // Powers of two 2^-127..2^127; ties to the even biased exponent; zero,
  // negatives and overflow are NaN.
  const PrimitiveType t = PrimitiveType::F8E8M0FNU;
  EXPECT_EQ(RoundToFloatType(t, 1.0), 1.0);
  EXPECT_EQ(RoundToFloatType(t, 1.4), 1.0);
  EXPECT_EQ(RoundToFloatType(t, 1.5), 2.0);   // 2^0 (biased 127, odd) -> 2^1 (128)
  EXPECT_EQ(RoundToFloatType(t, 3.0), 2.0);   // 2^1 (biased 128, even) stays
  EXPECT_EQ(RoundToFloatType(t, 3.5), 4.0);
  EXPECT_EQ(RoundToFloatType(t, 0.75), 0.5);  // biased 126, even
  EXPECT_TRUE(std::isnan(RoundToFloatType(t, 0.0)));
  EXPECT_TRUE(std::isnan(RoundToFloatType(t, -1.0)));
  EXPECT_TRUE(std::isnan(RoundToFloatType(t, std::ldexp(1.75, 127))));
}

TEST(EvalSmallFloats, BitcastConvertReadsTheEncodings) {
  EXPECT_EQ(Eval1(R"(
HloModule m
ENTRY e {
  b = u8[4] constant({126, 56, 128, 1})
  ROOT f = f8e4m3fn[4] bitcast-convert(b)
})"),
            (std::vector<double>{448, 1, -0.0, std::ldexp(1, -9)}));
  EXPECT_EQ(Eval1(R"(
HloModule m
ENTRY e {
  b = s8[2] constant({127, -128})
  ROOT f = f8e8m0fnu[2] bitcast-convert(b)
})"),
            (std::vector<double>{1, 2}));
  EXPECT_EQ(Eval1(R"(
HloModule m
ENTRY e {
  f = f4e2m1fn[3] constant({6, -1.5, 0.5})
  ROOT b = u4[3] bitcast-convert(f)
})"),
            (std::vector<double>{7, 11, 1}));
  // Wide to narrow: an f16 1.0 (0x3c00) is two f8e5m2 codes, lowest first: 0x00, 0x3c = 1.0.
  EXPECT_EQ(Eval1(R"(
HloModule m
ENTRY e {
  h = f16[] constant(1)
  ROOT b = f8e5m2[2] bitcast-convert(h)
})"),
            (std::vector<double>{0, 1}));
}

}  // namespace
}  // namespace eval
}  // namespace hilo
